"""Chunks of a sweep (seeds of one recipe trained together), packs, backups."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
from collections.abc import Sequence
from pathlib import Path

from keras_nalu._files import backup_folder
from keras_nalu._validation import check_positive_int
from keras_nalu.experiments import ExperimentConfig, total_steps
from keras_nalu.sweeps.engines.loop import BACKUP_EVERY, TrainingLimits
from keras_nalu.sweeps.engines.setup import recipe, vectorizable
from keras_nalu.sweeps.results import config_id


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
    def pairs(self) -> set[tuple[str, int]]:
        """The `(config id, seed)` pairs of the chunk's runs."""
        return {
            (config_id(config), seed) for config, seeds in self.parts for seed in seeds
        }

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

    Each chunk keeps its own run, evaluations, backup and rows; only the
    program that takes their steps is shared (`ReplicaRun.train_together`).
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
    """Consecutive chunks packed together, up to `replicas` (0: none) a pack;
    a chunk that cannot be vectorized, or larger alone, stays alone.

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
        alone = not replicas or not vectorizable(chunk.config)
        if alone or sum(c.replicas for c in current) + chunk.replicas > replicas:
            close()
        current.append(chunk)
        if alone:
            close()
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

    Cut from the full seed list before `done` is removed, so a resumed sweep
    trains the same replica groups. With `batch`, chunks of one recipe
    (`keras_nalu.sweeps.engines.RECIPE_FIELDS`) are then packed together, up
    to `chunk_size` replicas a chunk.

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
    if not batch:
        return chunks
    bins: dict[tuple, list[list]] = {}  # a recipe's packs, filled first fit
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
    """The file name of a chunk's backup: `<config id>-<first seed>-<digest>.npz`,
    the digest of every config and seed of the chunk.

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
    """Where a sweep backs up a chunk in training: `<results>.backup/`
    `backup_name(chunk)`, deleted once the chunk has finished training.

    Example:

    >>> chunk = Chunk(ExperimentConfig(), (0, 1, 2))
    >>> chunk_backup("results/sweep.csv", chunk).parent.name
    'sweep.csv.backup'
    """
    return backup_folder(results_path) / backup_name(chunk)


def backup_files(
    results_path: str | os.PathLike, folder: str | os.PathLike | None = None
) -> list[Path]:
    """Every `.npz` file in `folder` (default: the backup folder of a results
    file, `<results>.backup/`), in name order; none if it does not exist."""
    folder = backup_folder(results_path) if folder is None else Path(folder)
    return sorted(folder.glob("*.npz")) if folder.is_dir() else []


def backed_up_chunks(
    results_path: str | os.PathLike, folder: str | os.PathLike | None = None
) -> list[tuple[Chunk, str]]:
    """`[(chunk, engine), ...]` of the backups in `backup_files`, by file name.

    Each backup names its runs; they are regrouped into the `Chunk` that
    wrote it, so a sweep can continue that chunk even when it cuts its seeds
    otherwise (another `chunk_size`, more seeds). Files that are unreadable,
    or not named as that chunk's backup, are left out (and left alone).
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
        parts = [
            (config, tuple(run.seed for run in group))
            for config, group in itertools.groupby(
                runs, key=lambda run: dataclasses.replace(run, seed=0)
            )
        ]
        chunk = Chunk(*parts[0], tuple(parts[1:])) if parts else None
        if chunk is not None and file.name == backup_name(chunk):
            found.append((chunk, engine))
    return found


def remove_finished_backups(
    results_path: str | os.PathLike, done: set[tuple[str, int]]
) -> list[Path]:
    """Deletes, and returns, the chunk backups (`backed_up_chunks`) beside a
    results file whose runs all have rows (`done`: `(config id, seed)` pairs):
    left by chunks trained without backups or cut otherwise, they would be
    reported as in training."""
    removed = []
    for chunk, _ in backed_up_chunks(results_path):
        if chunk.pairs <= done:
            path = chunk_backup(results_path, chunk)
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


@dataclasses.dataclass(frozen=True)
class ChunkLimits:
    """Where a sweep's chunks are backed up, how often, and when they stop.

    Attributes:
        folder: the folder of the chunks' backups, one file per chunk
            (`backup_name`): beside the results file, or a Ray sweep's
            `backup_dir`; None for no backups.
        backup_every, deadline: as for `TrainingLimits`.
    """

    folder: str | os.PathLike | None = None
    backup_every: float = BACKUP_EVERY
    deadline: float | None = None

    def of(self, chunk: Chunk) -> TrainingLimits:
        """The chunk's own limits: its backup file in `folder`."""
        backup = None if self.folder is None else Path(self.folder) / backup_name(chunk)
        return TrainingLimits(backup, self.backup_every, self.deadline)

    def out_of_time(self) -> bool:
        """Whether the deadline has passed."""
        return TrainingLimits(deadline=self.deadline).out_of_time()


__all__ = [
    "Chunk",
    "ChunkLimits",
    "Pack",
    "backed_up_chunks",
    "backup_files",
    "backup_name",
    "chunk_backup",
    "pack_chunks",
    "plan_chunks",
    "remove_finished_backups",
]
