"""The NALM single-module benchmark: one unit, nine ranges, 2 and 10 inputs.

    python benchmarks/nalm.py --dry-run                    # the plan, no training
    python benchmarks/nalm.py --inputs 2 --seeds 0-24      # train what is missing
    python benchmarks/nalm.py --inputs 10 --units nmru --operations div
    python benchmarks/nalm.py --summarize                  # only the tables
    python benchmarks/nalm.py --inputs 2 --ranges 6 --seeds 0-2

Each unit learns t = a ∘ b straight from the inputs (one layer; with 10
inputs, 8 are distractors) on the nine interpolation → extrapolation range
pairs of Mistry et al. (`keras_nalu.tasks.nalm.NALM_RANGES`), each unit on
the operations it can express (`UNITS`), with its preset's recipe
(`single_*` in `keras_nalu.presets.PRESETS`): 5·10⁴ steps with 2 inputs; 10⁵
steps and the regularizer ramp moved to 5·10⁴ → 7.5·10⁴ with 10 inputs, as
the papers' 10-input runs. Evaluation every 1,000 steps, batch 128.

Training goes through `run_sweep` (resumable, vectorized replicas on the
TensorFlow or the JAX engine; a preset an engine cannot vectorize, such as
the sNMU's noise on TensorFlow, trains one seed at a time there).
`--iterations` shortens every run for a quick check. The DMU
(`OTHER_UNITS`, `--units dmu,dmu_author`) runs through the same plan into a
results file of its own, with 2 inputs only (`benchmarks/dmu.py`). A run
succeeds when its extrapolation MSE at the step of lowest validation MSE is
below the threshold, and never when it diverged. The summary gives both
rules of the papers, each with a Wilson 95 % interval:

- `fixed`: MSE < 10⁻⁵, the rule of the division (NMRU) and robust-NMU (sNMU)
  papers;
- `simulated`: below `keras_nalu.evaluation.single_module_threshold` (the
  MSE of a solution off by ε = 10⁻⁴), the rule of the benchmark paper.

The results file's own `success` column is the `simulated` rule
(`ExperimentConfig.success_threshold` of a single-module preset).

A run that stops on a non-finite loss or weights counts as a failure and
stays in the denominator, as in the authors' analysis (their R scripts set
`solved = replace_na(extrapolation < threshold, FALSE)`). Runs that stop
before their first evaluation after step 0 ("stopped at the start") are
counted apart: on U[10, 20] and U[−20, −10] with 10 inputs the first
gradient of the sNMU's product (and in some runs on U[10, 20], the NMU's)
is so large that its square, Adam's second moment, overflows float32
(`benchmarks/overflow.py` shows it). The pooled table gives each rule's
rate with and without those runs. The published pooled rates
(`published.NALM_10_INPUTS`, Mistry, Farrahi & Hare's division paper) stand
beside ours with the verdict of `published.verdict` under each rule, and a
note under the table says how the plain Real NPU's is derived and whether
its other reading changes a verdict.

Writes `benchmarks/results/nalm/results.csv` and `summary.md`; the summary's
pieces sit between named markers for the docs: `rules`, `verdict`,
`pooled`, `per-range`, `to-run`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

import pandas as pd

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up lines
sys.path.insert(0, str(Path(__file__).resolve().parent))

from published import (  # noqa: E402
    NALM_10_INPUTS,
    NALM_PAPER,
    OPERATION_SIGNS,
    REAL_NPU_IMPROVEMENT,
    REAL_NPU_READINGS,
    VERDICT_RULE,
    section,
    verdict,
)

from keras_nalu.evaluation.statistics import success_rate_interval  # noqa: E402
from keras_nalu.experiments import ExperimentConfig  # noqa: E402
from keras_nalu.presets import DEFAULT_LEARNING_RATE, get_preset  # noqa: E402
from keras_nalu.sweeps.engines import BACKUP_EVERY  # noqa: E402
from keras_nalu.sweeps.grid import parse_seeds  # noqa: E402
from keras_nalu.tasks import Range  # noqa: E402
from keras_nalu.tasks.nalm import (  # noqa: E402
    NALM_INPUT_SIZES,
    NALM_RANGES,
    single_module_geometry,
)

OUT = Path(__file__).resolve().parent / "results" / "nalm"

#: unit -> {operation: preset}: each unit on the operations it can express.
UNITS = {
    "nau": {"add": "single_nau", "sub": "single_nau"},
    "mcfc": {"add": "single_mcfc", "mul": "single_mcfc_mul"},
    "nmu": {"mul": "single_nmu"},
    "snmu": {"mul": "single_snmu"},
    "nmru": {"mul": "single_nmru", "div": "single_nmru"},
    "real_npu": {"mul": "single_real_npu", "div": "single_real_npu_div"},
    "real_npu_modified": {
        "mul": "single_real_npu_modified",
        "div": "single_real_npu_modified",
    },
}

#: Units whose rows live in a results file of their own (`benchmarks/dmu.py`):
#: the DMU's initialization is chosen by operation (Curry 2025), DMU_add for
#: + and ×, DMU_sub for − and ÷.
OTHER_UNITS = {
    "dmu": {
        "add": "single_dmu_add",
        "sub": "single_dmu_sub",
        "mul": "single_dmu_add",
        "div": "single_dmu_sub",
    },
    "dmu_author": {
        "add": "single_dmu_add_author",
        "sub": "single_dmu_sub_author",
        "mul": "single_dmu_add_author",
        "div": "single_dmu_sub_author",
    },
}

#: Every unit `plan` and `judged` know.
ALL_UNITS = {**UNITS, **OTHER_UNITS}

#: Units that run with some input sizes only: the DMU's operands are the
#: first two inputs, where the 10-input task places a and b by seed.
ONLY_INPUT_SIZES = {"dmu": (2,), "dmu_author": (2,)}

#: The seeds of each (cell, range): 25, as the benchmark.
SEEDS = "0-24"

#: The division and robust-NMU papers' success rule: extrapolation MSE < 10⁻⁵.
FIXED_THRESHOLD = 1e-5

#: Steps, and the regularizer ramp with 10 inputs (the papers' 10-input runs).
ITERATIONS = {2: 50_000, 10: 100_000}
TEN_INPUT_RAMP = (50_000, 75_000)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One (input size, unit, operation): its preset and the ranges it runs."""

    input_size: int
    unit: str
    operation: str
    preset: str
    ranges: tuple[tuple[str, str], ...]
    skipped: tuple[tuple[str, str, str], ...]  # (interpolation, extrapolation, why)

    iterations: int | None = None  # None: the papers' (`ITERATIONS`)

    def fields(self) -> dict:
        """The `ExperimentConfig` fields of the cell, besides the ranges."""
        return recipe(self.preset, self.input_size, self.operation, self.iterations)

    def seed_steps(self, seeds: int) -> int:
        """Optimizer steps of every (range, seed) of the cell together."""
        return len(self.ranges) * seeds * self.fields()["iterations"]


