"""Sweeps on a Ray cluster: the connection, chunks as Ray tasks, their backups.

`run_sweep(..., ray_address=...)` hands its chunks to `run_on_ray`: each
chunk is one Ray task with the resources of `ray_options`, and the driver
(the process that called `run_sweep`) writes the rows of every finished
chunk. With a `backup_dir` that every node can reach (a shared folder, or an
fsspec URL such as `s3://bucket/sweep`), a task backs its chunk up there
every `backup_every` seconds, and whichever worker picks the chunk up again
(Ray's retry after a lost worker or node, or a later sweep) continues it.

The address is checked before Ray is asked to join it (`connect`), and the
cluster is watched while the sweep runs: an unreachable cluster, a refused
token, a lost cluster or a chunk that failed after Ray's retries all end the
sweep with one `ClusterError` that says what happened, how many rows are kept
and how to resume. The guide is docs/cluster.md.
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
from urllib.parse import urlsplit

from keras_nalu.sweeps.chunks import (
    Chunk,
    backed_up_chunks,
    backup_name,
    train_chunk,
)

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
"""Seconds a TCP connection to the cluster's address may take."""

LOST_AFTER = 10.0
"""Seconds the cluster's address must stay unreachable to count as lost."""

_DEFAULT_PORTS = {"gcs": 6379, "client": 10001}


class ClusterError(RuntimeError):
    """A Ray cluster that cannot be reached, was lost, or failed a chunk.

    Its message is one line: what happened, what to try, and for a sweep
    that had started, how many rows are kept and how to resume.
    """


