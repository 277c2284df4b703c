"""`run_sweep`: a grid of configurations × seeds into one resumable results CSV
(the pipeline, from `SweepOptions` to the rows: docs/architecture.md)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from keras_nalu._files import backup_folder, check_output_folder
from keras_nalu.errors import ArgumentError, literal
from keras_nalu.experiments import ExperimentConfig, check_run_memory
from keras_nalu.sweeps.chunks import (
    Chunk,
    backed_up_chunks,
    chunk_backup,
    plan_chunks,
    remove_finished_backups,
)
from keras_nalu.sweeps.cluster import backed_up_chunks_in, run_on_ray
from keras_nalu.sweeps.engines import TimeLimitReached, engine_class, engine_name
from keras_nalu.sweeps.grid import grid_configs, normalize_grid, parse_seeds
from keras_nalu.sweeps.local import train_locally
from keras_nalu.sweeps.options import SweepOptions
from keras_nalu.sweeps.results import (
    CONFIG_FIELDS,
    RESULT_COLUMNS,
    append_results,
    check_results_path,
    config_id,
    done_pairs,
    read_results,
    results_lock,
)

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class SweepOutcome:
    """What a sweep did: the results file, its rows of this sweep, the counts."""

    path: Path
    results: pd.DataFrame
    new_rows: int
    skipped: int
    group_by: tuple[str, ...]
    #: False when the sweep stopped at its `time_limit` with runs left.
    complete: bool = True
    #: The backups of this sweep's chunks left to continue (beside the file).
    backups: tuple[Path, ...] = ()


def run_sweep(
    grid: Mapping | Sequence[ExperimentConfig],
    seeds: str | Iterable[int],
    results_path: str | os.PathLike,
    options: SweepOptions | None = None,
    *,
    progress: bool = True,
    on_chunk: Callable[[list[dict]], None] | None = None,
    **keywords,
) -> SweepOutcome:
    """Trains every (configuration, seed) of a grid that the results file lacks.

    The chunks in training are backed up beside the file, and a rerun skips
    the pairs already in it and continues the backed-up chunks first.

    Args:
        grid: `{field or "f1:f2": values}` (see `normalize_grid`), the
            output of `parse_grid` / `load_grid_file`, or a list of
            `ExperimentConfig`s (their seeds ignored).
        seeds: `"0-99"`, `"0,3,7-9"` or a list of integers.
        results_path: the results CSV; created if missing, else resumed.
        options: how the chunks train (`SweepOptions`); None for the options
            the keywords name.
        progress: one tqdm bar over all seed-steps of the sweep, with an ETA.
        on_chunk: called with the rows of each chunk once they are on disk.
        **keywords: without `options`, the fields of `SweepOptions` and of
            `FillingOptions` by name (`chunk_size=10`, `pack_replicas=0`, ...).

    Returns:
        A `SweepOutcome`; its `results` are this sweep's rows of the file.

    Raises:
        ValueError: a bad grid, seeds or option, or a results file that is
            not one (left untouched).
        ClusterError: the Ray cluster could not be reached or was lost, or
            a chunk failed on it; the finished chunks' rows are written.

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.csv"
    >>> outcome = run_sweep(
    ...     {"model": ["nau"], "input_size": [10], "iterations": [100],
    ...      "eval_every": [100]}, seeds="0-1", results_path=path,
    ...     progress=False)
    >>> outcome.new_rows, list(outcome.results["seed"])
    (2, [0, 1])
    >>> run_sweep({"model": ["nau"], "input_size": [10], "iterations": [100],
    ...            "eval_every": [100]}, "0-1", path, progress=False).skipped
    2
    """
    if options is None:
        options = SweepOptions.from_keywords(**keywords)
    elif not isinstance(options, SweepOptions) or keywords:
        raise ArgumentError(
            "run_sweep",
            "options",
            options,
            requirement="be a SweepOptions, and no option by name beside it",
            received={"options": options, "keywords": sorted(keywords)},
        )
    options = options.prepared()  # first: before JAX starts
    configs = _sweep_configs(grid)
    seeds = parse_seeds(seeds)
    path = _checked_results_file(results_path, options)
    limits = options.limits(path)
    group_by = _group_keys(grid, configs)
    with results_lock(path):
        appender = ResultsAppender(path, on_chunk)
        planned_pairs = {(config_id(c), s) for c in configs for s in seeds}
        done = done_pairs(appender.table)
        backups = None
        if limits.folder is not None:
            backups = _backups(path, options.backup_dir)
        chunks = _plan(configs, seeds, options.chunk_size, done, backups)
        for chunk in chunks:  # a chunk that cannot fit fails now, not later
            widest = max((c for c, _ in chunk.parts), key=lambda c: c.input_size)
            check_run_memory(widest, chunk.replicas)
        if not options.backups and options.ray_address is None:
            todo = planned_pairs - done
            unused = [c for c, _ in backed_up_chunks(path) if c.pairs & todo]
            if unused:
                logger.info(
                    f"{len(unused)} chunk backups in {path.name}.backup/ are not "
                    "continued (backups are off): their runs train from the start, "
                    "and each backup is removed once its runs have rows"
                )
        with _progress_bar(progress, chunks) as on_steps:
            complete = _dispatch(chunks, appender, on_steps, limits, options, path)
        with contextlib.suppress(OSError):  # only if no backup is left in it
            backup_folder(path).rmdir()
    table = appender.table
    mine = table[
        table["config_id"].astype(str).isin({config_id(c) for c in configs})
        & table["seed"].isin(seeds)
    ].reset_index(drop=True)
    left = tuple(b for b in (chunk_backup(path, c) for c in chunks) if b.is_file())
    skipped = len(planned_pairs & done)
    return SweepOutcome(
        path, mine, appender.new_rows, skipped, group_by, complete, left
    )


def _checked_results_file(results_path, options: SweepOptions) -> Path:
    """The results file, its folder writable, and where backups go no file."""
    path = check_results_path(results_path)
    check_output_folder(path.parent, "results_path", results_path)
    folder = backup_folder(path)
    here = options.ray_address is None
    if options.backups and here and folder.is_file():
        raise ArgumentError(
            "",
            "results_path",
            str(results_path),
            problem=f"{{results_path}} {literal(repr(str(results_path)))}: "
            f"{literal(folder)} is a file, where the sweep keeps the backups of its "
            "chunks in training; move that file aside, or train without backups.",
            received={},
        )
    return path


class ResultsAppender:
    """Adds each finished chunk's rows to the results file (lock held), in the
    sweep's thread, and removes the backups of runs that now have rows; `table`
    is the whole file as it is now, `new_rows` the rows added so far."""

    def __init__(self, path: Path, on_chunk: Callable[[list[dict]], None] | None):
        self.path = path
        self.on_chunk = on_chunk
        self.table = read_results(path)
        self.new_rows = 0

    def __call__(self, rows: list[dict]) -> None:
        append_results(rows, self.path)
        new = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
        frames = [self.table, new] if len(self.table) else [new]
        self.table = pd.concat(frames, ignore_index=True)
        self.new_rows += len(rows)
        remove_finished_backups(self.path, done_pairs(self.table))
        if self.on_chunk is not None:
            self.on_chunk(rows)


@contextlib.contextmanager
def _progress_bar(progress: bool, chunks: Sequence[Chunk]):
    """One tqdm bar over the seed-steps of `chunks`; yields its `on_steps`, whose
    steps not trained here (`trained=False`) count in neither rate nor ETA."""
    if not progress:
        yield lambda steps, trained=True: None
        return
    from tqdm.auto import tqdm

    bar = tqdm(
        total=sum(chunk.steps for chunk in chunks),
        desc=f"sweep {len(chunks)} chunks",
        unit="seed-step",
        unit_scale=True,
        dynamic_ncols=True,
    )

    def on_steps(steps: int, trained: bool = True) -> None:
        if trained or bar.disable:
            bar.update(steps)
            return
        # tqdm's rate: its smoothed steps per second since the last print
        # (n - last_print_n), else (n - initial) / elapsed
        bar.n += steps
        bar.last_print_n += steps
        bar.initial += steps
        bar.refresh()

    try:
        yield on_steps
    finally:
        bar.close()


def _dispatch(chunks, on_rows, on_steps, limits, options, results_path) -> bool:
    """Trains `chunks` here or on Ray; False if it stopped at the deadline."""
    if not chunks:
        return True
    if options.ray_address is not None:
        run_on_ray(
            chunks,
            on_rows,
            on_steps,
            options.ray_address,
            results_path,
            limits,
            options.gpus_per_chunk,
            options.backups,
        )
        return True
    try:
        train_locally(
            chunks, on_rows, on_steps, limits, options.filling, options.chunk_seconds
        )
    except TimeLimitReached:
        return False
    return True


def plan_sweep(
    grid: Mapping | Sequence[ExperimentConfig],
    seeds: str | Iterable[int],
    results_path: str | os.PathLike,
    chunk_size: int = 100,
) -> list[Chunk]:
    """The chunks `run_sweep` would train now, in order, without training.

    Chunks backed up by an earlier sweep of the file come first, then the
    runs the file lacks, cut and packed as `run_sweep` cuts them on the Keras
    backend's engine.

    Example:

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.csv"
    >>> chunks = plan_sweep({"model": ["nau"], "iterations": [100]}, "0-4",
    ...                     path, chunk_size=2)
    >>> [chunk.seeds for chunk in chunks]
    [(0, 1), (2, 3), (4,)]
    """
    configs = _sweep_configs(grid)
    seeds = parse_seeds(seeds)
    path = check_results_path(results_path)
    done = done_pairs(read_results(path))
    return _plan(configs, seeds, chunk_size, done, _backups(path))


def _backups(path: Path, backup_dir=None) -> list[tuple[Chunk, str]]:
    """`(chunk, engine)` of the backups beside `path`, or in Ray's `backup_dir`."""
    if backup_dir is None:
        return backed_up_chunks(path)
    return backed_up_chunks_in(path, backup_dir)


