"""The link to a Ray cluster: the address checked, joined, and watched.

Each failure is one `ClusterError` line, at once (docs/cluster.md).
"""

from __future__ import annotations

import os
import socket
import time
from urllib.parse import urlsplit

CONNECT_TIMEOUT = 10.0
"""Seconds a TCP connection to the cluster's address may take."""

LOST_AFTER = 10.0
"""Seconds the cluster's address must stay unreachable to count as lost."""


class ClusterError(RuntimeError):
    """A Ray cluster that cannot be reached, was lost, or failed a chunk: one
    line, what happened, what to try, and for a sweep that had started, how
    many rows are kept and how to resume."""


class RayConnection:
    """This driver's link to a cluster, the (host, port) that shows it lives,
    and whether it was lost (then its tasks cannot be cancelled)."""

    def __init__(self, address: str, started: bool, endpoint=None):
        self.address = address
        self.started = started
        self.endpoint = endpoint
        self.lost = False
        self._failing_since = None

    @classmethod
    def open(cls, ray, address: str) -> RayConnection:
        """Joins the cluster at `address` (checked first), or one ClusterError."""
        if ray.is_initialized():  # the caller's own runtime or cluster
            try:
                endpoint = _endpoint(ray.get_runtime_context().gcs_address)
            except Exception:  # noqa: BLE001 - Ray Client, or no GCS address to watch
                endpoint = None
            return cls(address, started=False, endpoint=endpoint)
        if address == "local":
            ray.init(address="local", include_dashboard=False, log_to_driver=False)
            return cls("this machine's Ray runtime", started=True)
        endpoint = _endpoint(address)
        if endpoint is not None:  # else Ray finds the address itself, unchecked
            _probe(address, endpoint)
            _check_server(address, endpoint)
        if not address.startswith("ray://") and address != "auto":
            _check_token(address, endpoint)
        try:
            _init(ray, address)
        except Exception as error:  # noqa: BLE001 - Ray raises several kinds
            token = ", and if it uses token authentication, export RAY_AUTH_MODE=token"
            raise ClusterError(
                f"cannot join the Ray cluster at {address} ({first_line(error)}); "
                "check the cluster with `ray status` on its head node"
                + ("" if _token_mode() == "token" else token)
            ) from None
        return cls(address, started=True, endpoint=endpoint)

    def watch(self) -> None:
        """Raises a ClusterError once the address has refused connections for
        `LOST_AFTER` seconds."""
        try:
            _probe(self.address, self.endpoint)
        except ClusterError:
            self._failing_since = self._failing_since or time.monotonic()
            if time.monotonic() - self._failing_since >= LOST_AFTER:
                self.lost = True
                raise ClusterError(
                    f"lost the Ray cluster at {self.address} "
                    f"(nothing has answered there for {LOST_AFTER:g} s)"
                ) from None
        else:
            self._failing_since = None


def _init(ray, address: str, attempts: int = 3) -> None:
    """`ray.init` without Ray's notes, tried again where the Ray Client server
    that a loaded head node starts for this driver misses Ray's deadline.

    The C++ core reads RAY_BACKEND_LOG_LEVEL once, here: "fatal" (unless the
    user set one) makes a lost cluster one line, not a "Failed to push error
    to driver" for every chunk."""
    from keras_nalu._startup import silenced_stderr

    ours = "RAY_BACKEND_LOG_LEVEL" not in os.environ
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    try:
        for attempt in range(1, attempts + 1):
            try:
                with silenced_stderr():
                    ray.init(address=address, log_to_driver=False)
                return
            except ConnectionAbortedError:
                if not address.startswith("ray://") or attempt == attempts:
                    raise
                ray.shutdown()
                time.sleep(2.0 * attempt)
    finally:
        if ours:
            os.environ.pop("RAY_BACKEND_LOG_LEVEL", None)


def _endpoint(address: str) -> tuple[str, int] | None:
    """The (host, port) a Ray address connects to first; for `auto`, as Ray
    itself finds it, or None where Ray finds it unchecked."""
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address
        except ImportError:  # another Ray layout
            return None
        try:
            address = canonicalize_bootstrap_address("auto")
        except ConnectionError as error:
            raise ClusterError(
                f"no Ray cluster found for --ray-address auto ({first_line(error)}); "
                "start one with `ray start --head`, or pass its HOST:PORT"
            ) from None
        if not address:
            return None
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
    return host, port or (10001 if client else 6379)


