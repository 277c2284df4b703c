"""The plan of `benchmarks/paper.py`: the paper's tables and panels as data.

`PARTS` holds each table and panel of Madsen & Johansen (2020) that
`paper.py` trains (its configurations, seeds, budget, how its rows are
grouped and the published numbers), `PRIORITY` the order `--full` trains
them in, `sweep_groups` the sweeps they make (a configuration shared by
parts trains once) and `plan_text` what `--dry-run` prints. The tables
read from the rows are `paper_tables.py`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from published import (
    ARITHMETIC_BUDGET,
    FIG_3_HIDDEN_SIZE,
    FIG_3_HIDDEN_SIZES,
    FIG_3_MODELS,
    FIG_3_RANGES,
    FIG_3_SEEDS,
    SIMPLE_BUDGET,
    TABLE_1,
    TABLE_2,
    TABLE_2_ROWS,
    TABLE_5,
    TABLE_6,
    TABLE_6_MODELS,
    TABLE_6_OPERATIONS,
    published_row,
)

from keras_nalu.experiments import ExperimentConfig, total_steps
from keras_nalu.sweeps.grid import parse_seeds
from keras_nalu.sweeps.results import config_id

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
summary lists what it left out (`paper_tables.load_tables`)."""

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
                f"{_fields_text(config):<40} seeds {seeds_text(seeds):>6} "
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


def seeds_text(seeds: Sequence[int]) -> str:
    """Consecutive seeds as a range (`0-99`), others as their count."""
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return str(len(seeds))


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _counted(count: int, name: str) -> str:
    """`1 chunk`, `2 chunks`."""
    return f"{count} {name}" + ("" if count == 1 else "s")
