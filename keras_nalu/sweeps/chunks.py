"""Chunks of a sweep: seeds of one recipe trained together, and their training.

A sweep's configurations × seeds are cut into `Chunk`s (`plan_chunks`); each
chunk trains as one vectorized run of replicas on the Keras backend's engine
(`train_chunk`), backed up beside the results file (`chunk_backup`), or seed
by seed with `run_experiment` where the engine cannot vectorize the preset.
`keras_nalu.sweeps.runner` decides where the chunks train and writes rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import keras

from keras_nalu._files import backup_folder
from keras_nalu._validation import check_positive_int
from keras_nalu.experiments import ExperimentConfig, total_steps
from keras_nalu.keras_utils import optimizer_step
from keras_nalu.sweeps.engines.loop import (
    TimeLimitReached,
    TrainingLimits,
    stop_requested,
    stop_with,
)
from keras_nalu.sweeps.engines.setup import recipe, vectorizable
from keras_nalu.sweeps.results import config_id, record_row


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Runs trained together as one vectorized run of replicas.

    A chunk is one configuration and some of its seeds; on an engine that
    trains runs of different tasks together (the JAX engine), it may hold
    more configurations of the same recipe (`more`), each with its seeds.
    """

    config: ExperimentConfig
    seeds: tuple[int, ...]
    more: tuple[tuple[ExperimentConfig, tuple[int, ...]], ...] = ()

    @property
    def parts(self) -> tuple[tuple[ExperimentConfig, tuple[int, ...]], ...]:
        """Every `(config, seeds)` of the chunk, the first one first."""
        return ((self.config, self.seeds), *self.more)

    @property
    def runs(self) -> list[ExperimentConfig]:
        """One config per replica, its seed set."""
        return [
            dataclasses.replace(config, seed=seed)
            for config, seeds in self.parts
            for seed in seeds
        ]

    @property
    def replicas(self) -> int:
        return sum(len(seeds) for _, seeds in self.parts)

    @property
    def steps(self) -> int:
        """Seed-steps of the chunk: replicas × optimizer steps."""
        return self.replicas * total_steps(self.config)


@dataclasses.dataclass(frozen=True)
class Pack:
    """Chunks of different recipes trained side by side in one compiled program.

    Each chunk keeps its own replica run, evaluations, backup and rows
    (`train_pack`); only the program that takes their steps is shared, so
    they share a device's cost per step (JAX engine,
    `keras_nalu.sweeps.engines.packed`).
    """

    chunks: tuple[Chunk, ...]

    @property
    def replicas(self) -> int:
        return sum(chunk.replicas for chunk in self.chunks)

    @property
    def steps(self) -> int:
        """Seed-steps of the pack's chunks."""
        return sum(chunk.steps for chunk in self.chunks)


def pack_chunks(chunks: Sequence[Chunk], replicas: int) -> list[Chunk | Pack]:
    """Consecutive chunks packed together, up to `replicas` replicas a pack.

    The chunks keep their order; a chunk of a preset that cannot be
    vectorized, or larger than `replicas` on its own, stays alone, and a
    pack of one chunk is that chunk. `replicas` = 0 packs nothing.

    Example:

    >>> chunks = [Chunk(ExperimentConfig(model=m), (0, 1)) for m in
    ...           ("nau", "nmu", "nac", "inalu", "nalu")]
    >>> [type(unit).__name__ for unit in pack_chunks(chunks, 4)]
    ['Pack', 'Chunk', 'Chunk', 'Chunk']
    >>> [unit.replicas for unit in pack_chunks(chunks, 4)]
    [4, 2, 2, 2]
    """
    units: list[Chunk | Pack] = []
    current: list[Chunk] = []

    def close():
        if current:
            units.append(current[0] if len(current) == 1 else Pack(tuple(current)))
            current.clear()

    for chunk in chunks:
        if not replicas or not vectorizable(chunk.config):
            close()
            units.append(chunk)
            continue
        if current and sum(c.replicas for c in current) + chunk.replicas > replicas:
            close()
        current.append(chunk)
    close()
    return units


