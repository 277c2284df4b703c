"""The speed table of lent GPUs, written from the files their calls returned.

Reads `benchmarks/results/gpu/`:

- `speed-<gpu>-r<R>.json`: `speed.py --engines jax --replicas R` on that GPU;
- `<gpu>-<date>-log.txt`: a call's log; its first line names the device
  (`nvidia-smi`), a line `jax X [...] keras Y` the versions it ran, and a
  line `stable-nalu cuda: N iterations in S s = X it/s` is the paper's own
  PyTorch code (one seed) timed in the same call;

and the rows of `benchmarks/results/paper/results.csv` trained on a GPU: a
chunk's rate is its steps over its recorded wall time (compilation and the
evaluation every 1,000 steps included) times its replicas, every replica
counted to the chunk's last step, those that diverged or stopped included.
A chunk's row names the log of a call on its GPU whose results table shows
it; a chunk whose row no committed log shows came from a call whose log is
not committed.

Each row's µs a step is its replicas over its seed-steps/s; "× the paper's
code" divides by the paper's code's iterations per second on that device,
printed to two decimals in its own row.

Usage:

    python benchmarks/gpu_speed.py          # writes benchmarks/results/gpu/summary.md
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
GPU = HERE / "results" / "gpu"
PAPER = HERE / "results" / "paper" / "results.csv"
REFERENCE = re.compile(
    r"stable-nalu cuda: (?P<iterations>\d+) iterations in (?P<seconds>[\d.]+) s"
)
VERSIONS = re.compile(r"^jax (?P<jax>\S+) \[.*\] keras (?P<keras>\S+)")
STARTED_ON = {"cb2baa28bf1f0": "NVIDIA H100 80GB HBM3"}
"""Chunks that continued on a GPU from a backup written on another: Table 2's
NAU + chunk was backed up on the H100 (its backup committed with the H100's
rows in benchmarks/results/paper/results.csv.backup/, and removed when the
H200 finished the chunk), so its wall time spans both GPUs."""


def logs(folder: Path) -> dict[str, dict]:
    """Each call log's device, versions, the paper's code's rate and text."""
    found = {}
    for log in sorted(folder.glob("*-log.txt")):
        text = log.read_text(encoding="utf-8")
        lines = text.splitlines()
        device = lines[0].split(",")[0].strip() if lines else ""
        entry = {"device": device, "text": text, "name": log.name}
        for line in lines:
            if (match := REFERENCE.search(line)) and "reference" not in entry:
                entry["reference"] = int(match["iterations"]) / float(match["seconds"])
            if (match := VERSIONS.match(line)) and "versions" not in entry:
                entry["versions"] = f"JAX {match['jax']}, Keras {match['keras']}"
        found[log.name] = entry
    return found


def reference_rates(folder: Path) -> dict[str, float]:
    """The paper's code, iterations per second, by device (from the call logs)."""
    return {
        entry["device"]: entry["reference"]
        for entry in logs(folder).values()
        if "reference" in entry
    }


def speed_rows(folder: Path) -> list[dict]:
    """One row per `speed-*.json` measurement."""
    rows = []
    for path in sorted(folder.glob("speed-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        versions = record.get("machine", {}).get("versions", {})
        for row in record["rows"]:
            rows.append(
                {
                    "device": row["device"],
                    "what": f"`speed.py`, {row['engine']} engine",
                    "replicas": int(row["replicas"]),
                    "rate": float(row["seed_iterations_per_second"]),
                    "source": f"{path.name} ({record['date'][:10]})",
                    "versions": _versions(versions),
                }
            )
    return rows


def _versions(versions: dict) -> str | None:
    if "jax" not in versions:
        return None
    return f"JAX {versions['jax']}, Keras {versions.get('keras', '?')}"


def chunk_rows(results: pd.DataFrame, folder: Path = GPU) -> list[dict]:
    """One row per chunk of the paper's plan trained on a GPU."""
    on_gpu = results[results["device"].fillna("").str.startswith("NVIDIA")]
    rows = []
    for (config_id, device), chunk in on_gpu.groupby(["config_id", "device"]):
        first = chunk.iloc[0]
        steps = int(chunk["iterations"].max())
        wall = float(chunk["wall_time"].max())
        replicas = int(first["replicas"])
        where = f"{wall:.0f} s wall"
        if config_id in STARTED_ON:
            where += f", started on the {STARTED_ON[config_id]}"
        source = f"results/paper/results.csv, config {config_id}"
        log = _log_of(first, wall, folder)
        source += f", shown in {log}" if log else ", in no committed log"
        rows.append(
            {
                "device": device,
                "what": (
                    f"a Table 2 chunk ({first['model']} {first['operation']}, "
                    f"{steps:,} steps, {where})"
                ),
                "replicas": replicas,
                "rate": steps / wall * replicas,
                "source": source,
                "two_gpus": config_id in STARTED_ON,
            }
        )
    return rows


def _log_of(row, wall: float, folder: Path) -> str | None:
    """The log of a call on the chunk's GPU whose results table shows the
    chunk's row, if any."""
    cells = f"| {row['operation']} | {row['model']} | 5·10⁶ |"
    ending = f"jax/{row['device']}, {wall:.0f} s |"
    for entry in logs(folder).values():
        if entry["device"] != row["device"]:
            continue
        for line in entry["text"].splitlines():
            if line.startswith(cells) and ending in line:
                return entry["name"]
    return None


def summary_text(folder: Path = GPU, results_path: Path = PAPER) -> str:
    """The Markdown table, by device; × against the same device's paper code."""
    calls = logs(folder).values()
    references = reference_rates(folder)
    versions = {e["device"]: e["versions"] for e in calls if "versions" in e}
    rows = speed_rows(folder) + chunk_rows(pd.read_csv(results_path), folder)
    for entry in calls:
        if "reference" in entry:
            rows.append(
                {
                    "device": entry["device"],
                    "what": "the paper's PyTorch code (stable-nalu), start-up included",
                    "replicas": 1,
                    "rate": entry["reference"],
                    "source": entry["name"],
                }
            )
    rows.sort(key=lambda row: (row["device"], row["what"], row["replicas"]))
    lines = [
        "| device | JAX, Keras | what | replicas | seed-steps/s | µs a step "
        "| × the paper's code | file |",
        "|---|---|---|--:|--:|--:|--:|---|",
    ]
    for row in rows:
        reference = references.get(row["device"])
        if row.get("two_gpus"):
            ratio = "two GPUs"
        elif reference:
            ratio = f"{row['rate'] / reference:,.0f}"
        else:
            ratio = "not measured"
        rate = f"{row['rate']:,.0f}" if row["rate"] >= 1000 else f"{row['rate']:.2f}"
        version = row.get("versions") or versions.get(row["device"], "not recorded")
        if "stable-nalu" in row["what"]:
            version = "PyTorch"
        lines.append(
            f"| {row['device']} | {version} | {row['what']} | {row['replicas']:,} | "
            f"{rate} | {row['replicas'] / row['rate'] * 1e6:,.0f} | {ratio} | "
            f"{row['source']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=GPU)
    parser.add_argument("--results", type=Path, default=PAPER)
    parser.add_argument("--out", type=Path, default=GPU / "summary.md")
    args = parser.parse_args(argv)
    text = summary_text(args.folder, args.results)
    args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
