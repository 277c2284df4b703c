"""The two replica engines agree: success rates and solved-at steps, 40 seeds each.

The JAX engine draws its training batches from its own stream and its initial
weights from JAX's generator, so its runs are other samples of the same
experiment than the TensorFlow engine's. This benchmark trains the same
configurations on both and compares what the protocol reports: the success
rate (Wilson 95 % interval) and the median solved-at step. The configurations
are chosen so that the rate lies between 20 % and 90 %, where a difference
between the engines would show:

- NAU on +, stopped at 1.8·10⁴ steps, its median solved-at step (Madsen &
  Johansen 2020, Table 2: 1.8·10⁴);
- NAU on −, stopped at 4·10³ steps, before its median (5·10³);
- NMU on × with 10 inputs, λ = 1 ramped over steps 2·10⁴ → 3·10⁴ and 4·10⁴
  steps: solved in minutes by part of the seeds, at steps spread over the
  ramp and after it.

Each (engine, configuration) is a `keras-nalu sweep` into
`benchmarks/results/engines/<engine>.csv` in a process of its own with
`KERAS_BACKEND` set, so a rerun resumes and a finished one is only
summarized. The verdict per configuration: the two rates lie in each other's
intervals and the medians differ by at most 25 %.

    .venv/bin/python benchmarks/engines.py                # train what is missing
    .venv/bin/python benchmarks/engines.py --summarize    # only the table
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "engines"
ENGINES = ("tensorflow", "jax")
SEEDS = "0-39"

CONFIGS = {
    "NAU +": {"model": "nau", "operation": "add", "iterations": 18_000},
    "NAU −": {"model": "nau", "operation": "sub", "iterations": 4_000},
    "NMU × (10 inputs)": {
        "model": "nmu",
        "operation": "mul",
        "input_size": 10,
        "sparsity": 1.0,
        "sparsity_start": 20_000,
        "sparsity_end": 30_000,
        "iterations": 40_000,
    },
}


def _grid_flags(config: dict) -> list[str]:
    flags = []
    for key, value in config.items():
        flags += ["--grid", f"{key}={value}"]
    return flags


def train(engine: str, name: str, results: Path, chunk_size: int) -> float:
    """Runs the sweep of one configuration on one engine; returns wall seconds."""
    command = [
        sys.executable,
        "-m",
        "keras_nalu",
        "sweep",
        *_grid_flags(CONFIGS[name]),
        "--seeds",
        SEEDS,
        "--chunk-size",
        str(chunk_size),
        "--results",
        str(results / f"{engine}.csv"),
        "--quiet",
    ]
    env = {**os.environ, "KERAS_BACKEND": engine, "TF_CPP_MIN_LOG_LEVEL": "3"}
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def _rows(results: Path, engine: str, name: str):
    import pandas as pd

    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.grid import parse_seeds
    from keras_nalu.sweeps.results import config_id, read_results

    path = results / f"{engine}.csv"
    if not path.exists():
        return pd.DataFrame()
    table = read_results(path)
    key = config_id(ExperimentConfig(**CONFIGS[name]))
    seeds = parse_seeds(SEEDS)
    return table[(table["config_id"] == key) & table["seed"].isin(seeds)]


def compare(results: Path) -> tuple[str, bool]:
    """The Markdown table of both engines per configuration, and whether all agree."""
    import numpy as np

    from keras_nalu.evaluation.statistics import success_rate_interval

    lines = [
        "| configuration | engine | n | success | median solved at | device | "
        "wall time | agree |",
        "|---|---|--:|---|--:|---|--:|---|",
    ]
    all_agree = True
    for name in CONFIGS:
        stats = {}
        for engine in ENGINES:
            rows = _rows(results, engine, name)
            if rows.empty:
                continue
            success = rows["success"].astype(str).str.lower() == "true"
            rate, low, high = success_rate_interval(int(success.sum()), len(rows))
            solved = rows.loc[success, "solved_at"].astype(float)
            stats[engine] = {
                "n": len(rows),
                "rate": rate,
                "interval": (low, high),
                "median": float(np.median(solved)) if len(solved) else float("nan"),
                "device": ", ".join(sorted(set(rows["device"].fillna("").astype(str)))),
                "wall": rows.groupby("replicas")["wall_time"].max().sum(),
            }
        agree = ""
        if len(stats) == 2:
            a, b = stats["tensorflow"], stats["jax"]
            inside = (
                b["interval"][0] <= a["rate"] <= b["interval"][1]
                and a["interval"][0] <= b["rate"] <= a["interval"][1]
            )
            # No success on either side leaves no median: it cannot agree.
            medians = abs(a["median"] - b["median"]) <= 0.25 * min(
                a["median"], b["median"]
            )
            ok = inside and medians
            all_agree &= ok
            agree = "yes" if ok else "no"
        else:
            all_agree = False
        for engine, s in stats.items():
            lines.append(
                f"| {name} | {engine} | {s['n']} | {s['rate']:.0%} "
                f"[{s['interval'][0]:.0%}, {s['interval'][1]:.0%}] | "
                f"{s['median']:,.0f} | {s['device'] or 'cpu'} | {s['wall']:,.0f} s | "
                f"{agree} |"
            )
    return "\n".join(lines) + "\n", all_agree


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summarize", action="store_true", help="no training")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--configs", default=None, help="names, comma-separated")
    parser.add_argument("--chunk-size", type=int, default=40)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = Path(args.out)
    results.mkdir(parents=True, exist_ok=True)
    names = list(CONFIGS) if args.configs is None else args.configs.split(",")
    if not args.summarize:
        for name in names:
            for engine in args.engines.split(","):
                seconds = train(engine, name, results, args.chunk_size)
                print(f"{name} on {engine}: {seconds:,.0f} s", file=sys.stderr)
    table, agree = compare(results)
    print(table)
    (results / "summary.md").write_text(table, encoding="utf-8")
    print("the engines agree on every configuration" if agree else "NOT all agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
