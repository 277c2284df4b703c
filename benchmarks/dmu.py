"""The Domain Mixed Unit on the NALM single-module benchmark, with a verdict.

Beside the units the benchmark already holds, and with a verdict on its
paper's claim.

    KERAS_BACKEND=jax python benchmarks/dmu.py --dry-run     # the plan
    KERAS_BACKEND=jax python benchmarks/dmu.py               # train what is missing
    KERAS_BACKEND=jax python benchmarks/dmu.py --time-limit 3600
    python benchmarks/dmu.py --summarize                     # only the tables

Curry (2025) claims for the DMU "the highest percentage solved over all
seeds on multiplication and division" of the benchmark. Here it runs as
every other unit ran (`benchmarks/nalm.py`: 2 inputs, the nine ranges, 25
seeds, 5·10⁴ steps, batch 128, an evaluation every 1,000 steps, success
judged at the step of lowest validation MSE by both of the benchmark's
rules), with two recipes:

- `dmu`: the benchmark's default, Adam 10⁻³ (`single_dmu_add`,
  `single_dmu_sub`);
- `dmu_author`: the author's table script at the paper's date
  (`scripts/comprehensive_table_test.py` at 9350f32): Adam 10⁻³ with the
  global gradient norm clipped to 0.01 (`single_dmu_*_author`). The paper's
  text, and so any learning rate it states, could not be read for this
  package; its abstract's summaries speak of raised learning rates, the
  script's rate is the benchmark's.

The initialization is chosen by operation, as the paper assigns it: DMU_add
(operands x₀ + x₁, x₀·x₁) for + and ×, DMU_sub (x₀ − x₁, x₀ / x₁) for − and
÷. No other unit of the benchmark is told its operation. With 10 inputs the
task places a and b by seed while the DMU's operands are the first two
inputs, so the DMU runs with 2 inputs only.

Writes `benchmarks/results/nalm-dmu/results.csv` (resumable; the chunk in
training is backed up beside it) and `summary.md`, whose sections the docs
include: `rules`, `beside`, `claim`, `verdict`, `per-range`, `to-run`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import nalm  # noqa: E402
from published import (  # noqa: E402
    DMU_AUTHOR_RUN,
    DMU_CLAIM,
    OPERATION_SIGNS,
    section,
)

from keras_nalu.evaluation.statistics import success_rate_interval  # noqa: E402
from keras_nalu.tasks import Range  # noqa: E402
from keras_nalu.tasks.nalm import NALM_RANGES  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "nalm-dmu"
UNITS = ("dmu", "dmu_author")
OPERATIONS = ("mul", "div", "add", "sub")
CLAIMED = ("mul", "div")
FULL = len(NALM_RANGES) * 25
"""A recipe's runs on one operation: the nine ranges × 25 seeds."""
"""The operations the paper claims the highest share of seeds solved on."""


def cells(iterations=None) -> list[nalm.Cell]:
    return nalm.plan((2,), UNITS, OPERATIONS, NALM_RANGES, iterations)


def _interval(successes: int, runs: int) -> tuple[float, float, float]:
    return success_rate_interval(successes, runs)


def _rate(successes: int, runs: int) -> str:
    if runs == 0:
        return "–"
    rate, lower, upper = _interval(successes, runs)
    return f"{100 * rate:.0f} % [{100 * lower:.0f}, {100 * upper:.0f}]"


def beside_table(rows: pd.DataFrame) -> str:
    """Every unit with 2 inputs, by operation: runs and both rules' rates."""
    lines = [
        "| op | unit | initialization | runs | fixed | simulated |",
        "|---|---|---|---|---|---|",
    ]
    for operation in OPERATIONS:
        group = rows[rows["operation"] == operation]
        rates = group.groupby("unit")["success_simulated"].mean()
        for unit in sorted(rates.index, key=lambda name: (-rates[name], name)):
            runs = group[group["unit"] == unit]
            given = ""
            if unit in UNITS:
                given = "DMU_add" if operation in ("add", "mul") else "DMU_sub"
            lines.append(
                f"| {OPERATION_SIGNS[operation]} | {unit} | {given or '–'} "
                f"| {len(runs)} | {_rate(int(runs['success_fixed'].sum()), len(runs))} "
                f"| {_rate(int(runs['success_simulated'].sum()), len(runs))} |"
            )
    return "\n".join(lines)


def _relation(ours: tuple, theirs: tuple) -> str:
    """ "higher" / "lower" when the Wilson intervals do not overlap, else "level"."""
    if ours[1] > theirs[2]:
        return "higher"
    if ours[2] < theirs[1]:
        return "lower"
    return "level"


