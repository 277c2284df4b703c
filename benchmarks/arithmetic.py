"""The NAU and NMU presets over seeds, beside Madsen & Johansen (2020).

    python benchmarks/arithmetic.py                 # everything below
    python benchmarks/arithmetic.py --only nmu      # one part

Runs, one seed at a time with `run_experiment` (the `keras-nalu train` path):
- the `nau` preset (Table 4: λ 0.01 over steps 5·10³ → 5·10⁴) on + and − for
  `--nau-seeds` seeds, `--nau-iterations` steps each (the paper trains 5·10⁶;
  the NAU solves within 10⁵);
- the `nmu` preset (λ 10 over 10⁶ → 2·10⁶) on × for `--nmu-seeds` seeds, up to
  `--nmu-iterations` steps, stopping at the first solved evaluation (the
  paper trains 5·10⁶ and judges at the best validation step).

Each finished run appends a row to `<out>/results.csv` (written atomically);
a rerun skips finished (part, seed) pairs. At the end the table (success rate
with a Wilson interval, median solved-at) is printed beside Madsen & Johansen's (2020)
Table 2 and written to `<out>/summary.md`.
"""

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from published import COMPARISON_COLUMNS, with_paper_columns  # noqa: E402

from keras_nalu._files import atomic_write  # noqa: E402
from keras_nalu.experiments import ExperimentConfig, run_experiment  # noqa: E402
from keras_nalu.reports.summary import summarize  # noqa: E402

COLUMNS = (
    "model",
    "operation",
    "seed",
    "success",
    "solved_at",
    "best_step",
    "sparsity_error",
    "interpolation_mse",
    "extrapolation_mse",
    "threshold",
    "iterations",
    "wall_time",
    "diverged",
    "formula_verdict",
)


def parts(args):
    nau = [("nau", op, args.nau_iterations, False) for op in ("add", "sub")]
    for model, operation, iterations, stop in nau:
        for seed in range(args.nau_seeds):
            yield model, operation, seed, iterations, stop
    for seed in range(args.nmu_first_seed, args.nmu_first_seed + args.nmu_seeds):
        yield "nmu", "mul", seed, args.nmu_iterations, True


def append_row(path: Path, row: dict) -> None:
    table = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=COLUMNS)
    table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    with atomic_write(path, encoding="utf-8", newline="") as handle:
        table.to_csv(handle, index=False)


def table_text(results: pd.DataFrame) -> str:
    """Success rate (Wilson 95 %), median solved-at, beside Table 2."""
    table = with_paper_columns(summarize(results))
    columns = [
        "operation",
        "model",
        *COMPARISON_COLUMNS,
    ]
    wall = results.groupby(["operation", "model"], sort=False)["wall_time"].sum()
    text = table[columns].to_string(index=False)
    return (
        text
        + "\n\nwall time per row (s): "
        + ", ".join(
            f"{op}/{model} {seconds:.0f}" for (op, model), seconds in wall.items()
        )
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nau-seeds", type=int, default=10)
    parser.add_argument("--nau-iterations", type=int, default=100_000)
    parser.add_argument("--nmu-seeds", type=int, default=3)
    parser.add_argument("--nmu-iterations", type=int, default=3_000_000)
    parser.add_argument("--nmu-first-seed", type=int, default=0)
    parser.add_argument("--only", choices=("nau", "nmu"), default=None)
    parser.add_argument("--out", default="benchmarks/results/arithmetic")
    parser.add_argument(
        "--summarize",
        nargs="+",
        metavar="DIR",
        help="only print the table of these output folders' results, combined",
    )
    args = parser.parse_args(argv)
    if args.summarize:
        frames = [pd.read_csv(Path(d) / "results.csv") for d in args.summarize]
        print(table_text(pd.concat(frames, ignore_index=True)))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.csv"
    started = time.perf_counter()
    for model, operation, seed, iterations, stop in parts(args):
        if args.only and model != args.only:
            continue
        if results.exists():
            done = pd.read_csv(results)
            mask = (done["model"] == model) & (done["operation"] == operation)
            if (done[mask]["seed"] == seed).any():
                continue
        config = ExperimentConfig(
            model=model,
            operation=operation,
            seed=seed,
            iterations=iterations,
            stop_on_success=stop,
        )
        _, record = run_experiment(config, verbose=False)
        from keras_nalu.explain import compare_with_task, explain

        verdict = compare_with_task(explain(_), config.task()).verdict
        row = {key: record.get(key) for key in COLUMNS if key in record}
        row.update(model=model, operation=operation, seed=seed, formula_verdict=verdict)
        append_row(results, row)
        print(
            f"{model} {operation} seed {seed}: success={record['success']} "
            f"solved_at={record['solved_at']} ({record['wall_time']:.0f} s)",
            flush=True,
        )
    table = with_paper_columns(summarize(pd.read_csv(results)))
    shown = table[["operation", "model", *COMPARISON_COLUMNS]]
    markdown = shown.to_string(index=False)
    (out / "summary.md").write_text(markdown + "\n")
    print(markdown)
    print(f"wall time of this invocation: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