def ray_options(engine: str, gpus_per_chunk: float = 0.0) -> dict:
    """The Ray resources and environment of one chunk's task.

    Every chunk asks for one CPU and `gpus_per_chunk` GPUs: 1 gives each
    chunk a GPU of its own, 0.25 lets four chunks share one (Ray then
    places up to four such tasks on a GPU and shows each the same device).
    A chunk that shares a GPU is held to its share of the memory: JAX
    preallocates that fraction (less a tenth) instead of 75 %, and
    TensorFlow grows its memory as needed instead of taking it all. The
    workers run the driver's Keras backend with its TensorFlow log level.

    Args:
        engine: the Keras backend the chunks train on (`"jax"`, ...).
        gpus_per_chunk: 0 for none; a fraction in (0, 1], or a whole number.

    Example:

    >>> options = ray_options("jax", gpus_per_chunk=0.25)
    >>> options["num_gpus"], options["runtime_env"]["env_vars"]["KERAS_BACKEND"]
    (0.25, 'jax')
    >>> options["runtime_env"]["env_vars"]["XLA_PYTHON_CLIENT_MEM_FRACTION"]
    '0.225'
    >>> ray_options("tensorflow")["num_gpus"]
    0
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
        raise ValueError(
            "run_sweep expects gpus_per_chunk to be 0, a fraction of one GPU "
            "(e.g. 0.25 for four chunks a GPU) or a whole number of GPUs. "
            f"Received: gpus_per_chunk={gpus_per_chunk!r}"
        )
    return value


def check_ray_arguments(
    ray_address, backup_dir, backup_every, gpus_per_chunk, chunks_per_device
) -> str | None:
    """Refuses what only Ray or only a local sweep can do; the backup folder.

    Returns `backup_dir` as the tasks will use it (an absolute path or a
    URL), or None.
    """
    check_gpus_per_chunk(gpus_per_chunk)
    if ray_address is None:
        if backup_dir is not None or gpus_per_chunk:
            raise ValueError(
                "run_sweep takes backup_dir and gpus_per_chunk with a "
                "ray_address only; here, chunks are backed up beside the results "
                "file and share a device by chunks_per_device. Received: "
                f"backup_dir={backup_dir!r}, gpus_per_chunk={gpus_per_chunk!r}"
            )
        return None
    if chunks_per_device != 1:
        raise ValueError(
            "On Ray, chunks share a GPU by gpus_per_chunk (e.g. 0.25 for four "
            "chunks a GPU), not chunks_per_device. Received: "
            f"chunks_per_device={chunks_per_device!r}"
        )
    if backup_dir is None:
        return None
    if backup_every is None:
        raise ValueError(
            "run_sweep backs chunks up to backup_dir every backup_every seconds: "
            f"pass both, or neither. Received: backup_dir={backup_dir!r}, "
            "backup_every=None"
        )
    return _BackupFolder.checked(backup_dir).location


def run_on_ray(
    chunks: Sequence[Chunk],
    on_rows: Callable[[list[dict]], None],
    on_steps: Callable[[int], None],
    address: str,
    results_path: Path,
    backup_dir: str | None = None,
    backup_every: float | None = 600.0,
    gpus_per_chunk: float = 0.0,
) -> None:
    """Trains `chunks` as Ray tasks; `on_rows` gets each finished chunk's rows.

    Args:
        chunks: the chunks, submitted in this order.
        on_rows, on_steps: the sweep's callbacks (rows to write, seed-steps
            done), called here, in the driver.
        address: `"local"` starts a Ray runtime on this machine for this
            sweep; `"auto"`, `HOST:PORT` or `ray://HOST:PORT` (Ray Client)
            joins a cluster. A Ray already initialized here is used as is.
        results_path: the results file, named in messages.
        backup_dir: a folder or fsspec URL every node can reach, from
            `check_ray_arguments`; None for no backups.
        backup_every: seconds between two backups of a chunk.
        gpus_per_chunk: as for `ray_options`.

    Raises:
        ClusterError: the cluster could not be reached or was lost, or a
            chunk failed after Ray's retries; the rows of the finished chunks
            are written.
    """
    import keras

    ray = _import_ray()
    connection = _Connection.open(ray, address)
    if backup_every is None:  # asked for no backups
        backup_dir = None
    elif backup_dir is None:
        logger.warning(
            "on Ray without a backup folder (backup_dir, --backup-dir), the "
            "chunks in training are not backed up: a lost worker or cluster "
            "trains them again from the start"
        )
    pending: dict = {}
    written = 0
    lost = False
    try:
        options = ray_options(keras.backend.backend(), gpus_per_chunk)
        task = ray.remote(**options)(_chunk_task)
        versions = _versions()
        pending = {
            task.remote(chunk, backup_dir, backup_every, versions): chunk
            for chunk in chunks
        }
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=2.0)
            if not ready:
                if connection.lost():
                    lost = True
                    raise ClusterError(
                        f"lost the Ray cluster at {connection.address} (nothing "
                        f"has answered there for {LOST_AFTER:g} s)"
                    )
                continue
            chunk = pending.pop(ready[0])
            result = ray.get(ready[0])
            if result["resumed_from"]:
                logger.info(
                    "chunk %s continued from its backup at step %d",
                    backup_name(chunk),
                    result["resumed_from"],
                )
            on_rows(result["rows"])
            written += len(result["rows"])
            on_steps(chunk.steps)
    except (ClusterError, ray.exceptions.RayError, ConnectionError) as error:
        lost = lost or isinstance(error, _lost_errors(ray))
        raise ClusterError(
            _failure_message(
                ray,
                error,
                connection.address,
                written,
                len(pending),
                results_path,
                backup_dir,
            )
        ) from None
    finally:
        if not lost:
            for reference in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(reference, force=True)
        if connection.started:
            ray.shutdown()


def backed_up_chunks_in(results_path: Path, backup_dir: str) -> list[tuple[Chunk, str]]:
    """`backed_up_chunks` of a Ray sweep's backup folder (a path or a URL)."""
    folder = _BackupFolder(backup_dir)
    if folder.fs is None:
        return backed_up_chunks(results_path, folder.location)
    with tempfile.TemporaryDirectory() as copies:
        for name in folder.names():
            folder.fetch(name, Path(copies) / name)
        return backed_up_chunks(results_path, copies)


# --- the connection -----------------------------------------------------------


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(
            "the Ray backend needs ray: pip install 'keras-arithmetic-units[ray]'"
        ) from None
    return ray


