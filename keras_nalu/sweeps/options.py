"""How a sweep trains: one `SweepOptions`, built once, checked once.

The CLI builds it from its flags and a script from keywords (`run_sweep`
takes either); `SweepOptions.prepared` checks it and prepares this process
(XLA's flags, GPU memory: `FillingOptions.prepare_process`) before anything
starts JAX, and `SweepOptions.limits` gives the chunks' `ChunkLimits`.
"""

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
        chunk_size: at most this many runs train together as replicas. On
            the JAX engine, chunks of configurations that differ only in
            their task (operation, ranges) are packed together up to this
            size, so a large `chunk_size` fills a GPU.
        backup_every: seconds between two backups of the chunk in training
            (see `chunk_backup`); a rerun of a killed sweep continues that
            chunk from its backup, with the rows an uninterrupted run gives.
            None for no backups; on Ray, chunks are backed up only to a
            `backup_dir`. Chunks backed up by an earlier sweep of this file
            train first, as they were cut (`backed_up_chunks`), if the sweep
            asks for all their runs.
        time_limit: seconds after which the sweep stops: no chunk starts
            after it, and the chunk in training stops at its next
            evaluation, after a backup. The rows of finished chunks are in
            the file; the outcome has `complete=False`, and running the same
            sweep again continues. None for no limit. Needs backups; not
            with `ray_address`.
        chunk_seconds: with `time_limit`, a chunk's predicted wall time: no
            chunk starts that is predicted to end after the limit
            (`keras_nalu.sweeps.planning` sizes chunks so that they finish).
            Chunks are not packed then.
        ray_address: None trains the chunks here, one after the other;
            `"local"` starts a Ray runtime on this machine for this sweep
            (even where a `ray start` cluster runs), `"auto"`, `HOST:PORT`
            or `ray://HOST:PORT` joins a cluster (an already initialized Ray
            is used as is). Chunks become Ray tasks (`ray_options`,
            `keras_nalu.sweeps.cluster`); this process writes the file. An
            unreachable or lost cluster, or a chunk failed after Ray's
            retries, raises `ClusterError` with the rows of the finished
            chunks written. On one machine with several JAX devices, chunks
            train side by side, one per device.
        backup_dir: with `ray_address`, the folder the chunks in training
            are backed up to: a path that every node mounts (an NFS share,
            ...), or an fsspec URL (`s3://bucket/sweep`, `gs://...`; needs
            fsspec and the file system's package). The worker that picks a
            chunk up (a retry after a lost worker, or a rerun) continues it
            from there. None: chunks on Ray are not backed up (a warning
            says so once).
        gpus_per_chunk: with `ray_address`, the GPUs each chunk asks Ray
            for: 1 a GPU each, 0.25 four chunks a GPU, 0 none (default).
        filling: how a sweep trained here fills a device (`FillingOptions`:
            threads, packs, processes, unrolled loops, command buffers).

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
        """The options checked, and this process prepared for them.

        First XLA's flags and GPU memory (`FillingOptions.prepared`: XLA
        reads them when JAX starts), then the limits and Ray's arguments;
        `pack_replicas` None becomes the device's default, `backup_dir` the
        location the tasks use.

        Raises:
            ValueError: an option out of range, or options that do not go
                together (each named, with the values received).
        """
        filling = self.filling.prepared(self.ray_address)
        _check_limits(self.backup_every, self.time_limit, self.ray_address)
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
        """The chunks' backup folder, how often, and the deadline from now.

        The folder is beside the results file (`backup_folder`), or on Ray
        the `backup_dir`; None without backups.
        """
        deadline = None
        if self.time_limit is not None:
            deadline = time.monotonic() + self.time_limit
        if not self.backups:
            return ChunkLimits(deadline=deadline)
        here = self.ray_address is None
        folder = backup_folder(results_path) if here else self.backup_dir
        return ChunkLimits(folder, self.backup_every, deadline)


def _check_limits(backup_every, time_limit, ray_address) -> None:
    """Refuses a negative `backup_every` or `time_limit`, or a limit without
    backups trained here."""
    if backup_every is not None and not backup_every >= 0:
        raise ArgumentError(
            "run_sweep",
            "backup_every",
            backup_every,
            requirement="be None or >= 0 seconds",
        )
    if time_limit is None:
        return
    if not time_limit >= 0:
        raise ArgumentError(
            "run_sweep", "time_limit", time_limit, requirement="be None or >= 0 seconds"
        )
    if backup_every is None or ray_address is not None:
        raise ArgumentError(
            "run_sweep",
            "time_limit",
            time_limit,
            problem="{time_limit} stops a sweep trained here at a backup: it needs "
            "backups (every {backup_every} seconds) and no {ray_address}",
            received={"backup_every": backup_every, "ray_address": ray_address},
        )


__all__ = ["SweepOptions"]
