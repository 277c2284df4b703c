"""How a sweep trains: one `SweepOptions`, built once, checked once."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path

from keras_nalu._files import backup_folder
from keras_nalu.errors import ArgumentError
from keras_nalu.sweeps.chunks import Chunk, ChunkLimits
from keras_nalu.sweeps.cluster import check_ray_arguments
from keras_nalu.sweeps.engines.loop import BACKUP_EVERY
from keras_nalu.sweeps.local import FillingOptions


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """How `run_sweep` trains its chunks: their size, backups, limit, place.

    Attributes:
        chunk_size: at most this many runs train together as replicas; on
            the JAX engine, chunks of configurations that differ only in
            their task are packed together up to this size.
        backup_every: seconds between two backups of the chunk in training
            (`chunk_backup`), which a rerun of a killed sweep continues, with
            the rows an uninterrupted run gives. None for no backups; on Ray,
            chunks are backed up only to a `backup_dir`.
        time_limit: seconds after which no chunk starts, and the chunk in
            training stops at its next evaluation, after a backup; the
            outcome has `complete=False`, and a rerun continues. None for no
            limit. Needs backups; not with `ray_address`.
        chunk_seconds: with `time_limit`, a chunk's predicted wall time: no
            chunk starts that is predicted to end after the limit
            (`keras_nalu.sweeps.planning`). Chunks are not packed then.
        ray_address: None trains the chunks here; `"local"` (a runtime of
            this sweep's own), `"auto"`, `HOST:PORT` or `ray://HOST:PORT`
            makes each chunk a Ray task (`keras_nalu.sweeps.cluster`; docs:
            Running on a cluster); this process writes the file.
        backup_dir: with `ray_address`, the folder every node mounts, or the
            fsspec URL, the chunks in training are backed up to; None: no
            backups on Ray (a warning says so once).
        gpus_per_chunk: with `ray_address`, the GPUs each chunk asks Ray
            for: 1 a GPU each, 0.25 four chunks a GPU, 0 none (default).
        filling: how a sweep trained here fills a device (`FillingOptions`).

    Example:

    >>> options = SweepOptions.from_keywords(chunk_size=10, pack_replicas=0)
    >>> options.chunk_size, options.filling.pack_replicas
    (10, 0)
    """

    chunk_size: int = 100
    backup_every: float | None = BACKUP_EVERY
    time_limit: float | None = None
    chunk_seconds: Callable[[Chunk], float] | None = None
    ray_address: str | None = None
    backup_dir: str | os.PathLike | None = None
    gpus_per_chunk: float = 0.0
    filling: FillingOptions = FillingOptions()

    @classmethod
    def from_keywords(cls, **keywords) -> SweepOptions:
        """The options named by keywords: these fields, and `FillingOptions`'.

        Raises:
            TypeError: a keyword that names no option.
        """
        filling = {field.name for field in dataclasses.fields(FillingOptions)}
        own = {field.name for field in dataclasses.fields(cls)} - {"filling"}
        unknown = sorted(set(keywords) - filling - own)
        if unknown:
            raise TypeError(
                f"run_sweep() got an unexpected keyword argument {unknown[0]!r}"
            )
        return cls(
            **{name: value for name, value in keywords.items() if name in own},
            filling=FillingOptions(
                **{name: value for name, value in keywords.items() if name in filling}
            ),
        )

    def prepared(self) -> SweepOptions:
        """The options checked, and this process prepared for them
        (`FillingOptions.prepared` first: XLA reads its flags as JAX starts);
        `backup_dir` becomes the location the tasks use.

        Raises:
            ValueError: an option out of range, or options that do not go
                together (each named, with the values received).
        """
        filling = self.filling.prepared(self.ray_address)
        backup_every, time_limit = self.backup_every, self.time_limit
        for name, value in (("backup_every", backup_every), ("time_limit", time_limit)):
            if value is not None and not value >= 0:
                raise ArgumentError(
                    "run_sweep", name, value, requirement="be None or >= 0 seconds"
                )
        here = self.ray_address is None
        if time_limit is not None and (backup_every is None or not here):
            raise ArgumentError(
                "run_sweep",
                "time_limit",
                time_limit,
                problem="{time_limit} stops a sweep trained here at a backup: it "
                "needs backups (every {backup_every} seconds) and no {ray_address}",
                received={
                    "backup_every": backup_every,
                    "ray_address": self.ray_address,
                },
            )
        backup_dir = check_ray_arguments(
            self.ray_address,
            self.backup_dir,
            self.backup_every,
            self.gpus_per_chunk,
            filling.chunks_per_device,
        )
        return dataclasses.replace(self, filling=filling, backup_dir=backup_dir)

    @property
    def backups(self) -> bool:
        """Whether the chunks in training are backed up (`backup_every`)."""
        return self.backup_every is not None

    def limits(self, results_path: Path) -> ChunkLimits:
        """The chunks' `ChunkLimits`, the deadline from now: their backups beside
        the results file (`backup_folder`), or on Ray in `backup_dir`."""
        limit = self.time_limit
        deadline = None if limit is None else time.monotonic() + limit
        if not self.backups:
            return ChunkLimits(deadline=deadline)
        here = self.ray_address is None
        folder = backup_folder(results_path) if here else self.backup_dir
        return ChunkLimits(folder, self.backup_every, deadline)


__all__ = ["SweepOptions"]