class _Connection:
    """This driver's link to a cluster, and the address that shows it lives."""

    def __init__(self, address: str, started: bool, endpoint=None):
        self.address = address
        self.started = started
        self.endpoint = endpoint  # (host, port) to watch, or None
        self._failing_since = None

    @classmethod
    def open(cls, ray, address: str) -> _Connection:
        if ray.is_initialized():  # the caller's own runtime or cluster
            return cls(address, started=False, endpoint=_gcs_endpoint(ray))
        if address == "local":
            ray.init(address="local", include_dashboard=False, log_to_driver=False)
            return cls("this machine's Ray runtime", started=True)
        endpoint = _endpoint(address)
        _probe(address, endpoint)
        if not address.startswith("ray://") and address != "auto":
            _check_token(address, endpoint)
        try:
            _init(ray, address)
        except Exception as error:  # noqa: BLE001 - Ray raises several kinds
            hint = "check the cluster with `ray status` on its head node"
            if _token_mode() != "token":
                hint += (
                    ", and if it uses token authentication, export RAY_AUTH_MODE=token"
                )
            raise ClusterError(
                f"cannot join the Ray cluster at {address} ({_first_line(error)}); "
                + hint
            ) from None
        return cls(address, started=True, endpoint=endpoint)

    def lost(self) -> bool:
        """Whether the cluster's address has refused connections for a while."""
        if self.endpoint is None:
            return False
        try:
            socket.create_connection(self.endpoint, timeout=CONNECT_TIMEOUT).close()
        except OSError:
            now = time.monotonic()
            if self._failing_since is None:
                self._failing_since = now
            return now - self._failing_since >= LOST_AFTER
        self._failing_since = None
        return False