def recipe(
    preset_name: str, input_size: int, operation: str, iterations: int | None = None
) -> dict:
    """The `ExperimentConfig` fields of a preset on the single-module task.

    `iterations` replaces the papers' step count (for a quick check); the
    evaluation interval shrinks with it, to at most 1,000 steps.
    """
    preset = get_preset(preset_name)
    if iterations is None:
        iterations = ITERATIONS.get(input_size, ITERATIONS[10])
    fields = {
        "model": preset_name,
        "operation": operation,
        **single_module_geometry(input_size),
        "iterations": iterations,
        "eval_every": min(1_000, iterations),
        "batch_size": 128,
        "learning_rate": preset.learning_rate or DEFAULT_LEARNING_RATE,
    }
    if input_size != 2 and preset.sparsity is not None:
        fields["sparsity_start"], fields["sparsity_end"] = TEN_INPUT_RAMP
    return fields


def plan(
    input_sizes, units, operations, pairs=NALM_RANGES, iterations=None
) -> list[Cell]:
    """The cells to run; a range pair a config refuses is skipped, with why."""
    cells = []
    for input_size in input_sizes:
        for unit in units:
            if input_size not in ONLY_INPUT_SIZES.get(unit, (input_size,)):
                continue
            for operation, preset in ALL_UNITS[unit].items():
                if operation not in operations:
                    continue
                ranges, skipped = [], []
                fields = recipe(preset, input_size, operation, iterations)
                for interpolation, extrapolation in pairs:
                    try:
                        ExperimentConfig(
                            **fields,
                            interpolation_range=interpolation,
                            extrapolation_range=extrapolation,
                        )
                    except ValueError as error:
                        skipped.append((interpolation, extrapolation, str(error)))
                    else:
                        ranges.append((interpolation, extrapolation))
                cells.append(
                    Cell(
                        input_size,
                        unit,
                        operation,
                        preset,
                        tuple(ranges),
                        tuple(skipped),
                        iterations,
                    )
                )
    return cells