def plan_chunks(
    configs: Sequence[ExperimentConfig],
    seeds: Sequence[int],
    chunk_size: int,
    done: set[tuple[str, int]] = frozenset(),
    batch: bool = False,
) -> list[Chunk]:
    """Chunks of at most `chunk_size` seeds per configuration, minus `done`.

    The chunks are cut from the full seed list before finished pairs are
    removed, so a resumed sweep trains the same replica groups. With
    `batch`, chunks of configurations that share their recipe (model and
    training, `keras_nalu.sweeps.engines.RECIPE_FIELDS`) and differ only in
    the task are then packed together, up to `chunk_size` replicas a chunk,
    so that one vectorized run fills a GPU.

    Example:

    >>> chunks = plan_chunks([ExperimentConfig()], range(5), chunk_size=2)
    >>> [chunk.seeds for chunk in chunks]
    [(0, 1), (2, 3), (4,)]
    >>> grid = [ExperimentConfig(operation=op) for op in ("add", "sub")]
    >>> [chunk.replicas for chunk in plan_chunks(grid, range(3), 10, batch=True)]
    [6]
    """
    check_positive_int("sweep", "chunk_size", chunk_size)
    seeds = list(seeds)
    chunks = []
    for config in configs:
        key = config_id(config)
        for start in range(0, len(seeds), chunk_size):
            todo = tuple(
                seed
                for seed in seeds[start : start + chunk_size]
                if (key, seed) not in done
            )
            if todo:
                chunks.append(Chunk(config, todo))
    return _packed(chunks, chunk_size) if batch else chunks


def _packed(chunks: list[Chunk], chunk_size: int) -> list[Chunk]:
    """Chunks of one recipe packed together, first fit, in their order."""
    bins: dict[tuple, list[list]] = {}
    packed: list[list] = []
    for chunk in chunks:
        part = (chunk.config, chunk.seeds)
        if not vectorizable(chunk.config):
            packed.append([part])
            continue
        same_recipe = bins.setdefault(recipe(chunk.config), [])
        for parts in same_recipe:
            if sum(len(seeds) for _, seeds in parts) + len(chunk.seeds) <= chunk_size:
                parts.append(part)
                break
        else:
            same_recipe.append([part])
            packed.append(same_recipe[-1])
    return [Chunk(*parts[0], tuple(parts[1:])) for parts in packed]


def backup_name(chunk: Chunk) -> str:
    """The file name of a chunk's backup: `<config id>-<first seed>-<digest>.npz`.

    The digest covers every config and seed of the chunk, so two chunks never
    share a name, and the same chunk always gets the same one.

    Example:

    >>> backup_name(Chunk(ExperimentConfig(), (0, 1, 2))).endswith(".npz")
    True
    """
    text = ",".join(map(str, chunk.seeds))
    for config, seeds in chunk.more:
        text += f";{config_id(config)}:" + ",".join(map(str, seeds))
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"{config_id(chunk.config)}-{chunk.seeds[0]}-{digest[:8]}.npz"


def chunk_backup(results_path: str | os.PathLike, chunk: Chunk) -> Path:
    """Where a sweep backs up a chunk in training: beside its results file.

    `<results>.backup/<config id>-<first seed>-<digest>.npz`, one file per
    chunk (`backup_name`), deleted once the chunk has finished training.

    Example:

    >>> chunk = Chunk(ExperimentConfig(), (0, 1, 2))
    >>> chunk_backup("results/sweep.csv", chunk).parent.name
    'sweep.csv.backup'
    """
    return backup_folder(results_path) / backup_name(chunk)


def backup_files(
    results_path: str | os.PathLike, folder: str | os.PathLike | None = None
) -> list[Path]:
    """Every `.npz` file in the backup folder of a results file, in name order.

    The chunks' backups (`chunk_backup`) and any other `.npz` file put
    there; none where the folder does not exist.

    Args:
        results_path: the sweep's results file.
        folder: the folder of the backups, if not `<results>.backup/`.
    """
    folder = backup_folder(results_path) if folder is None else Path(folder)
    return sorted(folder.glob("*.npz")) if folder.is_dir() else []


def backed_up_chunks(
    results_path: str | os.PathLike, folder: str | os.PathLike | None = None
) -> list[tuple[Chunk, str]]:
    """The chunks whose backups lie beside a results file, with their engines.

    Each `<results>.backup/*.npz` file (see `chunk_backup`) names its runs;
    they are regrouped into the `Chunk` that wrote it, so a sweep can
    continue that chunk even when it plans its seeds in other chunks (another
    `chunk_size`, more seeds). Files that are unreadable, or not named as
    that chunk's backup, are left out (and left alone).

    Args:
        results_path: the sweep's results file.
        folder: the folder of the backups, if not `<results>.backup/` (a
            Ray sweep's `backup_dir`).

    Returns:
        `[(chunk, engine), ...]`, in file-name order.
    """
    from keras_nalu.sweeps.engines.backup import backup_runs

    found = []
    for file in backup_files(results_path, folder):
        if not file.name.startswith("c"):  # no chunk's name (`backup_name`)
            continue
        try:
            runs, engine = backup_runs(file)
        except ValueError:
            continue
        parts: list[tuple[ExperimentConfig, list[int]]] = []
        for run in runs:
            config = dataclasses.replace(run, seed=0)
            if parts and parts[-1][0] == config:
                parts[-1][1].append(run.seed)
            else:
                parts.append((config, [run.seed]))
        if not parts:
            continue
        (config, seeds), *more = parts
        chunk = Chunk(config, tuple(seeds), tuple((c, tuple(s)) for c, s in more))
        if file.name == backup_name(chunk):
            found.append((chunk, engine))
    return found