def _endpoint(address: str) -> tuple[str, int]:
    """The (host, port) a Ray address connects to first."""
    if address == "auto":
        return _auto_endpoint()
    client = address.startswith("ray://")
    try:
        parts = urlsplit(address if client else f"//{address}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or "/" in address.removeprefix("ray://"):
        raise ClusterError(
            f"--ray-address {address!r} is not local, auto, HOST:PORT or "
            "ray://HOST:PORT"
        )
    return host, port or _DEFAULT_PORTS["client" if client else "gcs"]


def _auto_endpoint() -> tuple[str, int] | None:
    """Where `ray.init(address="auto")` will connect, as Ray itself finds it."""
    try:
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:  # another Ray layout: Ray finds it, unchecked
        return None
    try:
        address = canonicalize_bootstrap_address("auto")
    except ConnectionError as error:
        raise ClusterError(
            f"no Ray cluster found for --ray-address auto ({_first_line(error)}); "
            "start one with `ray start --head`, or pass its HOST:PORT"
        ) from None
    return _endpoint(address) if address else None


def _probe(address: str, endpoint) -> None:
    if endpoint is None:
        return
    host, port = endpoint
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        if isinstance(error, socket.gaierror):
            reason = f"unknown host {host}"
        elif isinstance(error, TimeoutError):
            reason = f"no answer within {CONNECT_TIMEOUT:g} s"
        else:
            reason = error.strerror or type(error).__name__
        raise ClusterError(
            f"cannot reach a Ray cluster at {address} ({reason}); check the "
            "address, and that the cluster runs: `ray status` on its head node"
        ) from None


def _check_token(address: str, endpoint) -> None:
    """Asks the cluster once, so that a refused token fails at once, in one line.

    Joining a cluster of token authentication without its token would
    otherwise retry for about 20 s, logging each refusal, and then report a
    failed connection that does not say why.
    """
    try:
        from ray._raylet import GcsClient
        from ray.exceptions import AuthenticationError, RpcError
    except ImportError:  # another Ray layout: ray.init will say what it can
        return
    from keras_nalu._startup import silenced_stderr

    try:
        with silenced_stderr():  # Ray logs the refusal in C++
            GcsClient(address="{}:{}".format(*endpoint))
    except AuthenticationError:
        if _token_mode() == "token":
            fix = (
                "this driver's token is not the cluster's: set RAY_AUTH_TOKEN or "
                "copy ~/.ray/auth_token from the head node"
            )
        else:
            fix = (
                "export RAY_AUTH_MODE=token, with the cluster's token in "
                "RAY_AUTH_TOKEN or ~/.ray/auth_token (as on the head node)"
            )
        raise ClusterError(
            f"the Ray cluster at {address} uses token authentication and refused "
            f"this driver; {fix}"
        ) from None
    except RpcError as error:
        raise ClusterError(
            f"nothing at {address} answers as a Ray cluster ({_first_line(error)}); "
            "check the address (the head node's GCS port, 6379 unless `ray start "
            "--port` said otherwise) with `ray status` there"
        ) from None
    except Exception:  # noqa: BLE001 - a Ray without this client: ray.init decides
        return


def _token_mode() -> str:
    return os.environ.get("RAY_AUTH_MODE", "").lower()


def _gcs_endpoint(ray) -> tuple[str, int] | None:
    """The GCS address of the Ray this process already joined, if it has one."""
    try:
        address = ray.get_runtime_context().gcs_address
        return _endpoint(address)
    except Exception:  # noqa: BLE001 - Ray Client, or no GCS address to watch
        return None


# --- failures -----------------------------------------------------------------


def _lost_errors(ray) -> tuple[type, ...]:
    """Errors after which the cluster cannot cancel the tasks left."""
    errors = ray.exceptions
    return tuple(
        getattr(errors, name)
        for name in ("LocalRayletDiedError", "RaySystemError")
        if hasattr(errors, name)
    ) + (ConnectionError,)


CLIENT_ATTEMPTS = 3


def _init(ray, address: str) -> None:
    """`ray.init`, tried again where a Ray Client server fails to start in time.

    The head node starts a server for each Ray Client driver; on a loaded
    head that start can miss Ray's deadline ("Initialization failure from
    server"), and the next try usually succeeds.
    """
    for attempt in range(1, CLIENT_ATTEMPTS + 1):
        try:
            ray.init(address=address, log_to_driver=False)
            return
        except ConnectionAbortedError:
            if not address.startswith("ray://") or attempt == CLIENT_ATTEMPTS:
                raise
            ray.shutdown()
            time.sleep(2.0 * attempt)


def _failure_message(
    ray,
    error: BaseException,
    address: str,
    written: int,
    left: int,
    results_path,
    backup_dir,
) -> str:
    """One line: what failed, what is kept, and how to resume."""
    if isinstance(error, ClusterError):
        failure = str(error)
        resume = "start it again (`ray status` shows it) and rerun the same sweep"
    elif isinstance(error, ray.exceptions.RayTaskError):
        cause = error.cause if isinstance(error.cause, Exception) else error
        failure = f"a chunk failed on the Ray cluster ({_first_line(cause)})"
        if isinstance(cause, ImportError):
            failure += "; every node needs keras_nalu, Keras and the backend"
        resume = "mend that and rerun the same sweep"
    elif type(error).__name__ in ("WorkerCrashedError", "OutOfMemoryError"):
        failure = (
            f"a chunk's worker died and Ray's retries ran out ({_first_line(error)})"
        )
        resume = "rerun the same sweep (`ray status` shows the cluster's nodes)"
    else:
        failure = f"lost the Ray cluster at {address} ({_first_line(error)})"
        resume = "start it again (`ray status` shows it) and rerun the same sweep"
    kept = f"{written} rows of this sweep are kept in {results_path}"
    if not left:
        return f"{failure}; {kept}."
    if backup_dir is not None:
        where = f"each continues from its last backup in {backup_dir}"
    else:
        where = "from their start: no backup folder"
    return f"{failure}; {kept}, {left} chunks are left ({where}): {resume}."


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# --- the task -----------------------------------------------------------------


def _chunk_task(
    chunk: Chunk,
    backup_dir: str | None,
    backup_every: float | None,
    driver_versions: dict[str, str],
) -> dict:
    """One chunk in a Ray worker: its rows, and the step its backup stood at."""
    _check_versions(driver_versions)
    if backup_dir is None:
        return {"rows": train_chunk(chunk, progress=False), "resumed_from": 0}
    folder = _BackupFolder(backup_dir)
    with folder.local_copy(backup_name(chunk)) as (path, sync):
        resumed_from = _backup_step(path)
        rows = train_chunk(chunk, progress=sync, backup=path, backup_every=backup_every)
    return {"rows": rows, "resumed_from": resumed_from}


def _backup_step(path: Path) -> int:
    if not path.exists():
        return 0
    from keras_nalu.sweeps.engines.backup import read_backup

    try:
        return int(read_backup(path)[0]["step"])
    except (ValueError, IndexError):  # train_chunk says what is wrong with it
        return 0


def _versions() -> dict[str, str]:
    """The versions every node must share with the driver."""
    import keras

    import keras_nalu

    backend = keras.backend.backend()
    versions = {
        "keras_nalu": keras_nalu.__version__,
        "keras": keras.__version__,
        "backend": backend,
    }
    with contextlib.suppress(ImportError, AttributeError):
        versions[backend] = importlib.import_module(backend).__version__
    return versions


def _check_versions(driver_versions: dict[str, str]) -> None:
    here = _versions()
    differ = [
        f"{name} {here.get(name, 'missing')} (driver: {version})"
        for name, version in driver_versions.items()
        if here.get(name) != version
    ]
    if differ:
        raise RuntimeError(
            f"the node at {socket.gethostname()} runs {', '.join(differ)}; every "
            "node needs the driver's keras_nalu, Keras and backend versions"
        )


# --- the backup folder --------------------------------------------------------


class _BackupFolder:
    """A folder of chunk backups: a path every node mounts, or an fsspec URL."""

    def __init__(self, location: str):
        self.location = location
        self.fs = None
        if "://" in location:
            import fsspec

            self.fs, self.root = fsspec.core.url_to_fs(location)
            self.root = self.root.rstrip("/")

    @classmethod
    def checked(cls, backup_dir) -> _BackupFolder:
        """The folder as the driver checks it: created, and an absolute path."""
        text = os.fspath(backup_dir) if isinstance(backup_dir, os.PathLike) else None
        text = backup_dir if isinstance(backup_dir, str) else text
        if not text:
            raise ValueError(
                "run_sweep expects backup_dir to be a folder or a URL. "
                f"Received: backup_dir={backup_dir!r}"
            )
        if "://" not in text:
            path = Path(text).expanduser().absolute()
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise ValueError(
                    f"cannot create backup_dir {text!r} "
                    f"({error.strerror or type(error).__name__}); pass a folder "
                    "every node of the cluster can write to"
                ) from None
            return cls(str(path))
        try:
            import fsspec  # noqa: F401
        except ImportError:
            raise ValueError(
                f"backup_dir {text!r} is a URL, which needs fsspec: pip install "
                "fsspec and the file system's package (s3fs, gcsfs, ...)"
            ) from None
        try:
            folder = cls(text)
            folder.fs.makedirs(folder.root, exist_ok=True)
        except Exception as error:  # noqa: BLE001 - any file system's refusal
            raise ValueError(
                f"cannot open backup_dir {text!r} ({_first_line(error)})"
            ) from None
        return folder

    def names(self) -> list[str]:
        if self.fs is None:
            return sorted(p.name for p in Path(self.location).glob("c*.npz"))
        return sorted(Path(path).name for path in self.fs.glob(f"{self.root}/c*.npz"))

    def fetch(self, name: str, local: Path) -> bool:
        remote = f"{self.root}/{name}"
        if not self.fs.exists(remote):
            return False
        self.fs.get_file(remote, str(local))
        return True

    @contextlib.contextmanager
    def local_copy(self, name: str):
        """`(path, sync)`: the backup as a local file, and a progress callback.

        A path folder is used in place (`sync` does nothing). For a URL, the
        backup is fetched into a temporary folder, `sync` uploads it after
        every backup `train_chunk` writes (it is called after each
        evaluation block), and a chunk that finished deletes it.
        """
        if self.fs is None:
            yield Path(self.location) / name, False
            return
        remote = f"{self.root}/{name}"
        with tempfile.TemporaryDirectory() as copies:
            local = Path(copies) / name
            self.fetch(name, local)
            uploaded = [_mtime(local)]

            def sync(_steps):
                stamp = _mtime(local)
                if stamp is not None and stamp != uploaded[0]:
                    # whole or not at all: a kill mid-upload leaves the last one
                    self.fs.put_file(str(local), remote + ".partial")
                    self.fs.mv(remote + ".partial", remote)
                    uploaded[0] = stamp

            yield local, sync
        if self.fs.exists(remote):
            self.fs.rm_file(remote)


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


__all__ = [
    "ClusterError",
    "backed_up_chunks_in",
    "check_ray_arguments",
    "ray_options",
    "run_on_ray",
]
