"""Chunk sizes that finish inside a wall-clock budget, from measured step times
(`sweep_within`; the steps are told in docs/architecture.md)."""

from __future__ import annotations

import bisect
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from keras_nalu._validation import check_positive_int
from keras_nalu.experiments import ExperimentConfig, total_steps
from keras_nalu.sweeps.engines.loop import BACKUP_EVERY

#: The share of the time left that a planned chunk may use.
MARGIN = 0.8

#: The replicas of the first measurement, how much larger each next one may
#: be, and how many there may be (`plan_chunk_size`).
FIRST_MEASURED = 64
GROWTH = 8
MEASUREMENTS = 3

#: Evaluation intervals a measurement trains: the first compiles.
MEASURED_INTERVALS = 3


def _step_fields(config: ExperimentConfig) -> tuple:
    """What a step's time depends on: the recipe without its length."""
    from keras_nalu.sweeps.engines import RECIPE_FIELDS

    return tuple(
        getattr(config, name) for name in RECIPE_FIELDS if name != "iterations"
    )


@dataclasses.dataclass
class StepTimes:
    """Seconds per step of a chunk of R replicas, of one recipe on one device.

    `per_replicas` maps R to the seconds of one step of R replicas
    (evaluation included); `overhead` is what a chunk spends before its
    first step. Between measured sizes the time is interpolated linearly,
    below them the smallest's, beyond them growing in proportion to R: both
    overestimate, as a step costs a fixed part plus a part per replica.

    Example:

    >>> times = StepTimes({100: 0.01, 1000: 0.04}, overhead=5.0)
    >>> round(times.per_step(550), 3), round(times.per_step(2000), 3)
    (0.025, 0.08)
    >>> times.seconds(100, 1000)
    15.0
    >>> times.largest_within(seconds=400, steps=10_000, cap=1000)
    745
    """

    per_replicas: dict[int, float] = dataclasses.field(default_factory=dict)
    overhead: float = 0.0

    def per_step(self, replicas: int) -> float:
        sizes = sorted(self.per_replicas)
        if not sizes:
            raise ValueError("StepTimes has no measured size yet")
        if replicas <= sizes[0]:
            return self.per_replicas[sizes[0]]
        if replicas >= sizes[-1]:
            return self.per_replicas[sizes[-1]] * replicas / sizes[-1]
        upper = bisect.bisect_left(sizes, replicas)
        low, high = sizes[upper - 1], sizes[upper]
        share = (replicas - low) / (high - low)
        return self.per_replicas[low] + share * (
            self.per_replicas[high] - self.per_replicas[low]
        )

    def seconds(self, replicas: int, steps: int) -> float:
        """Predicted wall time of a chunk of `replicas` training `steps`."""
        return self.overhead + steps * self.per_step(replicas)

    def largest_within(self, seconds: float, steps: int, cap: int) -> int:
        """The most replicas (≤ `cap`) whose chunk of `steps` fits in
        `seconds` with the margin; 0 if not even one does."""
        budget = MARGIN * seconds
        if self.seconds(1, steps) > budget:
            return 0
        low, high = 1, cap
        while low < high:  # the time grows with the replicas
            middle = (low + high + 1) // 2
            if self.seconds(middle, steps) <= budget:
                low = middle
            else:
                high = middle - 1
        return low


def step_times_from_results(
    table: pd.DataFrame, config: ExperimentConfig, device: str, engine: str
) -> StepTimes:
    """The step times earlier chunks of `config`'s recipe (any length) took
    on this engine and device: `wall_time` over `iterations`, the slowest
    chunk of each size."""
    times = StepTimes()
    if table.empty or "wall_time" not in table:
        return times
    rows = table[(table["device"] == device) & (table["engine"] == engine)]
    rows = rows[(rows["wall_time"] > 0) & (rows["iterations"] > 0)]
    from keras_nalu.sweeps.results import config_of_row

    wanted = _step_fields(config)
    for row in rows.to_dict("records"):
        other = config_of_row(row)
        if other is None or _step_fields(other) != wanted:
            continue
        replicas = int(row.get("replicas") or 1)
        seconds = float(row["wall_time"]) / float(row["iterations"])
        times.per_replicas[replicas] = max(
            seconds, times.per_replicas.get(replicas, 0.0)
        )
    return times


