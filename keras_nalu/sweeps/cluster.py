"""Sweeps on a Ray cluster: chunks as Ray tasks, their backups, their failures.

The guide, with every message a sweep on Ray prints, is docs/cluster.md.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import os
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from keras_nalu.errors import ArgumentError, literal
from keras_nalu.sweeps.backup_folder import BackupFolder
from keras_nalu.sweeps.chunks import Chunk, ChunkLimits, backed_up_chunks, backup_name
from keras_nalu.sweeps.engines import stop_at_interrupt, stop_requested
from keras_nalu.sweeps.ray_connection import ClusterError, RayConnection, first_line

logger = logging.getLogger(__name__)


def ray_options(engine: str, gpus_per_chunk: float = 0.0) -> dict:
    """The Ray resources and environment of one chunk's task.

    One CPU and `gpus_per_chunk` GPUs; a chunk on a share of a GPU is held
    to that share of its memory; the workers run the driver's Keras backend
    and TensorFlow log level (docs/cluster.md, "GPU nodes").

    Args:
        engine: the Keras backend the chunks train on (`"jax"`, ...).
        gpus_per_chunk: 0 for none; a fraction in (0, 1], or a whole number.

    Example:

    >>> options = ray_options("jax", gpus_per_chunk=0.25)
    >>> options["num_gpus"], options["runtime_env"]["env_vars"]["KERAS_BACKEND"]
    (0.25, 'jax')
    >>> options["runtime_env"]["env_vars"]["XLA_PYTHON_CLIENT_MEM_FRACTION"]
    '0.225'
    """
    gpus_per_chunk = check_gpus_per_chunk(gpus_per_chunk)
    env = {"KERAS_BACKEND": engine}
    for name in ("TF_CPP_MIN_LOG_LEVEL", "KERAS_NALU_TF_LOGS"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    if 0 < gpus_per_chunk < 1:
        env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{0.9 * gpus_per_chunk:.3g}"
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
    gpus = int(gpus_per_chunk) if float(gpus_per_chunk).is_integer() else gpus_per_chunk
    return {"num_cpus": 1, "num_gpus": gpus, "runtime_env": {"env_vars": env}}


def check_gpus_per_chunk(gpus_per_chunk) -> float:
    """`gpus_per_chunk` as Ray accepts it, or one ValueError that says why not."""
    try:
        value = float(gpus_per_chunk)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(gpus_per_chunk, bool) or not (
        math.isfinite(value) and value >= 0 and (value <= 1 or value.is_integer())
    ):
        raise ArgumentError(
            "run_sweep",
            "gpus_per_chunk",
            gpus_per_chunk,
            requirement="be 0, a fraction of one GPU (e.g. 0.25 for four chunks a "
            "GPU) or a whole number of GPUs",
        )
    return value


def check_ray_arguments(
    ray_address, backup_dir, backup_every, gpus_per_chunk, chunks_per_device
) -> str | None:
    """Refuses what only Ray or only a local sweep can do; `backup_dir` as the
    tasks will use it (an absolute path or a URL), or None."""
    check_gpus_per_chunk(gpus_per_chunk)
    if ray_address is None:
        if backup_dir is not None or gpus_per_chunk:
            raise ArgumentError(
                "run_sweep",
                "backup_dir" if backup_dir is not None else "gpus_per_chunk",
                backup_dir if backup_dir is not None else gpus_per_chunk,
                problem="{backup_dir} and {gpus_per_chunk} go with a {ray_address} "
                "only; here, chunks are backed up beside the results file and share "
                "a device by {chunks_per_device}",
                received={"backup_dir": backup_dir, "gpus_per_chunk": gpus_per_chunk},
            )
        return None
    if chunks_per_device != 1:
        raise ArgumentError(
            "run_sweep",
            "chunks_per_device",
            chunks_per_device,
            problem="On Ray, chunks share a GPU by {gpus_per_chunk} (e.g. 0.25 for "
            "four chunks a GPU), not {chunks_per_device}",
        )
    if backup_dir is None:
        return None
    if backup_every is None:
        raise ArgumentError(
            "run_sweep",
            "backup_dir",
            backup_dir,
            problem="chunks are backed up to {backup_dir} every {backup_every} "
            "seconds: pass both, or neither",
            received={"backup_dir": backup_dir, "backup_every": None},
        )
    return BackupFolder.checked(backup_dir).location


def run_on_ray(
    chunks: Sequence[Chunk],
    on_rows: Callable[[list[dict]], None],
    on_steps: Callable[[int], None],
    address: str,
    results_path: Path,
    limits: ChunkLimits | None = None,
    gpus_per_chunk: float = 0.0,
    backups_asked: bool = True,
) -> None:
    """Trains `chunks` as Ray tasks, in order; the sweep's `on_rows` and
    `on_steps` are called in the driver. `address` is `SweepOptions.ray_address`,
    `backups_asked` `SweepOptions.backups` (then a missing backup folder is
    warned of once); `limits.folder` is the backup folder or URL every node
    reaches, or None. Ctrl-C asks the chunks to back up and stop (docs/cluster.md).

    Raises:
        ValueError: no node of the cluster has the GPUs a chunk asks for.
        ClusterError: the cluster could not be reached or was lost, or a
            chunk failed after Ray's retries.
        KeyboardInterrupt: Ctrl-C. Either way the finished chunks' rows are
            written.
    """
    import keras

    limits = ChunkLimits() if limits is None else limits
    try:
        import ray
    except ImportError:
        raise ValueError(
            "the Ray backend needs ray: pip install 'keras-arithmetic-units[ray]'"
        ) from None
    connection = RayConnection.open(ray, address)
    tasks = RayTasks(ray, connection, results_path, limits.folder)
    try:
        options = ray_options(keras.backend.backend(), gpus_per_chunk)
        nodes = _nodes_with_gpus(ray, options["num_gpus"], connection.address)
        if connection.started and address != "local" and nodes is not None:
            logger.info(
                "joined the Ray cluster at %s: %s", connection.address, _size(nodes)
            )
        if backups_asked and limits.folder is None:
            logger.warning(
                "on Ray without a backup folder (backup_dir, --backup-dir), the "
                "chunks in training are not backed up: a lost worker or cluster "
                "trains them again from the start"
            )
        with stop_at_interrupt():
            task, versions = ray.remote(**options)(_chunk_task), _versions()
            tasks.pending = {task.remote(c, limits, versions): c for c in chunks}
            tasks.collect(on_rows, on_steps)
    except KeyboardInterrupt:  # the first Ctrl-C, once the chunks stopped; a second
        raise KeyboardInterrupt(
            tasks.outcome() + ": rerun the same sweep to continue."
        ) from None
    except (ClusterError, ray.exceptions.RayError, ConnectionError) as error:
        connection.lost = connection.lost or isinstance(error, _lost_errors(ray))
        raise ClusterError(
            _failure_message(ray, error, connection.address, tasks.outcome())
        ) from None
    finally:
        tasks.close()


CANCEL_AGAIN = 5.0
"""Seconds after which chunks asked to stop at Ctrl-C are asked again: Ray's
cancellation of a task just starting on a worker can be lost."""


class RayTasks:
    """`run_on_ray`'s bookkeeping: the tasks pending, the chunks cancelled at
    Ctrl-C, the rows written."""

    def __init__(self, ray, connection, results_path, backup_dir):
        self.ray = ray
        self.connection = connection
        self.results_path = results_path
        self.backup_dir = backup_dir
        self.pending: dict = {}
        self.cancelled: list[Chunk] = []
        self.written = 0

    def collect(self, on_rows, on_steps) -> None:
        """Waits for every task, handing each chunk's rows to `on_rows`; at
        Ctrl-C, asks the chunks to back up and stop (again every `CANCEL_AGAIN`
        seconds; without a backup folder, stops at once)."""
        ray = self.ray
        asked = None  # when the chunks were last asked to stop
        while self.pending:
            if stop_requested():
                if self.backup_dir is None:  # nothing to back up: stop now
                    break
                if asked is None or time.monotonic() - asked >= CANCEL_AGAIN:
                    self.cancel(force=False)
                    asked = time.monotonic()
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=0.5)
            if not ready:
                self.connection.watch()
                continue
            try:
                result = ray.get(ready[0])
            except ray.exceptions.TaskCancelledError:
                if asked is None:
                    raise
                self.cancelled.append(self.pending.pop(ready[0]))
                continue
            self._finished(self.pending.pop(ready[0]), result, on_rows, on_steps)
        if stop_requested():
            raise KeyboardInterrupt

    def _finished(self, chunk: Chunk, result: dict, on_rows, on_steps) -> None:
        if step := result["resumed_from"]:
            name = backup_name(chunk)
            logger.info("chunk %s continued from its backup at step %d", name, step)
        on_rows(result["rows"])
        self.written += len(result["rows"])
        resumed = min(step * chunk.replicas, chunk.steps)
        on_steps(resumed, False)  # trained before this sweep
        on_steps(chunk.steps - resumed)

    def outcome(self) -> str:
        """The rows kept, the chunks left, and whether each continues from a
        backup in the folder (read now, as the rerun will) or its start."""
        left = self.cancelled + list(self.pending.values())
        outcome = (
            f"{self.written} rows of this sweep are kept in {self.results_path}"
            if self.written
            else "no chunk of this sweep had finished (no rows written)"
        )
        if not left:
            return outcome
        one = len(left) == 1
        outcome += ", 1 chunk is left" if one else f", {len(left)} chunks are left"
        folder = self.backup_dir
        if folder is None:
            return outcome + " (from the start: no backup folder)"
        try:
            names = set(BackupFolder(folder).names())
        except Exception:  # noqa: BLE001 - a folder out of reach now
            return outcome + f" (from the last backup in {folder}, if any)"
        backed_up = sum(backup_name(chunk) in names for chunk in left)
        if not backed_up:
            return outcome + f" (from the start: no backup in {folder} yet)"
        if backed_up == len(left):
            who = "it continues" if one else "each continues"
            return outcome + f" ({who} from its last backup in {folder})"
        who = "1 continues from its" if backed_up == 1 else f"{backed_up} from their"
        return outcome + (
            f" ({who} last backup in {folder}, {len(left) - backed_up} from the start)"
        )

    def cancel(self, force: bool) -> None:
        """Ray's cancellation of every task left: SIGINT to a running one
        (the chunk backs up, then stops), or (`force`) its worker ended."""
        for reference in self.pending:
            with contextlib.suppress(Exception):
                self.ray.cancel(reference, force=force)

    def close(self) -> None:
        """Cancels the tasks left, unless the cluster is lost; ends a Ray it started."""
        if not self.connection.lost:
            self.cancel(force=True)
        if self.connection.started:
            self.ray.shutdown()


def _nodes_with_gpus(ray, gpus: float, address: str) -> list[dict] | None:
    """The cluster's nodes alive now, or None if Ray cannot tell; refuses GPUs
    that no node has (Ray would queue the chunks without a word), unless the
    autoscaler tells a largest size that has them."""
    try:
        nodes = [node for node in ray.nodes() if node.get("Alive")]
    except Exception:  # noqa: BLE001 - a Ray without it
        return None
    most = max((_has(node, "GPU") for node in nodes), default=0)
    if not gpus or most >= gpus:
        return nodes
    try:
        from ray._private.state import state

        largest = state.get_max_resources_from_cluster_config() or {}
    except Exception:  # noqa: BLE001 - Ray Client, or no autoscaler config
        largest = {}
    if float(largest.get("GPU", 0.0)) >= gpus:
        return nodes
    has = f"the most a node has: {most:g}" if most else "its nodes have no GPU"
    raise ArgumentError(
        "",
        "gpus_per_chunk",
        gpus,
        problem=f"each chunk asks for {_count(gpus, 'GPU')} ({{gpus_per_chunk}}), "
        f"but no node of the Ray cluster at {literal(address)} has that many "
        f"({has}); pass 0 to train on CPUs, or add nodes with GPUs",
        received={},
    )


def _has(node: dict, resource: str) -> float:
    return node.get("Resources", {}).get(resource, 0.0)


def _size(nodes: list[dict]) -> str:
    """`1 node, 2 CPUs, 1 GPU`: what the cluster has."""
    cpus, gpus = (sum(_has(node, name) for node in nodes) for name in ("CPU", "GPU"))
    return f"{_count(len(nodes), 'node')}, {_count(cpus, 'CPU')}, {_count(gpus, 'GPU')}"


def _count(number: float, name: str) -> str:
    return f"{number:g} {name}" + ("" if number == 1 else "s")


def backed_up_chunks_in(results_path: Path, backup_dir: str) -> list[tuple[Chunk, str]]:
    """`backed_up_chunks` of a Ray sweep's backup folder (a path or a URL)."""
    folder = BackupFolder(backup_dir)
    if folder.fs is None:
        return backed_up_chunks(results_path, folder.location)
    with tempfile.TemporaryDirectory() as copies:
        for name in folder.names():
            folder.fetch(name, Path(copies) / name)
        return backed_up_chunks(results_path, copies)