def remove_finished_backups(
    results_path: str | os.PathLike, done: set[tuple[str, int]]
) -> list[Path]:
    """Deletes the chunk backups beside a results file whose runs all have rows.

    A chunk that finished deletes its own backup; this removes the backups
    such a chunk left where it trained without them (`backup_every=None`)
    or was cut otherwise, so that none is reported as in training. Only
    files named as a chunk's backup (`backed_up_chunks`) are removed.

    Args:
        results_path: the sweep's results file.
        done: its `(config id, seed)` pairs that have rows.

    Returns:
        The files removed.
    """
    removed = []
    for chunk, _ in backed_up_chunks(results_path):
        pairs = {(config_id(c), s) for c, seeds in chunk.parts for s in seeds}
        if pairs <= done:
            path = chunk_backup(results_path, chunk)
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def train_chunk(
    chunk: Chunk | ExperimentConfig,
    seeds: Sequence[int] | None = None,
    progress=False,
    limits: TrainingLimits | None = None,
    unroll: int = 1,
):
    """The result rows of one chunk (runs in a Ray worker too).

    A chunk is trained as vectorized replicas on the Keras backend's engine,
    backed up into the folder `limits.backup` (if given; the file is
    `backup_name(chunk)`) every `limits.backup_every` seconds and resumed
    from it; a preset that cannot be vectorized (see `vectorizable`) trains
    its seeds one after the other with `run_experiment`, which gives the
    same rows with `replicas` = 1; it is not backed up, and stops between
    two seeds at the deadline.

    Args:
        chunk: a `Chunk`, or a config whose `seeds` follow.
        seeds: with a config, the seeds.
        progress: as for `train_replicas`.
        limits: the folder of the chunk's backup, how often, and the
            deadline (`TrainingLimits`); None for none.
        unroll: as for `train_replicas`.

    Raises:
        TimeLimitReached: the chunk stopped at the deadline (after its
            backup).
        KeyboardInterrupt: a Ctrl-C (`stop_at_interrupt`) stopped the chunk
            at its next evaluation (after its backup).

    A chunk trained seed by seed that stops gives the rows of the seeds it
    finished as the exception's `rows`.
    """
    if isinstance(chunk, ExperimentConfig):
        chunk = Chunk(chunk, tuple(seeds))
    limits = TrainingLimits() if limits is None else limits
    with _retracing_warnings_silenced():
        return _train(chunk, progress, limits, unroll)


def chunk_limits(chunk: Chunk, limits: TrainingLimits) -> TrainingLimits:
    """A chunk's own limits: its backup file in the folder `limits.backup`."""
    if limits.backup is None:
        return limits
    return dataclasses.replace(limits, backup=Path(limits.backup) / backup_name(chunk))


@contextlib.contextmanager
def _retracing_warnings_silenced():
    """TensorFlow's logger at ERROR while a chunk trains, here or in a Ray worker.

    Every chunk traces its own training function; TF's warning about that
    retracing says nothing useful in a sweep, and a process that trains many
    chunks (a sweep, a Ray worker) would print it again and again.
    """
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


def _train(chunk, progress, limits, unroll) -> list[dict]:
    from keras_nalu.sweeps.engines import NotVectorizableError
    from keras_nalu.sweeps.engines.train import train_run

    try:
        if not vectorizable(chunk.config):
            raise NotVectorizableError(chunk.config.model)
        run = _chunk_run(chunk, unroll)
        records = train_run(run, progress, chunk_limits(chunk, limits))
    except NotVectorizableError:  # this engine cannot: one seed at a time
        records = []
        try:
            for part, part_seeds in chunk.parts:
                _train_one_by_one(part, part_seeds, progress, limits, records)
        except (KeyboardInterrupt, TimeLimitReached) as stop:
            stop.rows = [record_row(record) for record in records]
            raise
    return [record_row(record) for record in records]


