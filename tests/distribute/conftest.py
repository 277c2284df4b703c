"""Starts the distributed runs once, together, so their TF imports overlap.

Three fresh processes: `_mirrored_script.py` (two logical CPUs; it also runs
`test_tf_distribute_patches.py`'s steps_per_execution > 1 case) and the two
`MultiWorkerMirroredStrategy` workers (`_worker.py`) on 127.0.0.1. While they
run, this process trains the single-device references.

Under pytest-xdist the tests of this folder may land on several xdist
workers: the first one to get here launches the processes, the others read
the same folder. A watcher thread per process enforces the time limit (it
kills the process and records the timeout), and the launching session waits
for the watchers before it ends, so nothing outlives the test run.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from keras_nalu._files import atomic_write
from tests.distribute import _worker

HERE = Path(__file__).parent
TIMEOUT_SECONDS = 900
LAUNCHED = "launched"


def free_loopback_ports(count: int) -> list[int]:
    """Ports the OS hands out on 127.0.0.1, held open until all are chosen."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _watch(process: subprocess.Popen, log, status: Path, timeout: float) -> None:
    """Waits for `process` (killing it after `timeout`), records how it ended."""
    try:
        process.wait(timeout=max(timeout, 1))
        outcome = str(process.returncode)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        outcome = "timeout"
    finally:
        log.close()
    with atomic_write(status) as handle:
        handle.write(outcome)


class Runs:
    """The distributed processes of one test session, by name."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self.watchers: list[threading.Thread] = []

    def launch_once(self) -> bool:
        """Starts every process unless another xdist worker already did."""
        try:
            os.close(os.open(self.out_dir / LAUNCHED, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
        self.start("mirrored", "_mirrored_script.py")
        ports = free_loopback_ports(_worker.WORKERS)
        cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
        for index in range(_worker.WORKERS):
            task = {"type": "worker", "index": index}
            self.start(
                f"worker_{index}",
                "_worker.py",
                TF_CONFIG=json.dumps({"cluster": cluster, "task": task}),
            )
        return True

    def start(self, name: str, script: str, **env) -> None:
        log = open(self.out_dir / f"{name}.log", "w")  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, str(HERE / script), str(self.out_dir)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env},
        )
        watcher = threading.Thread(
            target=_watch,
            args=(process, log, self.out_dir / f"{name}.status", TIMEOUT_SECONDS),
            daemon=True,
        )
        watcher.start()
        self.watchers.append(watcher)

    def wait(self, name: str) -> None:
        """Waits for `name` to succeed; fails the test with its log if not."""
        status = self.out_dir / f"{name}.status"
        started = (self.out_dir / LAUNCHED).stat().st_mtime
        while not status.exists():
            if time.time() > started + TIMEOUT_SECONDS + 60:
                pytest.fail(f"{name} never reported how it ended")
            time.sleep(0.2)
        outcome = status.read_text()
        if outcome != "0":
            log = (self.out_dir / f"{name}.log").read_text()[-4000:]
            pytest.fail(f"{name} ended with {outcome}:\n{log}")

    def join(self) -> None:
        for watcher in self.watchers:
            watcher.join()


@pytest.fixture(scope="module", autouse=True)
def no_multi_worker_strategy_in_the_test_process():
    """MultiWorkerMirroredStrategy runs only in fresh processes.

    TensorFlow once crashed (SIGSEGV) deleting such a strategy's iterator
    inside the test process, under load, killing the xdist worker and every
    test on it. The scripts (`_worker.py`, `_multi_worker_fit_script.py`) run
    it in processes of their own; here, creating one fails the test at once.
    """
    import tensorflow as tf

    def refuse(*args, **kwargs):
        raise AssertionError(
            "create MultiWorkerMirroredStrategy in a fresh process (see "
            "_multi_worker_fit_script.py), not in the test process"
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tf.distribute.MultiWorkerMirroredStrategy, "__init__", refuse)
        yield


@pytest.fixture(scope="session")
def distributed_runs(tmp_path_factory):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Shared by this session's xdist workers (their basetemps' parent).
        out_dir = tmp_path_factory.getbasetemp().parent / "distribute"
        out_dir.mkdir(exist_ok=True)
    else:
        out_dir = tmp_path_factory.mktemp("distribute")
    runs = Runs(out_dir)
    try:
        if runs.launch_once():
            # The single-device references train here meanwhile (cached).
            for config in _worker.CONFIGS:
                _worker.reference(config)
                _worker.reference(config, scheduled=False)
            _worker.reference("sgd", regularizers_outside_scope=True)
            _worker.reference(_worker.MULTI_STEP_CONFIG)
        yield runs
    finally:
        runs.join()