def configs_of(cell: Cell) -> list[ExperimentConfig]:
    return [
        ExperimentConfig(
            **cell.fields(), interpolation_range=low, extrapolation_range=high
        )
        for low, high in cell.ranges
    ]


def train_sweep(
    cell: Cell,
    seeds: str,
    results_path: Path,
    chunk_size: int,
    backup_every=BACKUP_EVERY,
) -> None:
    """The cell's ranges × seeds through `run_sweep` (vectorized replicas)."""
    from keras_nalu.sweeps.runner import run_sweep

    grid = {key: [value] for key, value in cell.fields().items()}
    grid["interpolation_range:extrapolation_range"] = [list(r) for r in cell.ranges]
    run_sweep(
        grid, seeds, results_path, chunk_size=chunk_size, backup_every=backup_every
    )


def train(
    cells: list[Cell],
    seeds: str,
    results_path: Path,
    chunk_size: int,
    deadline: float | None = None,
    backup_every: float = BACKUP_EVERY,
) -> bool:
    """Trains what `results_path` lacks; False if `deadline` stopped it.

    With a `deadline` (a `time.monotonic()` time), chunks are sized to finish
    by it (`keras_nalu.sweeps.planning.sweep_within`), cell after cell.
    """
    results_path.parent.mkdir(parents=True, exist_ok=True)
    if deadline is None:
        for cell in cells:
            train_sweep(cell, seeds, results_path, chunk_size, backup_every)
        return True
    from keras_nalu.sweeps.planning import sweep_within

    configs = [config for cell in cells for config in configs_of(cell)]
    return sweep_within(
        configs,
        parse_seeds(seeds),
        results_path,
        deadline,
        chunk_size=chunk_size,
        backup_every=backup_every,
    )


def seed_steps_left(cells: list[Cell], seeds: str, results_path: Path) -> int:
    """The seed-steps of the runs `results_path` does not hold yet."""
    from keras_nalu.sweeps.results import config_id, read_results

    done = set()
    if results_path.exists():
        table = read_results(results_path)
        done = set(zip(table["config_id"].astype(str), table["seed"].astype(int)))
    seeds = parse_seeds(seeds)
    return sum(
        config.iterations
        for cell in cells
        for config in configs_of(cell)
        for seed in seeds
        if (config_id(config), seed) not in done
    )


def write_summary(out: Path) -> str | None:
    """`out/summary.md` from `out/results.csv`; its text, or None without rows."""
    from keras_nalu.sweeps.results import read_results

    results_path = out / "results.csv"
    if not results_path.exists():
        return None
    rows = judged(read_results(results_path))
    text = summary_text(rows, not_yet_run(rows))
    (out / "summary.md").write_text(text + "\n", encoding="utf-8")
    return text


def judged(results: pd.DataFrame) -> pd.DataFrame:
    """The benchmark's rows, each judged by both rules (fixed, simulated)."""
    presets = {p: u for u, ops in ALL_UNITS.items() for p in ops.values()}
    rows = results[results["model"].isin(presets)].copy()
    if rows.empty:
        return rows
    rows["unit"] = rows["model"].map(presets)
    for column in ("interpolation_range", "extrapolation_range"):
        rows[column] = [str(Range.parse(value)) for value in rows[column]]
    # The recorded threshold is the simulated one: `ExperimentConfig`
    # judges a single-module preset by `single_module_threshold`.
    rows["threshold_simulated"] = pd.to_numeric(rows["threshold"], errors="coerce")
    mse = pd.to_numeric(rows["extrapolation_mse"], errors="coerce")
    ok = mse.notna() & ~rows["diverged"].astype(str).str.lower().eq("true")
    rows["success_fixed"] = ok & (mse < FIXED_THRESHOLD)
    rows["success_simulated"] = ok & (mse < rows["threshold_simulated"])
    diverged = rows["diverged"].astype(str).str.lower().eq("true")
    steps = pd.to_numeric(rows["iterations"], errors="coerce")
    rows["stopped_at_start"] = diverged & (steps < rows["eval_every"])
    return rows


def _rate(successes: pd.Series) -> str:
    rate, lower, upper = success_rate_interval(int(successes.sum()), len(successes))
    if math.isnan(rate):
        return "–"
    return f"{100 * rate:.0f} % [{100 * lower:.0f}, {100 * upper:.0f}]"


def _verdict(successes: pd.Series, paper) -> str:
    return verdict(int(successes.sum()), len(successes), paper)