def claim_text(rows: pd.DataFrame) -> str:
    """Per operation: each DMU recipe against the best other unit, by both rules."""
    lines = [
        f"The claim: {DMU_CLAIM}. Each DMU recipe against the best other unit "
        "of the benchmark with 2 inputs; **higher** / **lower**: the Wilson "
        "95 % intervals do not overlap, **level**: they overlap.\n",
        "| op | rule | best other unit | its rate | dmu | dmu_author "
        "| the author's own run |",
        "|---|---|---|---|---|---|---|",
    ]
    for operation in OPERATIONS:
        group = rows[rows["operation"] == operation]
        others = group[~group["unit"].isin(UNITS)]
        author = DMU_AUTHOR_RUN[operation]
        for rule in ("fixed", "simulated"):
            column = f"success_{rule}"
            if others.empty:
                continue
            best = others.groupby("unit")[column].mean().idxmax()
            best_rows = others[others["unit"] == best]
            best_interval = _interval(int(best_rows[column].sum()), len(best_rows))
            cells = []
            for unit in UNITS:
                runs = group[group["unit"] == unit]
                if runs.empty:
                    cells.append("not run yet")
                    continue
                solved = int(runs[column].sum())
                relation = _relation(_interval(solved, len(runs)), best_interval)
                cells.append(f"{_rate(solved, len(runs))} **{relation}**")
            lines.append(
                f"| {OPERATION_SIGNS[operation]} | {rule} | {best} "
                f"| {_rate(int(best_rows[column].sum()), len(best_rows))} "
                f"| {' | '.join(cells)} "
                f"| {author.successes}/{author.seeds}: "
                f"{_rate(author.successes, author.seeds)} |"
            )
    lines.append(
        "\nThe author's own run: his committed results (2,000 steps at most, "
        "solved when the validation MSE of the one-hot evaluation stays below "
        "10⁻⁷ for 100 steps; `published.DMU_AUTHOR_RUN`), not the paper's "
        "table, which could not be read. The DMU is handed its initialization "
        "by operation; no other unit is told the operation."
    )
    return "\n".join(lines)


def _best_other(group: pd.DataFrame, column: str):
    others = group[~group["unit"].isin(UNITS)]
    best = others.groupby("unit")[column].mean().idxmax()
    runs = others[others["unit"] == best]
    return best, _interval(int(runs[column].sum()), len(runs))


def _lost_ranges(runs: pd.DataFrame) -> str:
    """The ranges where some runs fail (the simulated rule), with their counts."""
    lost = []
    for (low, high), by_range in runs.groupby(
        ["interpolation_range", "extrapolation_range"]
    ):
        solved = int(by_range["success_simulated"].sum())
        if solved < len(by_range):
            lost.append(f"{low} → {high} ({solved} of {len(by_range)} solved)")
    return "; ".join(lost) if lost else "none"


PHRASES = {
    "higher": "higher than",
    "lower": "lower than",
    "level": "level with",
    "mixed": "by one rule level with, by the other apart from",
}


def recipe_relation(group: pd.DataFrame, unit: str) -> tuple[str, str] | None:
    """A DMU recipe against the best other unit of `group` (one operation):
    (a key of `PHRASES`, that unit), both rules; None if the recipe has no
    rows. A recipe with fewer than `FULL` runs is compared on those it has."""
    runs = group[group["unit"] == unit]
    if runs.empty:
        return None
    relations = set()
    for rule in ("fixed", "simulated"):
        column = f"success_{rule}"
        best, best_interval = _best_other(group, column)
        ours = _interval(int(runs[column].sum()), len(runs))
        relations.add(_relation(ours, best_interval))
    return (relations.pop() if len(relations) == 1 else "mixed"), best


def claim_verdict(rows: pd.DataFrame, operation: str) -> str:
    """ "holds" if a DMU recipe solves more seeds than every other unit
    (Wilson intervals apart, both rules); "does not hold" if every recipe
    solves fewer; "is not borne out" if none is higher and one is level;
    "is open" while a recipe has fewer than `FULL` runs."""
    group = rows[rows["operation"] == operation]
    complete = [unit for unit in UNITS if (group["unit"] == unit).sum() >= FULL]
    words = [recipe_relation(group, unit)[0] for unit in complete]
    if "higher" in words:
        return "holds"
    if len(complete) < len(UNITS):
        return "is open"
    if all(word == "lower" for word in words):
        return "does not hold"
    return "is not borne out"