def _plan(configs, seeds, chunk_size, done, backups=None) -> list[Chunk]:
    """The `backups`' chunks of this engine still wholly to train, then the rest."""
    todo = {(config_id(c), s) for c in configs for s in seeds} - done
    resumed, here = [], engine_name()
    for chunk, engine in backups or ():
        if engine == here and chunk.pairs <= todo:
            resumed.append(chunk)
            todo -= chunk.pairs
            done = done | chunk.pairs
    batch = engine_class().supports_batched
    return resumed + plan_chunks(configs, seeds, chunk_size, done, batch=batch)


def _sweep_configs(grid) -> list[ExperimentConfig]:
    """The configurations of a grid, or a list of configs (checked, seed 0)."""
    if isinstance(grid, Mapping):
        return grid_configs(grid)
    configs = list(grid)
    if not configs or not all(isinstance(c, ExperimentConfig) for c in configs):
        raise ValueError(
            "run_sweep expects a grid mapping or a non-empty list of "
            f"ExperimentConfig objects. Received: {grid!r}"
        )
    return [dataclasses.replace(c, seed=0) for c in configs]


def _group_keys(grid, configs: Sequence[ExperimentConfig]) -> tuple[str, ...]:
    """operation, model, then every other field the grid (or config list) varies."""
    if isinstance(grid, Mapping):
        grid = normalize_grid(grid)
        varied = [key for keys, rows in grid.items() if len(rows) > 1 for key in keys]
    else:
        fields = [field for field in CONFIG_FIELDS if field != "seed"]
        varied = [f for f in fields if len({getattr(c, f) for c in configs}) > 1]
    return tuple(dict.fromkeys(["operation", "model", *varied]))


__all__ = ["SweepOutcome", "plan_sweep", "run_sweep"]