def _probe(address: str, endpoint) -> None:
    """Refuses an `endpoint` (host, port) that a TCP connection cannot reach."""
    if endpoint is None:
        return
    try:
        socket.create_connection(endpoint, timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        if isinstance(error, socket.gaierror):
            reason = f"unknown host {endpoint[0]}"
        elif isinstance(error, TimeoutError):
            reason = f"no answer within {CONNECT_TIMEOUT:g} s"
        else:
            reason = error.strerror or type(error).__name__
        raise ClusterError(
            f"cannot reach a Ray cluster at {address} ({reason}); check the "
            "address, and that the cluster runs: `ray status` on its head node"
        ) from None


def _check_server(address: str, endpoint) -> None:
    """Asks the server at `endpoint` what it is (one Ray Client ping), so that a
    wrong port fails at once: Ray would retry for 30 to 45 s, then time out
    without saying what answered."""
    try:
        import grpc
        from ray._private.grpc_utils import init_grpc_channel
        from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc
    except ImportError:  # another Ray layout: ray.init will say what it can
        return
    client = address.startswith("ray://")
    channel = init_grpc_channel("{}:{}".format(*endpoint), asynchronous=False)
    try:
        ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(
            ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING),
            timeout=CONNECT_TIMEOUT,
        )
        answer = grpc.StatusCode.OK
    except grpc.RpcError as error:
        answer, details = error.code(), error.details() or ""
    finally:
        channel.close()
    if client and answer == grpc.StatusCode.OK:
        return
    if client and answer == grpc.StatusCode.UNAUTHENTICATED:
        raise ClusterError(_refused_token(address))
    if answer in (grpc.StatusCode.OK, grpc.StatusCode.UNAUTHENTICATED):
        raise ClusterError(
            f"{address} is a Ray Client port, which the driver joins as "
            f"ray://{address}; or pass the head node's GCS port (6379 unless "
            "`ray start --port` said otherwise)"
        )
    if answer == grpc.StatusCode.UNIMPLEMENTED:
        if not client:  # a gRPC server: the GCS, whose answer comes next
            return
        reason = "a gRPC server that is not Ray Client, such as the GCS, answers"
    elif "http1" in details.lower() or "parsing http/2" in details.lower():
        reason = "a web server answers, such as Ray's dashboard"  # HTTP, not gRPC
    else:
        text = details.strip().splitlines()[0] if details.strip() else ""
        reason = f"{answer.name}: {text}" if text else answer.name
    raise _not_a_cluster(address, reason)


def _not_a_cluster(address: str, reason: str) -> ClusterError:
    port = (
        "the head node's Ray Client port, 10001 unless `ray start "
        "--ray-client-server-port` said otherwise"
        if address.startswith("ray://")
        else "the head node's GCS port, 6379 unless `ray start --port` said otherwise"
    )
    return ClusterError(
        f"nothing at {address} answers as a Ray cluster ({reason}); check the "
        f"address ({port}) with `ray status` there"
    )


def _refused_token(address: str) -> str:
    fix = (
        "this driver's token is not the cluster's: set RAY_AUTH_TOKEN or "
        "copy ~/.ray/auth_token from the head node"
        if _token_mode() == "token"
        else "export RAY_AUTH_MODE=token, with the cluster's token in "
        "RAY_AUTH_TOKEN or ~/.ray/auth_token (as on the head node)"
    )
    return (
        f"the Ray cluster at {address} uses token authentication and refused "
        f"this driver; {fix}"
    )


def _check_token(address: str, endpoint) -> None:
    """Asks the cluster once, so that a refused token fails at once, in one line
    (Ray would retry for about 20 s, then fail without saying why)."""
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
        raise ClusterError(_refused_token(address)) from None
    except RpcError as error:
        raise _not_a_cluster(address, first_line(error)) from None
    except Exception:  # noqa: BLE001 - a Ray without this client: ray.init decides
        return


def _token_mode() -> str:
    return os.environ.get("RAY_AUTH_MODE", "").lower()


def first_line(error: BaseException) -> str:
    text = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