def verdict_text(rows: pd.DataFrame) -> str:
    """The claim on the operations it names, one line each, and the lost
    ranges of each recipe."""
    lines = ["**Verdict on the claim**, by operation (both rules):\n"]
    for operation in CLAIMED:
        group = rows[rows["operation"] == operation]
        parts = []
        for unit in UNITS:
            found = recipe_relation(group, unit)
            if found is None:
                parts.append(f"{unit} not run yet")
                continue
            word, best = found
            runs = group[group["unit"] == unit]
            so_far = f" ({len(runs)} of {FULL} runs so far)" if len(runs) < FULL else ""
            parts.append(
                f"{unit}{so_far} {PHRASES[word]} {best}, not every run solved on: "
                f"{_lost_ranges(runs)}"
            )
        lines.append(
            f"- {OPERATION_SIGNS[operation]}: the claim "
            f"{claim_verdict(rows, operation)}; " + "; ".join(parts) + "."
        )
    lines.append(
        "\nThe claim names × and ÷ only; + and − are in the tables above beside it."
    )
    return "\n".join(lines)


def per_range_table(rows: pd.DataFrame) -> str:
    order = {str(Range.parse(low)): i for i, (low, _) in enumerate(NALM_RANGES)}
    lines = [
        "| op | unit | interpolation → extrapolation | seeds | fixed | simulated |",
        "|---|---|---|---|---|---|",
    ]
    dmu = rows[rows["unit"].isin(UNITS)]
    for (operation, unit), group in sorted(
        dmu.groupby(["operation", "unit"]),
        key=lambda item: (OPERATIONS.index(item[0][0]), item[0][1]),
    ):
        ranges = sorted(
            group.groupby(["interpolation_range", "extrapolation_range"]),
            key=lambda item: order.get(item[0][0], len(order)),
        )
        for (low, high), runs in ranges:
            lines.append(
                f"| {OPERATION_SIGNS[operation]} | {unit} | {low} → {high} "
                f"| {len(runs)} | {_rate(int(runs['success_fixed'].sum()), len(runs))} "
                f"| {_rate(int(runs['success_simulated'].sum()), len(runs))} |"
            )
    return "\n".join(lines)


def to_run_text(out: Path) -> str:
    left = nalm.seed_steps_left(cells(), nalm.SEEDS, out / "results.csv")
    if left == 0:
        return "Every DMU cell has its 25 seeds on every range."
    total = sum(cell.seed_steps(25) for cell in cells())
    return (
        f"Not yet trained: {left:,} of the {total:,} seed-steps of the DMU cells "
        f"(`python benchmarks/dmu.py` continues them; the chunk in training is "
        f"backed up in `results.csv.backup/`, committed beside the rows)."
    )


def judged_rows(out: Path) -> pd.DataFrame:
    """The DMU rows and the benchmark's other 2-input rows, judged alike."""
    from keras_nalu.sweeps.results import read_results

    frames = [
        nalm.judged(read_results(path))
        for path in (nalm.OUT / "results.csv", out / "results.csv")
        if path.exists()
    ]
    rows = pd.concat(frames, ignore_index=True)
    return rows[rows["input_size"].astype(int) == 2]


def summary_text(out: Path) -> str:
    rows = judged_rows(out)
    return "\n".join(
        [
            section("rules", nalm.RULES),
            "Every unit with 2 inputs (the DMU's rows and the benchmark's), "
            "pooled over the nine ranges:\n",
            section("beside", beside_table(rows)),
            section("claim", claim_text(rows)),
            section("verdict", verdict_text(rows)),
            "The DMU per range:\n",
            section("per-range", per_range_table(rows)),
            section("to-run", to_run_text(out)),
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, help="steps instead of 5·10⁴")
    parser.add_argument("--chunk-size", type=int, default=225)
    parser.add_argument("--time-limit", type=float, help="seconds")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--summarize", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    plan = cells(args.iterations)
    if args.dry_run:
        left = nalm.seed_steps_left(plan, nalm.SEEDS, out / "results.csv")
        total = sum(cell.seed_steps(25) for cell in plan)
        print(f"{len(plan)} cells, {total:,} seed-steps, {left:,} still to train")
        return 0
    if not args.summarize:
        deadline = None
        if args.time_limit is not None:
            deadline = time.monotonic() + args.time_limit
        nalm.train(plan, nalm.SEEDS, out / "results.csv", args.chunk_size, deadline)
    if not (out / "results.csv").exists():
        print(f"No results at {out / 'results.csv'}", file=sys.stderr)
        return 1
    text = summary_text(out)
    (out / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
