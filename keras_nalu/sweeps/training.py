"""A sweep's chunks trained to rows, wherever they train: as replica runs
(`train_runs`), or seed by seed where the engine cannot vectorize a preset."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import keras

from keras_nalu.experiments import total_steps
from keras_nalu.keras_utils import optimizer_step
from keras_nalu.sweeps.chunks import Chunk, ChunkLimits, Pack
from keras_nalu.sweeps.engines import (
    NotVectorizableError,
    TimeLimitReached,
    device_name,
    stop_requested,
    train_runs,
    vectorizable,
)
from keras_nalu.sweeps.engines.loop import stop_with, stopped_together
from keras_nalu.sweeps.results import record_row


def train_chunks(
    unit: Chunk | Pack,
    on_rows: Callable[[list[dict]], None],
    progress: Callable[[Chunk], object] | None = None,
    limits: ChunkLimits | None = None,
    unroll: int = 1,
) -> None:
    """Trains a chunk, or a pack's chunks side by side; each chunk's rows as it ends.

    Each chunk is one replica run (`replica_run`, or `batched_run` for a
    chunk of several configurations), continued from its backup in
    `limits.folder`; a pack's runs train in one compiled program
    (`ReplicaRun.train_together`), each as if alone. A finished chunk's rows
    go to `on_rows` before its backup is deleted (`train_runs`).

    Args:
        unit: a `Chunk` or a `Pack`.
        on_rows: called with each chunk's rows once it has finished, and
            with those of the seeds a chunk trained seed by seed finished
            before it stopped.
        progress: None, or per chunk, `progress(chunk)`: what its run
            reports its steps to (see `ReplicaRun.train`).
        limits: the chunks' `ChunkLimits`.
        unroll: as for `ReplicaRun`.

    Raises:
        TimeLimitReached: the chunks left stopped at the deadline, each after
            its backup (a chunk trained seed by seed: between two seeds).
        KeyboardInterrupt: a Ctrl-C (`stop_at_interrupt`) stopped the chunks
            at their next evaluation, after their backups.
    """
    chunks = list(unit.chunks) if isinstance(unit, Pack) else [unit]
    limits = ChunkLimits() if limits is None else limits
    progress = progress or (lambda chunk: False)
    with _retracing_warnings_silenced():
        try:
            runs = [_chunk_run(chunk, unroll) for chunk in chunks]
        except NotVectorizableError:  # this engine cannot: one seed at a time
            for chunk in chunks:
                _train_one_by_one(chunk, on_rows, progress(chunk), limits)
            return
        train_runs(
            runs,
            [progress(chunk) for chunk in chunks],
            [limits.of(chunk) for chunk in chunks],
            on_records=lambda _, records: on_rows([record_row(r) for r in records]),
        )


def train_chunk(
    chunk: Chunk, progress=False, limits: ChunkLimits | None = None, unroll: int = 1
) -> list[dict]:
    """The rows of one chunk (`train_chunks`); `progress` as for `ReplicaRun.train`."""
    rows: list[dict] = []
    train_chunks(chunk, rows.extend, lambda _: progress, limits, unroll)
    return rows


class _ChunkProgress:
    """A chunk's steps, × its replicas, to the sweep's count of seed-steps;
    `resumed` (a backup's) and `ended` (runs stopped early): not trained here."""

    def __init__(self, chunk, on_steps):
        self.chunk = chunk
        self.on_steps = on_steps
        self.reported = 0

    def __call__(self, steps: int, trained: bool = True) -> None:
        done = steps * self.chunk.replicas
        self.reported += done
        self.on_steps(done, trained)

    def resumed(self, steps: int) -> None:
        self(steps, trained=False)

    def ended(self) -> None:
        self.on_steps(max(self.chunk.steps - self.reported, 0), False)


def train_unit(unit, on_rows, on_steps, limits, unroll=1):
    """Trains a chunk or a pack; `on_rows` gets each chunk's rows when done."""
    chunks = unit.chunks if isinstance(unit, Pack) else (unit,)
    progress = {chunk: _ChunkProgress(chunk, on_steps) for chunk in chunks}
    train_chunks(unit, on_rows, progress.get, limits, unroll)
    for chunk_progress in progress.values():
        chunk_progress.ended()


def raise_stopped(stopped: list, left: int) -> None:
    """Raises where the units `stopped`, or the deadline with `left` units."""
    if not stopped and left:
        message = f"the sweep stopped at its time limit with {left} chunks left"
        stopped = [TimeLimitReached(message)]
    if stopped:
        raise stopped_together(stopped)


def fits(chunk, limits, chunk_seconds) -> bool:
    """Whether `chunk` is predicted to finish by the deadline (True if unknown)."""
    if limits.deadline is None or chunk_seconds is None:
        return True
    return time.monotonic() + chunk_seconds(chunk) <= limits.deadline


@contextlib.contextmanager
def _retracing_warnings_silenced():
    """TensorFlow's logger at ERROR while a chunk trains: every chunk traces
    its own function, and TF's retracing warning would repeat for each."""
    if keras.backend.backend() != "tensorflow":
        yield
        return
    import tensorflow as tf

    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        yield
    finally:
        logger.setLevel(level)


def _chunk_run(chunk: Chunk, unroll: int = 1):
    """A chunk's replica run, without `history` (rows hold verdicts, not curves)."""
    from keras_nalu.sweeps.engines import batched_run, replica_run

    if not vectorizable(chunk.config):
        raise NotVectorizableError(chunk.config.model)
    if chunk.more:
        return batched_run(chunk.runs, history=False, unroll=unroll)
    return replica_run(chunk.config, list(chunk.seeds), history=False, unroll=unroll)


def _train_one_by_one(chunk: Chunk, on_rows, progress, limits: ChunkLimits) -> None:
    """Trains the chunk's runs one by one (`run_experiment`): a Ctrl-C stops the
    seed in training at its next evaluation (it starts over on the next sweep,
    without backups), the deadline the chunk between two seeds."""
    rows = []
    try:
        for config in chunk.runs:
            if stop_requested() or (rows and limits.out_of_time()):
                trained = f"{len(rows)} of {chunk.replicas} seeds trained"
                name = f"{config.model}-{config.operation}"
                if stop_requested():
                    raise stop_with(
                        KeyboardInterrupt,
                        f"{name} stopped between two seeds, {trained}",
                        True,
                    )
                raise stop_with(
                    TimeLimitReached,
                    f"{name} stopped at its time limit between two seeds, {trained} "
                    "(this preset trains one seed at a time, without backups)",
                    again=False,
                )
            rows.append(record_row(_one_seed(config, progress, len(rows), chunk)))
    except (KeyboardInterrupt, TimeLimitReached):
        if rows:
            on_rows(rows)
        raise
    on_rows(rows)


def _one_seed(config, progress, finished: int, chunk: Chunk) -> dict:
    """One seed's record, from `run_experiment`; a Ctrl-C stops it unfinished."""
    from keras_nalu.experiments import run_experiment

    keras.backend.clear_session()
    stop = _StopAtInterrupt()
    _, record = run_experiment(config, verbose=progress is True, callbacks=[stop])
    if stop.step is not None:
        raise stop_with(
            KeyboardInterrupt,
            f"{config.model}-{config.operation} seed {config.seed} stopped at step "
            f"{stop.step:,} of {total_steps(config):,}, {finished} of "
            f"{chunk.replicas} seeds trained; it starts over on the next run (this "
            "preset trains one seed at a time, without backups)",
            again=True,
        )
    if callable(progress):
        # the callback counts steps of the whole chunk (all its replicas at
        # once), so one finished seed is 1/replicas of a chunk step
        progress(total_steps(config) // chunk.replicas)
    engine = {"engine": keras.backend.backend(), "device": device_name()}
    return {**record, "replicas": 1, **engine}


class _StopAtInterrupt(keras.callbacks.Callback):
    """Ends a `run_experiment` at its next evaluation after a Ctrl-C; `step`: where
    it stopped (None: it did not)."""

    def __init__(self):
        super().__init__()
        self.step = None

    def on_epoch_end(self, epoch, logs=None):
        if stop_requested() and not self.model.stop_training:
            self.model.stop_training = True
            self.step = optimizer_step(self.model)


__all__ = ["fits", "train_chunk", "train_chunks", "train_unit"]