def _lost_errors(ray) -> tuple[type, ...]:
    """Errors after which the cluster cannot cancel the tasks left."""
    names = ("LocalRayletDiedError", "RaySystemError")
    errors = [getattr(ray.exceptions, name, ConnectionError) for name in names]
    return (ConnectionError, *errors)


def _failure_message(ray, error: BaseException, address: str, outcome: str) -> str:
    """One line: what failed, the `outcome` (what is kept), and how to resume."""
    resume = "start it again (`ray status` shows it) and rerun the same sweep"
    if isinstance(error, ClusterError):
        failure = str(error)
    elif isinstance(error, ray.exceptions.RayTaskError):
        cause = error.cause if isinstance(error.cause, Exception) else error
        failure = f"a chunk failed on the Ray cluster ({first_line(cause)})"
        if isinstance(cause, ImportError):
            failure += "; every node needs keras_nalu, Keras and the backend"
        resume = "mend that and rerun the same sweep"
    elif type(error).__name__ in ("WorkerCrashedError", "OutOfMemoryError"):
        failure = (
            f"a chunk's worker died and Ray's retries ran out ({first_line(error)})"
        )
        resume = "rerun the same sweep (`ray status` shows the cluster's nodes)"
    else:
        failure = f"lost the Ray cluster at {address} ({first_line(error)})"
    return f"{failure}; {outcome}: {resume}."


