"""Madsen & Johansen's (2020) tables and Fig. 3 at the paper's budget: one command.

    python benchmarks/paper.py --dry-run                  # the plan, nothing trained
    python benchmarks/paper.py --full                     # train what is missing
    python benchmarks/paper.py --full --time-limit 480    # chunks that finish in 8 min
    python benchmarks/paper.py --summarize                # only the tables
    python benchmarks/paper.py --full --only fig3_hidden --models nmu \\
        --hidden-sizes 4,10 --chunk-size 50          # a part of a part, on a CPU

`--full` trains the parts in the order of `PRIORITY` (Table 2, Fig. 3's
hidden-size panel, Mistry et al.'s NALM benchmark, Table 6, Table 5, Fig.
3's input ranges, Table 1) at the paper's protocol: each preset as in Table
4, 100 seeds per row (Fig. 3: 50 per point; NALM: 25 per range), 5·10⁶ steps
(Table 1: 2·10⁵, as the reference code), evaluation every 1,000 steps,
through `run_sweep` into one results file (`--out`/results.csv; NALM:
`--nalm-out`), so a rerun resumes it: finished runs are skipped and a chunk
in training continues from its backup (`--backup-every`). Under
`KERAS_BACKEND=jax` the configurations of one recipe train together, up to
`--chunk-size` replicas a chunk (1,000 fills a GPU); `--chunks-per-device`
trains that many chunks side by side.

`--time-limit` fits the work to calls of a fixed length (a GPU lent for ten
minutes at a time): each recipe's chunk size comes from its measured step
time (read from the rows the results file holds for this device, else
measured on the spot), so that a chunk finishes inside the time left; no
chunk starts that would not, a line is printed for each finished chunk, and
its rows are in the file at once. The results file is all that needs to be
carried back; the same command run again continues. Where not even one run
fits in the time left, that recipe's chunks train with backups and stop at
the limit. `--fixed-chunks` keeps `--chunk-size` and stops at the first
evaluation past the limit, after a backup.

Every table prints our success rate with its Wilson 95 % interval beside the
paper's (the Wilson interval of its count), the solved-at median and the
sparsity error, and a verdict: our rate inside, above or below the paper's
interval; a row below it at a smaller budget than the paper's says so. The
Fig. 3 hidden-size panel also reads success three ways: at the best
validation step (the paper's rule), at any evaluation, at the final step.
Results rows of the `--reuse` files (the committed ones at smaller budgets)
join the tables, each budget a row of its own. Rows still to run at the
paper's budget are listed.

Writes `<out>/summary.md` and `<out>/fig3_hidden_seeds.csv` (each seed's
first and last solved step), and the NALM benchmark's `summary.md`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import pandas as pd

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up lines
sys.path.insert(0, str(Path(__file__).resolve().parent))

import nalm  # noqa: E402
from published import (  # noqa: E402
    ARITHMETIC_BUDGET,
    FIG_3_COUNTS_NOTE,
    FIG_3_HIDDEN_SIZE,
    FIG_3_HIDDEN_SIZES,
    FIG_3_MODELS,
    FIG_3_RANGES,
    FIG_3_SEEDS,
    HIDDEN_SIZE_ABLATION,
    NOTES,
    SIMPLE_BUDGET,
    TABLE_1,
    TABLE_2,
    TABLE_2_ROWS,
    TABLE_5,
    TABLE_6,
    TABLE_6_MODELS,
    TABLE_6_OPERATIONS,
    VERDICT_RULE,
    power,
    published_row,
    section,
    verdict,
)

from keras_nalu.evaluation.statistics import success_rate_interval  # noqa: E402
from keras_nalu.experiments import (  # noqa: E402
    REFERENCE_SETTINGS,
    ExperimentConfig,
    total_steps,
)
from keras_nalu.reports.summary import load_results, summarize  # noqa: E402
from keras_nalu.sweeps.engines import BACKUP_EVERY  # noqa: E402
from keras_nalu.sweeps.grid import parse_seeds  # noqa: E402
from keras_nalu.sweeps.local import add_filling_flags, filling_options  # noqa: E402
from keras_nalu.sweeps.results import config_id  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "paper"
REUSE = tuple(
    RESULTS / name / "results.csv"
    for name in ("table2", "table6", "fig3-full", "fig3", "linear-sub")
)
"""The committed results files whose rows join the tables (a missing one is
skipped; `fig3-full` holds the Fig. 3 points run at the full budget). The
same configuration and seed trained on two engines are two runs, and each
engine is a row of its own: `fig3-full`'s 38 JAX seeds of hidden size 10 at
5·10⁶ steps and `fig3`'s 5 TensorFlow seeds of it, `table2`'s 100 TensorFlow
seeds of Linear − at 5·10⁴ steps and `linear-sub`'s 20 JAX seeds. A run
(configuration, engine, seed) in two files is taken from the first, and the
summary lists what it left out (`load_tables`)."""

OUT_REFERENCE = RESULTS / "paper-reference"
"""`--out` of `--reference-settings`: its runs and tables apart."""

NO_SETTINGS = MappingProxyType({})

BIASED_BASELINES = ("linear_bias", "relu_bias", "relu6_bias")
"""The reference code's baselines (with biases), run beside this package's."""


@dataclasses.dataclass(frozen=True)
class Part:
    """One table or panel of the paper: its configurations and how to read them.

    `rows` are `(model, operation, fields)` triples; `fields` are the other
    `ExperimentConfig` fields of the row, e.g. `{"hidden_size": 4}`;
    `settings` are fields every row gets (`--reference-settings`:
    `REFERENCE_SETTINGS`, the reference code's training step).
    """

    name: str
    title: str
    rows: tuple[tuple[str, str, tuple[tuple[str, object], ...]], ...]
    seeds: int
    budget: int
    by: tuple[str, ...] = ("operation", "model")
    published: Mapping | None = None
    settings: tuple[tuple[str, object], ...] = ()

    def configs(
        self, iterations: int | None = None, models: Sequence[str] | None = None
    ) -> list[ExperimentConfig]:
        """The part's configurations at `iterations` (default: the paper's)."""
        return [
            ExperimentConfig(
                model=model,
                operation=operation,
                iterations=iterations or self.budget,
                **dict(fields),
                **dict(self.settings),
            )
            for model, operation, fields in self.rows
            if models is None or model in models
        ]

    def with_settings(self, settings: Mapping) -> Part:
        """The part with `settings` (config fields) on every configuration."""
        return dataclasses.replace(self, settings=tuple(sorted(settings.items())))

    def paper(self, row: Mapping):
        """The published number of a summary row, or None."""
        if self.published is None:
            return None
        if self.name == "fig3_hidden":
            return self.published.get((row["model"], int(row["hidden_size"])))
        return published_row(self.published, row["operation"], row["model"])


_SIMPLE = (("task_name", "simple"), ("input_size", 4))

PARTS = {
    part.name: part
    for part in (
        Part(
            "table2",
            "Table 2: the arithmetic task",
            tuple((m, op, ()) for op, m in TABLE_2_ROWS),
            seeds=100,
            budget=ARITHMETIC_BUDGET,
            published=TABLE_2,
        ),
        Part(
            "fig3_hidden",
            "Fig. 3: hidden size, ×",
            tuple(
                (m, "mul", (("hidden_size", h),))
                for m in FIG_3_MODELS
                for h in FIG_3_HIDDEN_SIZES
            ),
            seeds=FIG_3_SEEDS,
            budget=ARITHMETIC_BUDGET,
            by=("model", "hidden_size"),
            published=FIG_3_HIDDEN_SIZE,
        ),
        Part(
            "table6",
            "Table 6: every model and operation",
            tuple(
                (m, op, ())
                for op in TABLE_6_OPERATIONS
                for m in (*TABLE_6_MODELS, *BIASED_BASELINES)
            ),
            seeds=100,
            budget=ARITHMETIC_BUDGET,
            published=TABLE_6,
        ),
        Part(
            "table5",
            "Table 5: gated units",
            tuple(
                (m, op, ())
                for op in ("mul", "add")
                for m in ("gated_nau_nmu", "nalu_separate", "nalu_shared")
            ),
            seeds=100,
            budget=ARITHMETIC_BUDGET,
            published=TABLE_5,
        ),
        Part(
            "fig3_range",
            "Fig. 3: input range, ×",
            tuple(
                (
                    m,
                    "mul",
                    (("interpolation_range", a), ("extrapolation_range", b)),
                )
                for m in FIG_3_MODELS
                for a, b in FIG_3_RANGES
            ),
            seeds=FIG_3_SEEDS,
            budget=ARITHMETIC_BUDGET,
            by=("model", "interpolation_range", "extrapolation_range"),
        ),
        Part(
            "table1",
            "Table 1: t = (x₁ + x₂)·(x₁ + x₂ + x₃ + x₄)",
            tuple((m, "mul", _SIMPLE) for m in ("nac_mul", "nalu", "nmu")),
            seeds=100,
            budget=SIMPLE_BUDGET,
            published=TABLE_1,
        ),
    )
}


# --- the plan -------------------------------------------------------------------


PRIORITY = ("table2", "fig3_hidden", "nalm", "table6", "table5", "fig3_range", "table1")
"""The order `--full` trains the parts in: the strongest claims first. `nalm`
is Mistry et al.'s single-module benchmark (`benchmarks/nalm.py`, its own
results file)."""

NALM = "nalm"


def sweep_groups(
    names: Sequence[str],
    seeds: str | None = None,
    iterations: int | None = None,
    models: Sequence[str] | None = None,
    hidden_sizes: Sequence[int] | None = None,
    settings: Mapping = NO_SETTINGS,
) -> list[tuple[str, list[int], list[ExperimentConfig]]]:
    """The sweeps `--full` runs, in the order of `names`: `(part, seeds, configs)`.

    A configuration shared by several parts trains once, in its first part,
    with every seed any of its parts asks for (a Fig. 3 point that is also a
    row of Table 6 gets Table 6's 100 seeds); so a part may have two groups.
    `settings` go on every configuration (`Part.with_settings`). The NALM
    benchmark is not a part of `PARTS` (see `nalm`).
    """
    wanted: dict[str, tuple[str, ExperimentConfig, set[int]]] = {}
    for name in names:
        if name == NALM:
            continue
        part = PARTS[name].with_settings(settings)
        part_seeds = set(parse_seeds(seeds or f"0-{part.seeds - 1}"))
        for config in part.configs(iterations, models):
            if name == "fig3_hidden" and hidden_sizes is not None:
                if config.hidden_size not in hidden_sizes:
                    continue
            first, _, union = wanted.get(config_id(config), (name, config, set()))
            wanted[config_id(config)] = (first, config, union | part_seeds)
    groups: dict[tuple[str, tuple[int, ...]], list[ExperimentConfig]] = {}
    for name, config, union in wanted.values():
        groups.setdefault((name, tuple(sorted(union))), []).append(config)
    return [(name, list(s), configs) for (name, s), configs in groups.items()]


def plan_text(
    groups,
    results_path: Path,
    chunk_size: int,
    rate: float,
    step_rate: float | None = None,
    chunks_per_device: int = 1,
    pack_replicas: int = 0,
) -> str:
    """The dry run: every configuration, its seeds and seed-steps, the totals.

    With `pack_replicas`, also the programs the chunks train in: each part's
    consecutive chunks packed up to that many replicas (`pack_chunks`).
    """
    from keras_nalu.sweeps.chunks import pack_chunks
    from keras_nalu.sweeps.runner import plan_sweep

    lines = []
    total_runs = total_steps_all = todo_steps = chunk_steps = chunks = programs = 0
    for name, seeds, configs in groups:
        lines.append(f"{PARTS[name].title} ({len(seeds)} seeds):")
        for config in configs:
            steps = total_steps(config)
            lines.append(
                f"{config.model:>14} {config.operation:>7} "
                f"{_fields_text(config):<40} seeds {_seeds_text(seeds):>6} "
                f"steps {steps:.1e} seed-steps {len(seeds) * steps:.2e}"
            )
            total_runs += len(seeds)
            total_steps_all += len(seeds) * steps
        planned = plan_sweep(configs, seeds, results_path, chunk_size)
        programs += len(pack_chunks(planned, pack_replicas))
        for chunk in planned:
            done = _backed_up_step(results_path, chunk)
            chunks += 1
            todo_steps += chunk.replicas * (total_steps(chunk.config) - done)
            chunk_steps += total_steps(chunk.config) - done
    configs_count = sum(len(configs) for _, _, configs in groups)
    from keras_nalu.sweeps.engines import engine_class

    packing = (
        "configurations of one recipe train together"
        if engine_class().supports_batched
        else "one configuration per chunk"
    )
    lines += [
        "",
        f"engine: {engine_class().engine} ({packing})",
        f"configurations: {configs_count}, runs (config × seed): {total_runs}, "
        f"seed-steps: {total_steps_all:.3e}",
        f"still to train: {todo_steps:.3e} seed-steps in {chunks} chunks "
        f"(chunk size {chunk_size}; {results_path})",
        f"at {rate:.3g} seed-steps/s: {_duration(todo_steps / rate)}",
    ]
    if pack_replicas:
        lines.insert(
            -1,
            f"packed up to {pack_replicas} replicas: {_counted(chunks, 'chunk')} in "
            f"{_counted(programs, 'compiled program')}",
        )
    if step_rate:
        parallel = max(chunks_per_device, 1)
        lines.append(
            f"at {step_rate:.3g} steps/s per chunk, {parallel} chunk(s) at a time: "
            f"{_duration(chunk_steps / step_rate / parallel)}"
        )
    return "\n".join(lines)


def _backed_up_step(results_path: Path, chunk) -> int:
    """The step a chunk's backup has reached, or 0 without a backup."""
    from keras_nalu.sweeps.chunks import chunk_backup
    from keras_nalu.sweeps.engines import read_backup

    path = chunk_backup(results_path, chunk)
    return read_backup(path)[0]["step"] if path.is_file() else 0


def _fields_text(config: ExperimentConfig) -> str:
    defaults = ExperimentConfig()
    shown = [
        f"{name}={getattr(config, name)}"
        for name in (
            "task_name",
            "hidden_size",
            "interpolation_range",
            "extrapolation_range",
        )
        if getattr(config, name) != getattr(defaults, name)
    ]
    return " ".join(shown) or "default task"


def _seeds_text(seeds: Sequence[int]) -> str:
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return str(len(seeds))


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- verdicts (the rule: `published.verdict`) --------------------------------------


def reason(row_verdict: str, budget: int, paper_budget: int) -> str:
    """The one-line reason of a "below" or "open": the smaller budget, or blank.

    Example:

    >>> reason("below", 50_000, 5_000_000)
    'budget: 5·10⁴ steps < 5·10⁶'
    >>> reason("below", 5_000_000, 5_000_000)
    ''
    """
    if row_verdict in ("below", "open") and budget < paper_budget:
        return f"budget: {power(budget)} steps < {power(paper_budget)}"
    return ""


# --- tables -------------------------------------------------------------------------


RUN = ["config_id", "engine", "seed"]
"""What tells one run from another in the joined tables: a configuration and
seed trained on two engines are two runs, and each engine gets a row."""


def load_tables(paths: Sequence[Path]) -> pd.DataFrame:
    """Every row of the results files that exist, one per (config, engine, seed).

    Rows without an `engine` (files written before that column) were trained
    on TensorFlow. A run that two files hold is taken from the first, and
    `table.attrs["dropped"]` says which rows were left out and why, one line
    per file and configuration (`summary_text` prints them).
    """
    tables = []
    for path in paths:
        if Path(path).is_file():
            table = load_results(path).assign(_file=Path(path))
            tables.append(table)
    if not tables:
        return pd.DataFrame(columns=[*RUN, "_file"])
    table = pd.concat(tables, ignore_index=True)
    table = table[table["config_id"].notna()].copy()
    engine = table.get("engine", pd.Series(index=table.index, dtype=object))
    table["engine"] = engine.fillna("tensorflow")
    repeated = table.duplicated(RUN)
    dropped = _dropped_lines(table, repeated)
    table = table[~repeated].drop(columns="_file").reset_index(drop=True)
    table.attrs["dropped"] = dropped
    return table


def _dropped_lines(table: pd.DataFrame, repeated: pd.Series) -> list[str]:
    """One line per file and configuration whose runs another file holds."""
    kept = table[~repeated].set_index(RUN)["_file"]
    lines = []
    for (path, config), rows in table[repeated].groupby(
        ["_file", "config_id"], sort=False
    ):
        first = kept.loc[tuple(rows[RUN].iloc[0])]
        row = rows.iloc[0]
        lines.append(
            f"{_shown(path)}: {len(rows)} rows of {row['model']} "
            f"{row['operation']} ({config}, {row['engine']}, "
            f"{power(row['max_iterations'])} steps, seeds "
            f"{_seeds_text(sorted(rows['seed'].astype(int)))}) left out: "
            f"{_shown(first)} holds the same runs and comes first"
        )
    return lines


def _shown(path: Path) -> str:
    """A results file as the summary names it: relative to `RESULTS` if inside."""
    path = Path(path).resolve()
    return str(path.relative_to(RESULTS)) if path.is_relative_to(RESULTS) else str(path)


def part_rows(results: pd.DataFrame, part: Part) -> pd.DataFrame:
    """The results rows of `part`'s configurations, at every budget present."""
    if results.empty:
        return results
    order = {}
    for budget in sorted(results["max_iterations"].dropna().unique()):
        for index, config in enumerate(part.configs(int(budget))):
            order[config_id(config)] = (index, int(budget))
    rows = results[results["config_id"].isin(order)].copy()
    keys = rows["config_id"].map(order)
    rows["_row"] = [key[0] for key in keys]
    return rows.sort_values(["_row", "max_iterations", "seed"], kind="stable")


def comparison(results: pd.DataFrame, part: Part) -> pd.DataFrame:
    """Our rows of `part` beside the paper's, with the verdict and its reason."""
    rows = part_rows(results, part)
    if rows.empty:
        return pd.DataFrame()
    by = [*part.by, "max_iterations", "engine"]  # a row per engine
    table = summarize(rows, by=by)
    papers = [part.paper(row) for row in table.to_dict("records")]
    table["paper_rate"] = [None if p is None else p.rate for p in papers]
    table["paper_lower"] = [None if p is None else p.interval[0] for p in papers]
    table["paper_upper"] = [None if p is None else p.interval[1] for p in papers]
    table["paper_solved_at"] = [
        None if p is None else _paper_solved_at(p) for p in papers
    ]
    table["paper_sparsity_error"] = [
        getattr(p, "sparsity_error_mean", None) for p in papers
    ]
    table["verdict"] = [
        verdict(round(rate * n), n, p)
        for rate, n, p in zip(table["success_rate"], table["n"], papers)
    ]
    table["reason"] = [
        reason(v, int(b), part.budget)
        for v, b in zip(table["verdict"], table["max_iterations"])
    ]
    table["note"] = [
        NOTES.get(("table6" if part.name == "table2" else part.name, model), "")
        for model in table["model"]
    ]
    where = rows.assign(_device=_devices(rows)).groupby(by, sort=False, dropna=False)
    table["device"] = list(where["_device"].agg(lambda d: ", ".join(sorted(set(d)))))
    table["wall_time"] = list(where.apply(_wall_time, include_groups=False))
    return table


def _devices(rows: pd.DataFrame) -> pd.Series:
    """The engine and device each run trained on, e.g. "jax/cpu"."""
    engine = rows.get("engine", pd.Series("tensorflow", index=rows.index))
    device = rows.get("device", pd.Series("", index=rows.index))
    device = device.fillna("").replace("", "unrecorded device")
    return engine.fillna("tensorflow") + "/" + device


def _wall_time(rows: pd.DataFrame) -> float:
    """Seconds of the chunks that trained a row, each chunk counted once."""
    chunks = rows.drop_duplicates(["wall_time", "replicas"])
    return float(pd.to_numeric(chunks["wall_time"], errors="coerce").sum())


def _paper_solved_at(paper) -> float | None:
    """The paper's solved-at median (tables) or mean (Fig. 3 counts)."""
    median = getattr(paper, "solved_at_median", None)
    return median if median is not None else getattr(paper, "solved_at_mean", None)


def still_to_run(results: pd.DataFrame, part: Part, models=None) -> list[str]:
    """The part's rows without every seed at the paper's budget, grouped.

    Example (no results at all):

    >>> still_to_run(pd.DataFrame(), PARTS["table1"])
    ['mul: nac_mul, nalu, nmu']
    """
    seeds = set(range(part.seeds))
    done = set()
    if not results.empty:
        complete = results.groupby("config_id")["seed"].agg(lambda s: seeds <= set(s))
        done = set(complete[complete].index)
    grouped: dict[str, list[str]] = {}
    for config in part.configs(None, models):
        if config_id(config) in done:
            continue
        if part.name == "fig3_hidden":
            key, value = f"{config.model}, hidden size", str(config.hidden_size)
        elif part.name == "fig3_range":
            key, value = config.model, config.interpolation_range
        else:
            key, value = config.operation, config.model
        grouped.setdefault(key, []).append(value)
    return [f"{key}: {', '.join(values)}" for key, values in grouped.items()]


def hidden_size_readings(
    results: pd.DataFrame, settings: Mapping = NO_SETTINGS
) -> pd.DataFrame:
    """Fig. 3's hidden-size points read three ways, with first and last success.

    Per (model, hidden size, budget, engine): success at the best-validation step
    (`success`, the paper's rule), at any evaluation (`solved_at` set) and
    at the final step (`final_success`; NaN where a row did not record it),
    the medians of the first and the last solved step over the seeds that
    solved at some evaluation, and how many of those lost it by the end.
    `settings`: as for `sweep_groups`.
    """
    rows = part_rows(results, PARTS["fig3_hidden"].with_settings(settings))
    if rows.empty:
        return pd.DataFrame()
    readings = []
    for (model, hidden, budget, engine), group in rows.groupby(
        ["model", "hidden_size", "max_iterations", "engine"], sort=False
    ):
        found = group["solved_at"].notna()
        final = group["final_success"] if "final_success" in group else None
        final_known = final is not None and final.notna().all()
        final_count = int(final.astype(bool).sum()) if final_known else math.nan
        lost = int((found & ~final.astype(bool)).sum()) if final_known else math.nan
        last = group.get("last_solved_at", pd.Series(math.nan, index=group.index))
        paper = FIG_3_HIDDEN_SIZE.get((model, int(hidden)))
        ablation = HIDDEN_SIZE_ABLATION.get((model, int(hidden)))
        readings.append(
            {
                "model": model,
                "hidden_size": int(hidden),
                "max_iterations": int(budget),
                "engine": engine,
                "n": len(group),
                "best_step": int(group["success"].astype(bool).sum()),
                "any_evaluation": int(found.sum()),
                "final_step": final_count,
                "found_and_lost": lost,
                "first_solved_median": group.loc[found, "solved_at"].median(),
                "last_solved_median": pd.to_numeric(last[found]).median(),
                "paper": None if paper is None else f"{paper.successes}/{paper.seeds}",
                "ablation": None
                if ablation is None
                else f"{ablation.successes}/{ablation.seeds}",
            }
        )
    return pd.DataFrame(readings)


def hidden_size_seeds(
    results: pd.DataFrame, settings: Mapping = NO_SETTINGS
) -> pd.DataFrame:
    """Each Fig. 3 hidden-size seed: verdict, first and last solved step."""
    rows = part_rows(results, PARTS["fig3_hidden"].with_settings(settings))
    columns = [
        "model",
        "hidden_size",
        "max_iterations",
        "engine",
        "seed",
        "success",
        "best_step",
        "solved_at",
        "last_solved_at",
        "final_success",
    ]
    return rows.reindex(columns=columns).reset_index(drop=True)


# --- text -----------------------------------------------------------------------------


def _percent(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{100 * value:.0f}%"


def _text(value) -> str:
    return "—" if value is None or pd.isna(value) else str(value)


def _number(value) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.2g}"


def _counted(count: int, name: str) -> str:
    """`1 chunk`, `2 chunks`."""
    return f"{count} {name}" + ("" if count == 1 else "s")


def _count_cell(count, n) -> str:
    if pd.isna(count):
        return "—"
    rate, lower, upper = success_rate_interval(int(count), int(n))
    return f"{int(count)}/{n} {_percent(rate)} [{_percent(lower)}, {_percent(upper)}]"


def comparison_markdown(table: pd.DataFrame, part: Part) -> str:
    """One part's comparison as a Markdown table."""
    keys = [key for key in part.by if key != "extrapolation_range"]
    mean = part.name == "fig3_hidden"  # Fig. 3's counts come with mean steps
    solved_at = "solved_at_mean" if mean else "solved_at_median"
    header = [
        *keys,
        "steps",
        "seeds",
        "ours [Wilson 95 %]",
        "paper [95 %]",
        "verdict",
        "reason",
        "solved at, mean (ours / paper)" if mean else "solved at (ours / paper)",
        "sparsity error (ours / paper)",
        "device, wall time",
        "note",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.to_dict("records"):
        key_cells = [str(row[key]) for key in keys]
        if "interpolation_range" in keys:
            index = keys.index("interpolation_range")
            key_cells[index] = f"{row['interpolation_range']} → "
            key_cells[index] += str(row["extrapolation_range"])
        ours = (
            f"{_percent(row['success_rate'])} [{_percent(row['success_lower'])}, "
            f"{_percent(row['success_upper'])}]"
        )
        paper = "—"
        if row["paper_rate"] is not None and not pd.isna(row["paper_rate"]):
            paper = (
                f"{_percent(row['paper_rate'])} [{_percent(row['paper_lower'])}, "
                f"{_percent(row['paper_upper'])}]"
            )
        cells = [
            *key_cells,
            power(row["max_iterations"]),
            str(row["n"]),
            ours,
            paper,
            row["verdict"],
            row["reason"],
            f"{_number(row[solved_at])} / {_number(row['paper_solved_at'])}",
            f"{_number(row['sparsity_error_mean'])} / "
            f"{_number(row['paper_sparsity_error'])}",
            f"{row['device']}, {row['wall_time']:.0f} s",
            row["note"],
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def readings_markdown(readings: pd.DataFrame) -> str:
    """The three-way Fig. 3 hidden-size table as Markdown."""
    header = [
        "model",
        "hidden size",
        "steps",
        "engine",
        "best-validation step (paper's rule)",
        "any evaluation",
        "final step",
        "found, then lost",
        "first solved (median)",
        "last solved (median)",
        "paper (Fig. 3, read off its error bars)",
        "paper (App. C.3, Fig. 7)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in readings.to_dict("records"):
        n = row["n"]
        cells = [
            row["model"],
            str(row["hidden_size"]),
            power(row["max_iterations"]),
            row["engine"],
            _count_cell(row["best_step"], n),
            _count_cell(row["any_evaluation"], n),
            _count_cell(row["final_step"], n),
            "—" if pd.isna(row["found_and_lost"]) else str(int(row["found_and_lost"])),
            _number(row["first_solved_median"]),
            _number(row["last_solved_median"]),
            _text(row["paper"]),
            _text(row["ablation"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def summary_text(
    results: pd.DataFrame,
    names: Sequence[str],
    models=None,
    settings: Mapping = NO_SETTINGS,
) -> str:
    """Every selected part's table, the Fig. 3 readings and what is left.

    Each part's pieces sit between named markers (`section`), so a page can
    include one of them: `<part>` (the table), `<part>-three-ways` (Fig. 3's
    readings) and `<part>-to-run` (the rows still to run); `verdict` is the
    rule in words, and `dropped`, where `load_tables` left rows out, says
    which and why.
    """
    sections = [section("verdict", VERDICT_RULE)]
    dropped = results.attrs.get("dropped", [])
    if dropped:
        lines = "".join(f"- {line}\n" for line in dropped)
        sections.append(section("dropped", f"Rows left out:\n\n{lines}"))
    for name in names:
        part = PARTS[name].with_settings(settings)
        table = comparison(results, part)
        if models is not None and not table.empty:
            table = table[table["model"].isin(models)]
        sections.append(f"## {part.title}\n")
        body = "No results yet.\n"
        if not table.empty:
            body = comparison_markdown(table, part)
        if name == "fig3_hidden":
            body += f"\n{FIG_3_COUNTS_NOTE}\n"
        sections.append(section(name, body))
        if name == "fig3_hidden":
            readings = hidden_size_readings(results, settings)
            if models is not None and not readings.empty:
                readings = readings[readings["model"].isin(models)]
            if not readings.empty:
                sections.append("Success three ways:\n")
                text = readings_markdown(readings) + f"\n{FIG_3_COUNTS_NOTE}\n"
                sections.append(section(f"{name}-three-ways", text))
        missing = still_to_run(results, part, models)
        budget = f"{part.seeds} seeds at {power(part.budget)} steps"
        if missing:
            text = f"Still to run ({budget}): " + "; ".join(missing) + "\n"
        else:
            text = f"Every row has {budget}.\n"
        sections.append(section(f"{name}-to-run", text))
    return "\n".join(sections)


# --- the command ---------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = options.add_mutually_exclusive_group(required=True)
    action.add_argument("--full", action="store_true", help="train, then summarize")
    action.add_argument("--dry-run", action="store_true", help="print the plan")
    action.add_argument("--summarize", action="store_true", help="only the tables")
    options.add_argument(
        "--only",
        default=",".join(PRIORITY),
        help=f"parts, comma-separated, trained in this order: {list(PRIORITY)}",
    )
    options.add_argument("--models", help="only these presets, comma-separated")
    options.add_argument(
        "--hidden-sizes", help="only these Fig. 3 hidden sizes, e.g. 4,10"
    )
    options.add_argument(
        "--seeds", help="every part's seeds (default 0-99, Fig. 3 0-49, NALM 0-24)"
    )
    options.add_argument(
        "--iterations",
        type=int,
        help="every part's steps (default: the paper's, 5·10⁶; Table 1 2·10⁵)",
    )
    options.add_argument(
        "--chunk-size",
        type=int,
        default=1000,
        help="replicas a chunk (with --time-limit: the most; chunks are sized to "
        "finish inside it)",
    )
    add_filling_flags(options)
    options.add_argument(
        "--time-limit",
        type=float,
        help="seconds: chunks sized from measured step times so that each "
        "finishes inside it; rerun the same command to continue",
    )
    options.add_argument(
        "--fixed-chunks",
        action="store_true",
        help="with --time-limit: chunks of --chunk-size, stopped at the limit "
        "after a backup, instead of chunks sized to finish",
    )
    options.add_argument(
        "--backup-every", type=float, default=BACKUP_EVERY, help="seconds"
    )
    options.add_argument(
        "--reference-settings",
        action="store_true",
        help="train with the reference code's step: Adam's epsilon 1e-8 and the "
        "sparsity strength recomputed every step (its own config ids; default "
        f"--out {OUT_REFERENCE.relative_to(RESULTS.parent)})",
    )
    options.add_argument(
        "--out",
        help=f"folder of results.csv (default {OUT.relative_to(RESULTS.parent)})",
    )
    options.add_argument(
        "--nalm-out", default=str(nalm.OUT), help="folder of the NALM results.csv"
    )
    options.add_argument(
        "--reuse",
        default=",".join(str(path) for path in REUSE),
        help="other results files whose rows join the tables, comma-separated",
    )
    options.add_argument(
        "--rate", type=float, default=4e4, help="seed-steps/s for --dry-run's estimate"
    )
    options.add_argument(
        "--step-rate", type=float, help="steps/s of one chunk, for --dry-run"
    )
    return options


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    filling_options(args)  # XLA's flags, before anything starts JAX
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in PRIORITY]
    if unknown:
        raise SystemExit(
            f"paper.py: unknown parts {unknown}; expected {list(PRIORITY)}"
        )
    models = None if args.models is None else args.models.split(",")
    settings = REFERENCE_SETTINGS if args.reference_settings else NO_SETTINGS
    out = Path(args.out or (OUT_REFERENCE if args.reference_settings else OUT))
    results_path = out / "results.csv"
    hidden_sizes = None
    if args.hidden_sizes is not None:
        hidden_sizes = [int(size) for size in args.hidden_sizes.split(",")]
    groups = sweep_groups(
        names, args.seeds, args.iterations, models, hidden_sizes, settings
    )
    nalm_cells = _nalm_cells(args) if NALM in names else []
    if args.dry_run:
        print(
            plan_text(
                groups,
                results_path,
                args.chunk_size,
                args.rate,
                args.step_rate,
                args.chunks_per_device,
                _pack_replicas(args),
            )
        )
        if nalm_cells:
            left = nalm.seed_steps_left(
                nalm_cells, _nalm_seeds(args), Path(args.nalm_out) / "results.csv"
            )
            print(
                f"NALM benchmark (benchmarks/nalm.py): {len(nalm_cells)} cells, "
                f"still to train: {left:.3e} seed-steps"
            )
        return 0
    complete = True
    if args.full:
        complete = train(groups, nalm_cells, names, results_path, args)
    parts = [name for name in names if name != NALM]
    if parts:
        reuse = [Path(path) for path in args.reuse.split(",") if path]
        results = load_tables([results_path, *reuse])
        text = summary_text(results, parts, models, settings)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.md").write_text(text, encoding="utf-8")
        if "fig3_hidden" in parts:
            hidden_size_seeds(results, settings).to_csv(
                out / "fig3_hidden_seeds.csv", index=False
            )
        print(text)
    if nalm_cells:
        nalm_text = nalm.write_summary(Path(args.nalm_out))
        print(nalm_text or "NALM benchmark: no results yet.")
    if not complete:
        print("Stopped at the time limit: run the same command again to continue.")
    return 0


def _pack_replicas(args) -> int:
    """`--pack-replicas`, or the default of this device and engine."""
    if args.pack_replicas is not None:
        return args.pack_replicas
    from keras_nalu.sweeps.local import default_pack_replicas

    return default_pack_replicas()


def _nalm_seeds(args) -> str:
    return args.seeds or nalm.SEEDS


def _nalm_cells(args) -> list:
    """The NALM benchmark's cells (every unit, operation, range, input size)."""
    cells = nalm.plan(
        nalm.NALM_INPUT_SIZES,
        list(nalm.UNITS),
        ("add", "sub", "mul", "div"),
        iterations=args.iterations,
    )
    if args.models is None:
        return cells
    return [cell for cell in cells if cell.preset in args.models.split(",")]


def train(groups, nalm_cells, names, results_path: Path, args) -> bool:
    """Trains the parts in the order of `names`; False if the time limit stopped it.

    With `--time-limit` (and not `--fixed-chunks`), chunks are sized from
    measured step times so that each finishes inside the limit
    (`keras_nalu.sweeps.planning.sweep_within`), and each finished chunk
    prints a line.
    """
    from keras_nalu.sweeps.planning import sweep_within
    from keras_nalu.sweeps.runner import run_sweep

    deadline = None
    if args.time_limit is not None:
        deadline = time.monotonic() + args.time_limit
    planned = deadline is not None and not args.fixed_chunks
    by_name = {name: (seeds, configs) for name, seeds, configs in groups}
    results_path.parent.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(names):
        if name == NALM:
            if not nalm_cells:
                continue
            started = time.perf_counter()
            complete = nalm.train(
                nalm_cells,
                _nalm_seeds(args),
                Path(args.nalm_out) / "results.csv",
                args.chunk_size,
                deadline if planned else None,
                args.backup_every,
            )
            print(f"NALM benchmark: {time.perf_counter() - started:.0f} s")
            if not complete:
                return False
            continue
        if name not in by_name:
            continue
        seeds, configs = by_name[name]
        time_limit = None
        if deadline is not None:
            time_limit = max(deadline - time.monotonic(), 0.0)
            if index and not time_limit:
                return False
        started = time.perf_counter()
        if planned:
            complete = sweep_within(
                configs,
                seeds,
                results_path,
                deadline,
                chunk_size=args.chunk_size,
                backup_every=args.backup_every,
                **filling_options(args),
            )
            print(
                f"{PARTS[name].title}: {time.perf_counter() - started:.0f} s"
                + ("" if complete else ", stopped at the time limit")
            )
        else:
            outcome = run_sweep(
                configs,
                seeds,
                results_path,
                chunk_size=args.chunk_size,
                backup_every=args.backup_every,
                time_limit=time_limit,
                **filling_options(args),
            )
            complete = outcome.complete
            print(
                f"{PARTS[name].title}: {len(configs)} configurations × "
                f"{len(seeds)} seeds: {outcome.new_rows} new rows, "
                f"{outcome.skipped} already there, "
                f"{time.perf_counter() - started:.0f} s"
            )
        if not complete:
            return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