def _train_one_by_one(config, seeds, progress, limits, records) -> None:
    """Trains `seeds` of `config` one after the other into `records`.

    A Ctrl-C (`stop_at_interrupt`) stops the seed in training at its next
    evaluation, and the deadline stops the chunk between two seeds: neither
    is backed up, so the seed in training starts over on the next sweep,
    and the finished ones are kept (`KeyboardInterrupt`, `TimeLimitReached`).
    """
    from keras_nalu.experiments import run_experiment
    from keras_nalu.sweeps.engines import device_name

    for index, seed in enumerate(seeds):
        trained = f"{index} of {len(seeds)} seeds trained"
        if stop_requested():
            raise stop_with(
                KeyboardInterrupt,
                f"{config.model}-{config.operation} stopped between two seeds, "
                f"{trained}",
                again=True,
            )
        if index and limits.out_of_time():
            raise stop_with(
                TimeLimitReached,
                f"{config.model}-{config.operation} stopped at its time limit "
                f"between two seeds, {trained} (this preset trains one seed at "
                "a time, without backups)",
                again=False,
            )
        keras.backend.clear_session()
        stop = _StopAtInterrupt()
        _, record = run_experiment(
            dataclasses.replace(config, seed=seed),
            verbose=progress is True,
            callbacks=[stop],
        )
        if stop.step is not None:
            raise stop_with(
                KeyboardInterrupt,
                f"{config.model}-{config.operation} seed {seed} stopped at step "
                f"{stop.step:,} of {total_steps(config):,}, {trained}; it starts "
                "over on the next run (this preset trains one seed at a time, "
                "without backups)",
                again=True,
            )
        records.append(
            {
                **record,
                "replicas": 1,
                "engine": keras.backend.backend(),
                "device": device_name(),
            }
        )
        if callable(progress):
            # the callback counts steps of the whole chunk (all its replicas
            # at once), so one finished seed is 1/len(seeds) of a chunk step
            progress(total_steps(config) // len(seeds))


class _StopAtInterrupt(keras.callbacks.Callback):
    """Ends a `run_experiment` at its next evaluation after a Ctrl-C.

    The Ctrl-C of `stop_at_interrupt` stops every run at its next
    evaluation; `step` is where this one stopped, None if it was not.
    """

    def __init__(self):
        super().__init__()
        self.step = None

    def on_epoch_end(self, epoch, logs=None):
        if stop_requested() and not self.model.stop_training:
            self.model.stop_training = True
            self.step = optimizer_step(self.model)


def _chunk_run(chunk: Chunk, unroll: int):
    """The replica run `train_chunk` trains a chunk as.

    Its records hold no `history`: the rows hold the verdicts, not the
    evaluations.
    """
    from keras_nalu.sweeps.engines import batched_run, replica_run

    if chunk.more:
        return batched_run(chunk.runs, history=False, unroll=unroll)
    return replica_run(chunk.config, list(chunk.seeds), history=False, unroll=unroll)


def train_pack(
    pack: Pack,
    on_rows,
    progress=None,
    limits: TrainingLimits | None = None,
    unroll: int = 1,
) -> None:
    """Trains a pack's chunks side by side; each chunk's rows as it finishes.

    Each chunk is the replica run `train_chunk` would train, continued from
    its backup if it has one, and gives the rows `train_chunk` would give
    (its `wall_time` is the time it spent in the pack); the steps of all of
    them are one compiled program (`keras_nalu.sweeps.engines.packed`). A
    finished chunk's rows go to `on_rows` before its backup is deleted.

    Args:
        pack: the chunks.
        on_rows: called with each chunk's rows once it has finished.
        progress: None, or a callable per chunk: `progress(chunk)` gives the
            callable that receives that chunk's steps (see `train_replicas`).
        limits: as for `train_chunk`: the folder of the chunks' backups
            (one file each), how often, and the deadline; None for none.
        unroll: as for `train_replicas`.

    Raises:
        TimeLimitReached: the chunks left stopped at the deadline, each after
            its backup; the finished chunks' rows were given to `on_rows`.
    """
    from keras_nalu.sweeps.engines.backup import remove_backup
    from keras_nalu.sweeps.engines.packed import train_packed

    chunks = list(pack.chunks)
    limits = TrainingLimits() if limits is None else limits
    own = [chunk_limits(chunk, limits) for chunk in chunks]
    with _retracing_warnings_silenced():
        runs = [_chunk_run(chunk, unroll) for chunk in chunks]
        for run, chunk_own in zip(runs, own):
            if chunk_own.backup is not None:
                run.restore_backup(chunk_own.backup)

        def finished(index):
            on_rows([record_row(record) for record in runs[index].results()])
            if own[index].backup is not None:
                remove_backup(own[index].backup)

        train_packed(
            runs,
            progress=None if progress is None else [progress(c) for c in chunks],
            limits=own,
            on_finished=finished,
        )


__all__ = [
    "Chunk",
    "Pack",
    "backed_up_chunks",
    "backup_files",
    "backup_name",
    "chunk_backup",
    "pack_chunks",
    "plan_chunks",
    "remove_finished_backups",
    "train_chunk",
    "train_pack",
]