def _chunk_task(chunk: Chunk, limits: ChunkLimits, versions: dict[str, str]) -> dict:
    """One chunk in a Ray worker with the driver's `versions`: its rows, and the
    step its backup stood at. Ray's cancellation backs it up, then stops it."""
    from keras_nalu.sweeps.training import train_chunk

    here = _versions()
    differ = [
        f"{name} {here.get(name, 'missing')} (driver: {version})"
        for name, version in versions.items()
        if here.get(name) != version
    ]
    if differ:
        raise RuntimeError(
            f"the node at {socket.gethostname()} runs {', '.join(differ)}; every "
            "node needs the driver's keras_nalu, Keras and backend versions"
        )
    if limits.folder is None:
        return {"rows": train_chunk(chunk, progress=False), "resumed_from": 0}
    folder = BackupFolder(limits.folder)
    with (
        stop_at_interrupt(second_stops_now=False),
        folder.local_copy(backup_name(chunk)) as (path, sync),
    ):
        resumed_from = 0
        if path.exists():
            from keras_nalu.sweeps.engines.backup import read_backup

            # a backup it cannot read: train_chunk says what is wrong with it
            with contextlib.suppress(ValueError, IndexError):
                resumed_from = int(read_backup(path)[0]["step"])
        # train_chunk backs the chunk up to `path`, its file in that folder
        own = ChunkLimits(path.parent, limits.backup_every)
        rows = train_chunk(chunk, progress=sync, limits=own)
    return {"rows": rows, "resumed_from": resumed_from}


def _versions() -> dict[str, str]:
    """The versions every node must share with the driver."""
    import keras

    import keras_nalu

    backend = keras.backend.backend()
    versions = {"keras_nalu": keras_nalu.__version__, "keras": keras.__version__}
    versions["backend"] = backend
    with contextlib.suppress(ImportError, AttributeError):
        versions[backend] = importlib.import_module(backend).__version__
    return versions


__all__ = ["backed_up_chunks_in", "check_ray_arguments", "ray_options", "run_on_ray"]
