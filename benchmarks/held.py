"""Does training hold a solution? An exact NMU solution, trained on.

Madsen & Johansen's (2020) arithmetic task on × (100 inputs, subsets of 25
with overlap ½, U[1, 2] → U[2, 6]): every replica starts from an exact
solution of its own task, the NAU's first two units summing the two subsets
and the NMU multiplying them (every other weight 0), and trains on with the
paper's recipe. Evaluated every 1,000 steps, as the papers do. The table
counts the evaluations whose extrapolation MSE is at or above the success
threshold: how often a solved run reads "not solved" at one evaluation (e.g.
at its final step), with the sparsity regularizer at its full strength
(the state of a run late in training) or without it, and with Keras' Adam ε
(10⁻⁷) or the reference code's (10⁻⁸).

    KERAS_BACKEND=jax python benchmarks/held.py                 # λ at full, ε 1e-7
    KERAS_BACKEND=jax python benchmarks/held.py --epsilon 1e-8
    KERAS_BACKEND=jax python benchmarks/held.py --no-regularizer
    python benchmarks/held.py --summarize                       # only the table

Each run replaces its setting's rows in `benchmarks/results/held/results.csv`
(one row per seed: evaluations, how many at or above the threshold, the
largest extrapolation MSE) and rewrites `summary.md`, one line per setting.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from keras_nalu._files import atomic_write
from keras_nalu.evaluation.statistics import success_rate_interval
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.engines import ReplicaRun, replica_run
from keras_nalu.sweeps.grid import parse_seeds

OUT = Path(__file__).resolve().parent / "results" / "held"

#: The columns that name a setting; a run replaces the rows of its setting.
SETTING = ("hidden_size", "steps", "regularizer", "epsilon")


def exact_solution(run: ReplicaRun, r: int) -> list[np.ndarray]:
    """NAU unit 0 sums subset a, unit 1 subset b; the NMU multiplies them."""
    nau, nmu = (np.zeros(w.shape, np.float32) for w in run.weights(r))
    (a_start, a_end), (b_start, b_end) = run.tasks[r].subsets
    nau[a_start:a_end, 0] = 1.0
    nau[b_start:b_end, 1] = 1.0
    nmu[:2, 0] = 1.0
    return [nau, nmu]


def train_held(args: argparse.Namespace) -> pd.DataFrame:
    """Trains every seed from its exact solution; one row per seed."""
    start = 10 * args.steps if args.no_regularizer else 0  # a ramp never reached
    config = ExperimentConfig(
        model="nmu",
        operation="mul",
        hidden_size=args.hidden_size,
        iterations=args.steps,
        eval_every=1_000,
        sparsity_start=start,
        sparsity_end=start + 1,
        epsilon=args.epsilon,
    )
    run = replica_run(config, parse_seeds(args.seeds))
    for r in range(run.num_replicas):
        run.set_weights(r, exact_solution(run, r))
    started = time.perf_counter()
    run.train()
    wall_time = time.perf_counter() - started
    rows = []
    for record in run.results():
        extrapolation = np.array([h[2] for h in record["history"]])
        rows.append(
            {
                "hidden_size": args.hidden_size,
                "steps": args.steps,
                "regularizer": "none" if args.no_regularizer else "full",
                "epsilon": "keras" if args.epsilon is None else f"{args.epsilon:g}",
                "seed": record["config"]["seed"],
                "evaluations": len(extrapolation),
                "above_threshold": int(np.sum(~(extrapolation < record["threshold"]))),
                "largest_extrapolation_mse": float(extrapolation.max()),
                "threshold": record["threshold"],
                "engine": record["engine"],
                "device": record["device"],
                "wall_time": wall_time,
            }
        )
    return pd.DataFrame(rows)


def merged(path: Path, rows: pd.DataFrame) -> pd.DataFrame:
    """The results file with `rows` in place of their setting's old rows."""
    if not path.is_file():
        return rows
    old = pd.read_csv(path, dtype={"epsilon": str})
    setting = rows.iloc[0]
    same = np.logical_and.reduce(
        [old[column].astype(str) == str(setting[column]) for column in SETTING]
    )
    return pd.concat([old[~same], rows], ignore_index=True)


def summary_text(results: pd.DataFrame) -> str:
    """One line per setting: evaluations at or above the threshold, pooled."""
    lines = [
        "Exact NMU solutions trained on (Madsen & Johansen's (2020) × task): "
        "evaluations at or above the success threshold, every seed pooled, "
        "with a Wilson 95 % interval.",
        "",
        "| hidden size | steps | λ | Adam ε | seeds | evaluations above "
        "the threshold | per seed | largest extrapolation MSE | engine, device, "
        "wall time |",
        "|--:|--:|---|---|--:|---|---|--:|---|",
    ]
    for key, group in results.groupby(list(SETTING), sort=False):
        hidden_size, steps, regularizer, epsilon = key
        above, total = (
            int(group["above_threshold"].sum()),
            int(group["evaluations"].sum()),
        )
        rate, lower, upper = success_rate_interval(above, total)
        per_seed = f"{group['above_threshold'].min()}–{group['above_threshold'].max()}"
        lines.append(
            f"| {hidden_size} | {steps:,} | {regularizer} | {epsilon} "
            f"| {len(group)} | {above} of {total}, {rate:.0%} "
            f"[{lower:.0%}, {upper:.0%}] | {per_seed} "
            f"| {group['largest_extrapolation_mse'].max():.3g} "
            f"| {group['engine'].iloc[0]}/{group['device'].iloc[0]}, "
            f"{group['wall_time'].iloc[0]:.0f} s |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden-size", type=int, default=4)
    parser.add_argument("--seeds", default="0-7")
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--epsilon", type=float, help="Adam's ε; default Keras'")
    parser.add_argument(
        "--no-regularizer",
        action="store_true",
        help="λ = 0 (by default λ is at its full strength from the first step)",
    )
    parser.add_argument("--out", default=str(OUT), help="folder of results.csv")
    parser.add_argument("--summarize", action="store_true", help="no training")
    args = parser.parse_args(argv)
    out = Path(args.out)
    path = out / "results.csv"
    if not args.summarize:
        rows = train_held(args)
        out.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, encoding="utf-8", newline="") as handle:
            merged(path, rows).to_csv(handle, index=False)
    if not path.is_file():
        raise SystemExit(f"error: no results at {path}; run without --summarize")
    text = summary_text(pd.read_csv(path, dtype={"epsilon": str}))
    (out / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