def measure_step_time(
    config: ExperimentConfig, replicas: int, intervals: int = MEASURED_INTERVALS
) -> tuple[float, float]:
    """`(seconds per step, overhead)` of a chunk of `replicas` of `config`,
    trained for `intervals` evaluation intervals (nothing is written): the
    first compiles, the others are timed; the overhead is the rest."""
    from keras_nalu.sweeps.chunks import Chunk
    from keras_nalu.sweeps.training import train_chunk

    # no longer than the run itself
    intervals = max(min(int(intervals), -(-config.iterations // config.eval_every)), 1)
    probe = dataclasses.replace(
        config, iterations=min(intervals * config.eval_every, config.iterations)
    )
    marks = []
    started = time.perf_counter()
    train_chunk(
        Chunk(probe, tuple(range(replicas))),
        progress=lambda steps: marks.append(time.perf_counter()),
    )
    finished = time.perf_counter()
    # one mark per interval's steps (a restored run reports its start first)
    timed = marks[-intervals:] if len(marks) >= intervals else marks
    if len(timed) >= 2:
        per_step = (timed[-1] - timed[0]) / ((len(timed) - 1) * config.eval_every)
    else:
        per_step = (finished - started) / probe.iterations
    overhead = max(finished - started - per_step * probe.iterations, 0.0)
    return per_step, overhead


def plan_chunk_size(
    config: ExperimentConfig,
    deadline: float,
    cap: int,
    times: StepTimes,
    measure: Callable[[ExperimentConfig, int], tuple[float, float]] = (
        measure_step_time
    ),
    log: Callable[[str], None] = print,
) -> int:
    """The replicas (≤ `cap`; 0: not even one) of a chunk of `config`'s recipe
    that finishes by `deadline` (a `time.monotonic()` time).

    Known step times first; without any, `FIRST_MEASURED` replicas are
    measured, and where the answer lies beyond twice the largest size
    measured, a larger one (at most `GROWTH` times), `MEASUREMENTS` in all.
    """
    steps = total_steps(config)

    def largest() -> int:
        left = deadline - time.monotonic()
        return times.largest_within(left, steps, cap) if left > 0 else 0

    for _ in range(MEASUREMENTS):
        if times.per_replicas:
            size, measured = largest(), max(times.per_replicas)
            if size <= 2 * measured:
                return size
            size = min(size, GROWTH * measured)
        else:
            size = min(cap, FIRST_MEASURED)
        per_step, overhead = measure(config, size)
        times.per_replicas[size] = per_step
        times.overhead = max(times.overhead, overhead)
        log(
            f"measured {config.model}: {per_step * 1e3:.3g} ms a step at "
            f"{size} replicas ({size / per_step:,.0f} seed-steps/s), "
            f"{overhead:.0f} s to start"
        )
    return largest()


def sweep_within(
    configs: Sequence[ExperimentConfig],
    seeds: Sequence[int],
    results_path: str | Path,
    deadline: float,
    chunk_size: int = 1000,
    backup_every: float = BACKUP_EVERY,
    chunks_per_device: int = 1,
    log: Callable[[str], None] = print,
    **options,
) -> bool:
    """Trains the runs `results_path` lacks in chunks that finish by `deadline`.

    Recipe by recipe, in order, in chunks of `plan_chunk_size` (at most
    `chunk_size`), each started only if predicted to finish by `deadline`
    (a `time.monotonic()` time), a line logged as each ends. `options` are
    other `run_sweep` keywords (`processes_per_device`, ...).

    Returns:
        True if every run is in the file, False if the deadline stopped it.
    """
    from keras_nalu.sweeps.chunks import chunk_backup
    from keras_nalu.sweeps.engines import device_name, engine_name, read_backup, recipe
    from keras_nalu.sweeps.results import config_id, done_pairs, read_results
    from keras_nalu.sweeps.runner import run_sweep

    check_positive_int("sweep_within", "chunk_size", chunk_size)
    path = Path(results_path)
    device, engine = device_name(), engine_name()
    by_recipe: dict[tuple, list[ExperimentConfig]] = {}
    for config in configs:
        by_recipe.setdefault(recipe(config), []).append(config)

    def on_chunk(rows):
        log(
            f"chunk done: {len(rows)} runs of {rows[0]['model']} "
            f"({rows[0]['replicas']} replicas, {rows[0]['wall_time']:.0f} s) "
            f"written to {path}; {deadline - time.monotonic():.0f} s left"
        )

    for group in by_recipe.values():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        table = read_results(path)
        done = done_pairs(table)
        runs_left = sum((config_id(c), s) not in done for c in group for s in seeds)
        if not runs_left:
            continue
        times = step_times_from_results(table, group[0], device, engine)
        size = plan_chunk_size(
            group[0], deadline, min(chunk_size, runs_left), times, log=log
        )
        steps = total_steps(group[0])

        def chunk_seconds(chunk, times=times, steps=steps):
            backup = chunk_backup(path, chunk)
            start = read_backup(backup)[0]["step"] if backup.is_file() else 0
            return times.seconds(chunk.replicas, steps - start)

        if size == 0:
            log(
                f"{group[0].model}: one replica of {steps:,} steps does not finish "
                f"in the {deadline - time.monotonic():.0f} s left; training "
                f"chunks of {chunk_size} with backups, to be continued by the next call"
            )
            size, chunk_seconds = chunk_size, None

        outcome = run_sweep(
            group,
            seeds,
            path,
            chunk_size=size,
            progress=False,
            on_chunk=on_chunk,
            backup_every=backup_every,
            time_limit=max(deadline - time.monotonic(), 0.0),
            chunks_per_device=chunks_per_device,
            chunk_seconds=chunk_seconds,
            **options,
        )
        if not outcome.complete:
            return False
    return True


__all__ = [
    "FIRST_MEASURED",
    "GROWTH",
    "MARGIN",
    "MEASUREMENTS",
    "StepTimes",
    "measure_step_time",
    "plan_chunk_size",
    "step_times_from_results",
    "sweep_within",
]