def _where(runs: pd.DataFrame) -> str:
    """Engine/device and the wall time of the chunks that trained `runs`
    (each chunk once; a chunk's time is shared by all its replicas)."""
    chunks = runs.drop_duplicates(["wall_time", "replicas"])
    seconds = pd.to_numeric(chunks["wall_time"], errors="coerce").sum()
    devices = sorted(set(runs["engine"].fillna("tensorflow") + "/" + runs["device"]))
    return f"{', '.join(devices)}, {seconds:,.0f} s"


RULES = (
    "Success with a Wilson 95 % interval: `fixed` = extrapolation MSE < 1e-5 "
    "(division and sNMU papers), `simulated` = below the ε = 1e-4 "
    "single-module threshold (benchmark paper). A run stopped on a non-finite "
    "loss or weights is a failure and stays in the count, as in the authors' "
    "analysis; *stopped at the start* counts the runs stopped before their "
    "first evaluation after step 0 (float32 overflow of Adam's second moment, "
    "`benchmarks/overflow.py`)."
)


def summary_text(rows: pd.DataFrame, missing: list[str] | None = None) -> str:
    """Each unit over all ranges (with and without the runs stopped at the
    start, beside the papers), then per range, then the cells not yet run."""
    if rows.empty:
        return "No results of this benchmark yet."
    order = {f"{str(Range.parse(low))}": i for i, (low, _) in enumerate(NALM_RANGES)}
    keys = ["input_size", "operation", "unit", "max_iterations"]
    per_range = [
        "| inputs | op | unit | steps | interpolation → extrapolation | seeds "
        "| fixed | simulated | stopped at the start |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    pooled = [
        "| inputs | op | unit | steps | ranges | runs | fixed | simulated "
        "| stopped at the start | fixed, without them | simulated, without them "
        "| paper | verdict (fixed) | verdict (simulated) | device, wall time |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, group in rows.groupby(keys, sort=True):
        size, operation, unit, steps = key
        sign = OPERATION_SIGNS.get(operation, operation)
        by_range = sorted(
            group.groupby(["interpolation_range", "extrapolation_range"]),
            key=lambda item: order.get(item[0][0], len(order)),
        )
        for (low, high), runs in by_range:
            per_range.append(
                f"| {size} | {sign} | {unit} | {steps:,} | {low} → {high} "
                f"| {len(runs)} | {_rate(runs['success_fixed'])} "
                f"| {_rate(runs['success_simulated'])} "
                f"| {int(runs['stopped_at_start'].sum())} |"
            )
        kept = group[~group["stopped_at_start"]]
        paper = NALM_10_INPUTS.get((operation, unit)) if size == 10 else None
        pooled.append(
            f"| {size} | {sign} | {unit} | {steps:,} | {len(by_range)} "
            f"| {len(group)} | {_rate(group['success_fixed'])} "
            f"| {_rate(group['success_simulated'])} "
            f"| {int(group['stopped_at_start'].sum())} "
            f"| {_rate(kept['success_fixed'])} | {_rate(kept['success_simulated'])} "
            f"| {'–' if paper is None else f'{100 * paper.rate:.1f} %'} "
            f"| {_verdict(group['success_fixed'], paper)} "
            f"| {_verdict(group['success_simulated'], paper)} "
            f"| {_where(group)} |"
        )
    pooled.append("\n" + paper_note(rows))
    parts = [
        section("rules", RULES),
        section("verdict", VERDICT_RULE),
        "Over all ranges (every seed of every range pooled):\n",
        section("pooled", "\n".join(pooled)),
        "Per range:\n",
        section("per-range", "\n".join(per_range)),
    ]
    if missing is not None:
        text = "Every cell has rows."
        if missing:
            text = "Not yet run: " + "; ".join(missing) + "."
        parts.append(section("to-run", text))
    return "\n".join(parts)


def paper_note(rows: pd.DataFrame) -> str:
    """Where the `paper` column comes from, and what the plain Real NPU's
    other reading would change: "the same verdicts", or which."""
    points, relative = REAL_NPU_READINGS["points"], REAL_NPU_READINGS["relative"]
    runs = rows.query("input_size == 10 and operation == 'div' and unit == 'real_npu'")
    changed = []
    for rule in ("fixed", "simulated"):
        if runs.empty:
            continue
        as_points = _verdict(runs[f"success_{rule}"], points)
        as_relative = _verdict(runs[f"success_{rule}"], relative)
        if as_points != as_relative:
            changed.append(f"{rule}: {as_relative} instead of {as_points}")
    outcome = "; ".join(changed) if changed else "the same verdicts"
    return (
        f"`paper`: {NALM_PAPER}, the pooled rates on ÷ with 10 inputs, printed "
        f"without a count. The plain Real NPU's {100 * points.rate:.1f} % is not "
        f"printed: it is derived from the modified unit's "
        f"{100 * NALM_10_INPUTS[('div', 'real_npu_modified')].rate:.1f} %, "
        f'"improving … by {100 * REAL_NPU_IMPROVEMENT:.1f} %" on it, read as '
        f"percentage points; read as "
        f"relative it is {100 * relative.rate:.1f} %, which gives {outcome}."
    )


def not_yet_run(rows: pd.DataFrame, seeds: int = 25) -> list[str]:
    """The benchmark's cells (input size, unit, operation) without any row."""
    present = set()
    if not rows.empty:
        present = set(
            zip(rows["input_size"].astype(int), rows["unit"], rows["operation"])
        )
    missing: dict[int, list[str]] = {}
    for cell in plan(NALM_INPUT_SIZES, UNITS, ("add", "sub", "mul", "div")):
        if (cell.input_size, cell.unit, cell.operation) not in present:
            sign = OPERATION_SIGNS[cell.operation]
            missing.setdefault(cell.input_size, []).append(f"{cell.unit} {sign}")
    return [
        f"{size} inputs: {', '.join(cells)} ({len(cells)} cells)"
        for size, cells in sorted(missing.items())
    ]


def _names(text: str, choices, what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in choices]
    if unknown or not names:
        raise SystemExit(
            f"nalm.py: unknown {what} {unknown or names}; choose from {list(choices)}"
        )
    return names


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", default="2,10", help="input sizes, e.g. 2,10")
    parser.add_argument("--units", default=",".join(UNITS))
    parser.add_argument("--operations", default="add,sub,mul,div")
    parser.add_argument(
        "--ranges", default="0-8", help="indices into NALM_RANGES, e.g. 6 or 0,4-8"
    )
    parser.add_argument("--seeds", default=SEEDS)
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="steps per run instead of the papers' (a quick check)",
    )
    parser.add_argument("--chunk-size", type=int, default=225)
    parser.add_argument(
        "--time-limit",
        type=float,
        help="seconds: chunks sized to finish inside it; the same command continues",
    )
    parser.add_argument(
        "--backup-every", type=float, default=BACKUP_EVERY, help="seconds"
    )
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--dry-run", action="store_true", help="print the plan")
    parser.add_argument("--summarize", action="store_true", help="no training")
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    sizes = [int(n) for n in _names(args.inputs, map(str, NALM_INPUT_SIZES), "size")]
    units = _names(args.units, ALL_UNITS, "unit")
    operations = _names(args.operations, ("add", "sub", "mul", "div"), "operation")
    indices = parse_seeds(args.ranges, owner="--ranges")
    if max(indices) >= len(NALM_RANGES):
        raise SystemExit(f"nalm.py: --ranges goes from 0 to {len(NALM_RANGES) - 1}")
    if args.iterations is not None and args.iterations < 1:
        raise SystemExit(f"nalm.py: --iterations must be >= 1, not {args.iterations}")
    pairs = [NALM_RANGES[i] for i in indices]
    cells = plan(sizes, units, operations, pairs, args.iterations)
    out = Path(args.out)
    results_path = out / "results.csv"
    if args.dry_run:
        seeds = len(parse_seeds(args.seeds))
        for cell in cells:
            print(
                f"{cell.input_size:>2} inputs {cell.operation} {cell.unit:<18} "
                f"{cell.preset:<26} {len(cell.ranges)} ranges × {seeds} seeds × "
                f"{cell.fields()['iterations']:,} steps = "
                f"{cell.seed_steps(seeds):,} seed-steps"
            )
            for low, high, why in cell.skipped:
                print(f"     skipped {low} → {high}: {why}")
        total = sum(cell.seed_steps(seeds) for cell in cells)
        left = seed_steps_left(cells, args.seeds, results_path)
        print(f"total: {len(cells)} cells, {total:,} seed-steps")
        print(f"still to train: {left:,} seed-steps ({results_path})")
        return 0
    complete = True
    if not args.summarize:
        started = time.perf_counter()
        deadline = None
        if args.time_limit is not None:
            deadline = time.monotonic() + args.time_limit
        complete = train(
            cells,
            args.seeds,
            results_path,
            args.chunk_size,
            deadline,
            args.backup_every,
        )
        print(f"wall time: {time.perf_counter() - started:.0f} s")
    text = write_summary(out)
    if text is None:
        print(f"No results at {results_path}", file=sys.stderr)
        return 1
    print(text)
    if not complete:
        print("Stopped at the time limit: run the same command again to continue.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
