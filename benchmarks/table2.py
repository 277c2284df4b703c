"""Madsen & Johansen's (2020) Table 2 rows over 100 seeds, beside the paper.

    python benchmarks/table2.py                       # the rows below, 100 seeds
    python benchmarks/table2.py --summarize           # only print the table
    python benchmarks/table2.py --rows nmu:mul --iterations 2000000

Each (model, operation) row is one configuration of the default arithmetic
task (100 inputs, batch 128, evaluation every 1,000 steps) trained for
`--iterations` steps as `--seeds` vectorized replicas (chunks of
`--chunk-size`), through `run_sweep`: the same results file and resume rules
as `keras-nalu sweep`. The paper trains 5·10⁶ steps; the budget actually run
is the `max_iterations` column of the results file and is printed with the
table. Rerunning the command skips the (config, seed) pairs already done, so a
longer budget is a new configuration (new rows), not an overwrite.

Writes `benchmarks/results/table2/results.csv` and `summary.md`.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up lines
sys.path.insert(0, str(Path(__file__).resolve().parent))

from published import (  # noqa: E402
    OPERATION_SIGNS,
    VERDICT_RULE,
    power,
    section,
    with_paper_columns,
)

from keras_nalu.reports.summary import load_results, summarize  # noqa: E402
from keras_nalu.sweeps.runner import run_sweep  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "table2"
ROWS = (
    "nau:add,nau:sub,linear:add,linear:sub,linear:mul,"
    "relu:add,relu:sub,relu:mul,nalu:add,nalu:sub,nalu:mul"
)


def table_text(results: pd.DataFrame) -> str:
    """Our rows beside Madsen & Johansen's (2020) Table 6, as Markdown.

    Two tables, each between named markers for the docs (`file.md:name`):
    `paper`, the rows Table 6 has (with the verdict, `published.verdict`),
    and `beyond`, the presets it does not have (if any).
    """
    keys = ["operation", "model", "max_iterations"]
    table = with_paper_columns(summarize(results, by=keys))
    wall = results.groupby(keys, sort=False).apply(_row_wall_time, include_groups=False)
    table["wall_time_s"] = [wall.get(tuple(row)) for row in table[keys].values]
    has_paper = table["paper_success_rate"].notna()
    parts = [
        section("verdict", VERDICT_RULE),
        section("paper", markdown(table[has_paper], paper_columns=True)),
    ]
    if not has_paper.all():
        beyond = markdown(table[~has_paper], paper_columns=False)
        parts += ["Presets without a row in Table 6:\n", section("beyond", beyond)]
    return "\n".join(parts)


def markdown(table: pd.DataFrame, paper_columns: bool) -> str:
    """One Markdown row per (operation, model, budget)."""
    header = ["op", "model", "steps", "seeds", "ours [Wilson 95 %]"]
    if paper_columns:
        header += ["paper (Table 6)", "verdict"]
    header += ["median solved at", "sparsity error (mean)", "wall time"]
    if paper_columns:
        header[-3] = "median solved at (ours / paper)"
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.to_dict("records"):
        cells = [
            OPERATION_SIGNS.get(row["operation"], row["operation"]),
            row["model"],
            power(row["max_iterations"]),
            str(row["n"]),
            f"{row['success_rate']:.0%} [{row['success_lower']:.0%}, "
            f"{row['success_upper']:.0%}]",
        ]
        solved_at = _number(row["solved_at_median"])
        if paper_columns:
            cells += [f"{row['paper_success_rate']:.0%}", row["verdict"]]
            solved_at += f" / {_number(row['paper_solved_at_median'])}"
        cells += [
            solved_at,
            _number(row["sparsity_error_mean"]),
            f"{row['wall_time_s']:,.0f} s",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _number(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.3g}"


def _row_wall_time(rows: pd.DataFrame) -> float:
    """Wall time of a row: each chunk's shared wall time counted once."""
    return float(rows.drop_duplicates(["wall_time", "replicas"])["wall_time"].sum())


def run_table(args: argparse.Namespace, reuse=()):
    """Trains the missing rows of `args` (see `parser`), then writes and
    prints the summary table.

    `reuse` lists other results files whose rows join the table (not trained
    again); the rows trained here go to `args.out/results.csv`.
    """
    out = Path(args.out)
    results_path = out / "results.csv"
    if not args.summarize:
        started = time.perf_counter()
        run_sweep(
            {
                "model:operation": [row.split(":") for row in args.rows.split(",")],
                "iterations": [args.iterations],
            },
            args.seeds,
            results_path,
            chunk_size=args.chunk_size,
        )
        print(f"sweep wall time: {time.perf_counter() - started:.0f} s")
    tables = [load_results(path) for path in (results_path, *reuse)]
    text = table_text(pd.concat(tables, ignore_index=True))
    (out / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)


def parser(description: str, rows: str) -> argparse.ArgumentParser:
    """The command line shared by the table benchmarks."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", default=rows, help="model:operation,...")
    parser.add_argument("--iterations", type=int, default=50_000)
    parser.add_argument("--seeds", default="0-99")
    parser.add_argument("--chunk-size", type=int, default=100)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--summarize", action="store_true", help="no training")
    return parser


def main(argv=None) -> int:
    run_table(parser(__doc__.splitlines()[0], ROWS).parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
