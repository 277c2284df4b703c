"""The speed table of lent GPUs, written from the files their calls returned.

Reads `benchmarks/results/gpu/`:

- `speed-<gpu>-r<R>.json`: `speed.py --engines jax --replicas R` on that GPU;
- `<gpu>-<date>-log.txt`: a call's log; its first line names the device
  (`nvidia-smi`) and a line `stable-nalu cuda: N iterations in S s = X it/s`
  is the paper's own PyTorch code (one seed) timed in the same call;

and the rows of `benchmarks/results/paper/results.csv` trained on a GPU: a
chunk's rate is its steps over its recorded wall time (compilation and the
evaluation every 1,000 steps included) times its replicas.

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


def reference_rates(folder: Path) -> dict[str, float]:
    """The paper's code, iterations per second, by device (from the call logs)."""
    rates = {}
    for log in sorted(folder.glob("*-log.txt")):
        lines = log.read_text(encoding="utf-8").splitlines()
        device = lines[0].split(",")[0].strip() if lines else ""
        for line in lines:
            found = REFERENCE.search(line)
            if found:
                rates[device] = int(found["iterations"]) / float(found["seconds"])
    return rates


def speed_rows(folder: Path) -> list[dict]:
    """One row per `speed-*.json` measurement."""
    rows = []
    for path in sorted(folder.glob("speed-*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        for row in record["rows"]:
            rows.append(
                {
                    "device": row["device"],
                    "what": f"`speed.py`, {row['engine']} engine",
                    "replicas": int(row["replicas"]),
                    "rate": float(row["seed_iterations_per_second"]),
                    "source": f"{path.name} ({record['date'][:10]})",
                }
            )
    return rows


def chunk_rows(results: pd.DataFrame) -> list[dict]:
    """One row per chunk of the paper's plan trained on a GPU."""
    on_gpu = results[results["device"].fillna("").str.startswith("NVIDIA")]
    rows = []
    for (config_id, device), chunk in on_gpu.groupby(["config_id", "device"]):
        first = chunk.iloc[0]
        steps = int(chunk["iterations"].max())
        wall = float(chunk["wall_time"].max())
        replicas = int(first["replicas"])
        rows.append(
            {
                "device": device,
                "what": (
                    f"a Table 2 chunk ({first['model']} {first['operation']}, "
                    f"{steps:,} steps, {wall:.0f} s wall)"
                ),
                "replicas": replicas,
                "rate": steps / wall * replicas,
                "source": f"results/paper/results.csv, config {config_id}",
            }
        )
    return rows


def summary_text(folder: Path = GPU, results_path: Path = PAPER) -> str:
    """The Markdown table, fastest device first; × against the same device's."""
    references = reference_rates(folder)
    rows = speed_rows(folder) + chunk_rows(pd.read_csv(results_path))
    for device, rate in references.items():
        rows.append(
            {
                "device": device,
                "what": "the paper's PyTorch code (stable-nalu), start-up included",
                "replicas": 1,
                "rate": rate,
                "source": "the call's log",
            }
        )
    rows.sort(key=lambda row: (row["device"], row["what"], row["replicas"]))
    lines = [
        "| device | what | replicas | seed-steps/s | × the paper's code | file |",
        "|---|---|--:|--:|--:|---|",
    ]
    for row in rows:
        reference = references.get(row["device"])
        ratio = f"{row['rate'] / reference:,.0f}" if reference else "not measured"
        lines.append(
            f"| {row['device']} | {row['what']} | {row['replicas']:,} | "
            f"{row['rate']:,.0f} | {ratio} | {row['source']} |"
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
