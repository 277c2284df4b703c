"""Sweeps on Ray clusters as they are run: `ray start`, lost clusters, backups.

The tests marked `with_a_cluster` start a real Ray cluster on this machine
(`ray start --head` in a temporary folder, token authentication on, as Ray
>= 2.52 turns it on wherever a token exists), which they share and stop by
ending its own processes, never with `ray stop` (which would stop every
cluster of the machine), or a driver: `keras-nalu sweep` processes, as a
user runs them. Each driver and Ray worker imports the Keras backend and
trains on its engine; these tests run on JAX (whose import takes half of
TensorFlow's), in make test's JAX pass. The tests marked
`without_a_cluster` run in its TensorFlow pass, where
`tests/sweeps/test_ray.py` trains Ray's workers on the TensorFlow engine.
The slow test of `ray job submit` runs on either.
"""

import contextlib
import copy
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import keras
import pandas as pd
import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

import keras_nalu  # noqa: E402
from keras_nalu.experiments import ExperimentConfig  # noqa: E402
from keras_nalu.sweeps import cluster, ray_connection, training  # noqa: E402
from keras_nalu.sweeps.chunks import Chunk, ChunkLimits, backup_name  # noqa: E402
from keras_nalu.sweeps.cluster import ray_options  # noqa: E402
from keras_nalu.sweeps.engines import (  # noqa: E402
    TimeLimitReached,
    read_backup,
    stop_at_interrupt,
    stop_requested,
)
from keras_nalu.sweeps.ray_connection import ClusterError  # noqa: E402
from keras_nalu.sweeps.results import read_results  # noqa: E402
from keras_nalu.sweeps.runner import plan_sweep, run_sweep  # noqa: E402
from keras_nalu.sweeps.training import train_chunk  # noqa: E402
from tests.helpers import held_training  # noqa: E402

TIMING = ["wall_time", "iterations_per_second"]
TINY = {
    "model": ["nau"],
    "operation": ["add"],
    "input_size": [10],
    "iterations": [100],
    "eval_every": [100],
}
#: Three chunks of one seed each, which the tests of `_fake_ray` share.
THREE_CHUNKS = {**TINY, "model": ["nau", "nmu", "nac"]}
ROOT = Path(keras_nalu.__file__).resolve().parent.parent
BACKEND = keras.backend.backend()

with_a_cluster = pytest.mark.skipif(
    BACKEND != "jax",
    reason="starts a Ray cluster or a driver: runs in make test's JAX pass",
)
without_a_cluster = pytest.mark.skipif(
    BACKEND == "jax",
    reason="needs no cluster: runs in make test's TensorFlow pass",
)


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    return (
        table.drop(columns=TIMING)
        .sort_values(["config_id", "seed"])
        .reset_index(drop=True)
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _page_lines() -> list[str]:
    """The lines docs/cluster.md quotes as what a sweep prints."""
    text = (ROOT / "docs" / "cluster.md").read_text()
    blocks = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line]


def _assert_on_page(line: str, values: dict[str, str]) -> None:
    """`line`, its values (`{real: as on the page}`) replaced, is quoted on the page."""
    for real, on_page in values.items():
        line = line.replace(real, on_page)
    assert line in _page_lines(), line


def _grid_flags(grid: dict) -> list[str]:
    """`--grid` flags of a grid; `{"a:b": [(1, 2)]}` gives `--grid a:b=1:2`."""
    flags = []
    for key, values in grid.items():
        text = ",".join(
            ":".join(map(str, value)) if isinstance(value, tuple) else str(value)
            for value in values
        )
        flags += ["--grid", f"{key}={text}"]
    return flags


# --- without a cluster ----------------------------------------------------------


@without_a_cluster
def test_ray_options_ask_for_the_gpus_given():
    assert ray_options("jax")["num_gpus"] == 0
    assert ray_options("jax", 1)["num_gpus"] == 1
    assert ray_options("jax", 2.0)["num_gpus"] == 2
    shared = ray_options("tensorflow", 0.25)
    assert shared["num_gpus"] == 0.25 and shared["num_cpus"] == 1
    env = shared["runtime_env"]["env_vars"]
    assert env["KERAS_BACKEND"] == "tensorflow"
    # a quarter of a GPU: at most that share of its memory (less a tenth)
    assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.225"
    assert env["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert (
        "XLA_PYTHON_CLIENT_MEM_FRACTION"
        not in (ray_options("jax", 1)["runtime_env"]["env_vars"])
    )


@without_a_cluster
@pytest.mark.parametrize(
    "arguments, match",
    [
        ({"gpus_per_chunk": -1, "ray_address": "auto"}, "gpus_per_chunk=-1"),
        ({"gpus_per_chunk": 1.5, "ray_address": "auto"}, "gpus_per_chunk=1.5"),
        ({"gpus_per_chunk": "a", "ray_address": "auto"}, "gpus_per_chunk='a'"),
        ({"gpus_per_chunk": 0.5}, "with a ray_address only"),
        ({"backup_dir": "shared"}, "with a ray_address only"),
        ({"chunks_per_device": 4, "ray_address": "auto"}, "not chunks_per_device"),
        (
            {"backup_dir": "shared", "backup_every": None, "ray_address": "auto"},
            "backup_every=None",
        ),
    ],
)
def test_ray_arguments_are_refused_in_one_line(tmp_path, arguments, match):
    with pytest.raises(ValueError, match=re.escape(match)) as error:
        run_sweep(TINY, "0", tmp_path / "r.csv", progress=False, **arguments)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "r.csv").exists()


@without_a_cluster
def test_a_backup_url_without_its_file_system_is_refused(tmp_path):
    pytest.importorskip("fsspec")
    with pytest.raises(ValueError, match="cannot open backup_dir 'nosuchfs://"):
        run_sweep(
            TINY,
            "0",
            tmp_path / "r.csv",
            ray_address="auto",
            backup_dir="nosuchfs://bucket/sweep",
            progress=False,
        )


#: The rows of each chunk a test of `_fake_ray` trained, by chunk.
_TRAINED: dict[Chunk, list[dict]] = {}


def _fake_ray(monkeypatch, failing=(), nodes=None) -> list[dict]:
    """Ray as already joined, whose tasks run here when submitted.

    The chunks submitted at the indices `failing` fail as after Ray's
    retries, without training; `nodes` is what `ray.nodes()` tells. The
    tests check what the driver does with the tasks, not the training: a
    chunk trains once in this module, then gives the same rows again.
    """
    submitted = []
    results = {}

    def train_once(chunk, progress=False, limits=None, unroll=1):
        if chunk not in _TRAINED:
            _TRAINED[chunk] = train_chunk(chunk, progress, limits, unroll)
        return copy.deepcopy(_TRAINED[chunk])

    def remote(**options):
        def wrap(function):
            class Task:
                @staticmethod
                def remote(*args):
                    reference = object()
                    if len(submitted) in failing:
                        results[reference] = ray.exceptions.WorkerCrashedError()
                    else:
                        results[reference] = function(*args)
                    submitted.append(options)
                    return reference

            return Task

        return wrap

    def get(reference):
        result = results.pop(reference)
        if isinstance(result, Exception):
            raise result
        return result

    def no_nodes():
        raise RuntimeError("Ray has not been started yet.")

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "remote", remote)
    monkeypatch.setattr(ray, "wait", lambda refs, **_: (refs[:1], refs[1:]))
    monkeypatch.setattr(ray, "get", get)
    monkeypatch.setattr(ray, "cancel", lambda reference, **_: None)
    monkeypatch.setattr(ray, "nodes", no_nodes if nodes is None else lambda: nodes)
    monkeypatch.setattr(ray, "get_runtime_context", lambda: None)
    monkeypatch.setattr(training, "train_chunk", train_once)
    return submitted


@without_a_cluster
def test_fractional_gpus_are_in_the_options_of_every_submitted_chunk(
    tmp_path, monkeypatch, caplog
):
    submitted = _fake_ray(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="keras_nalu.sweeps"):
        outcome = run_sweep(
            THREE_CHUNKS,
            "0",
            tmp_path / "r.csv",
            chunk_size=1,
            ray_address="auto",
            gpus_per_chunk=0.25,
            progress=False,
        )
    assert outcome.new_rows == 3
    assert [options["num_gpus"] for options in submitted] == [0.25] * 3
    env = submitted[0]["runtime_env"]["env_vars"]
    assert env["KERAS_BACKEND"] == keras.backend.backend()
    # said once per sweep, not once per chunk
    notes = [r.message for r in caplog.records if "not backed up" in r.message]
    assert len(notes) == 1
    assert not list(tmp_path.glob("*.lock"))


@without_a_cluster
@pytest.mark.parametrize("backups", ["folder", "none"])
def test_no_word_about_backups_where_they_are_asked_for_or_refused(
    tmp_path, monkeypatch, caplog, backups
):
    _fake_ray(monkeypatch)
    options = {"backup_dir": tmp_path / "shared", "backup_every": 0}
    if backups == "none":  # --no-backup
        options = {"backup_every": None}
    with caplog.at_level(logging.WARNING, logger="keras_nalu.sweeps"):
        outcome = run_sweep(
            TINY, "0", tmp_path / "r.csv", ray_address="auto", progress=False, **options
        )
    assert outcome.new_rows == 1
    assert not caplog.records
    if backups == "folder":  # created, and empty once the sweep is done
        assert (tmp_path / "shared").is_dir()
        assert not list((tmp_path / "shared").iterdir())


@without_a_cluster
@pytest.mark.parametrize(
    "failing, backups, left",
    [
        # the chunk that failed is left too, with the one after it
        (
            (1,),
            "none",
            "1 rows of this sweep are kept in {results}, 2 chunks are "
            "left (from the start: no backup folder)",
        ),
        # nothing finished: no rows, and no results file
        (
            (0,),
            "none",
            "no chunk of this sweep had finished (no rows written), 3 "
            "chunks are left (from the start: no backup folder)",
        ),
        (
            (1,),
            "empty",
            "1 rows of this sweep are kept in {results}, 2 chunks are "
            "left (from the start: no backup in {backups} yet)",
        ),
        (
            (1,),
            "one",
            "1 rows of this sweep are kept in {results}, 2 chunks are "
            "left (1 continues from its last backup in {backups}, 1 from the start)",
        ),
        (
            (2,),
            "all",
            "2 rows of this sweep are kept in {results}, 1 chunk is "
            "left (it continues from its last backup in {backups})",
        ),
    ],
)
def test_a_failed_sweep_counts_the_chunks_left_and_their_backups(
    tmp_path, monkeypatch, failing, backups, left
):
    _fake_ray(monkeypatch, failing=failing)
    results, folder = tmp_path / "r.csv", tmp_path / "shared"
    options = {"backup_every": None}
    if backups != "none":
        options = {"backup_dir": folder, "backup_every": 600}
    grid = THREE_CHUNKS
    chunks = plan_sweep(grid, "0", results)
    if backups in ("one", "all"):  # the backups the failed chunks left behind
        folder.mkdir()
        for chunk in chunks[failing[0] : failing[0] + (1 if backups == "one" else 2)]:
            (folder / backup_name(chunk)).write_bytes(b"")
    with pytest.raises(ClusterError) as error:
        run_sweep(grid, "0", results, ray_address="auto", progress=False, **options)
    assert str(error.value) == (
        "a chunk's worker died and Ray's retries ran out (WorkerCrashedError: "
        "The worker died unexpectedly while executing this task. Check "
        "python-core-worker-*.log files for more information.); "
        + left.format(results=results, backups=folder)
        + ": rerun the same sweep (`ray status` shows the cluster's nodes)."
    )
    assert results.exists() == (failing != (0,))


@without_a_cluster
@pytest.mark.parametrize(
    "gpus, nodes, has",
    [
        (1, [], "its nodes have no GPU"),
        (1, [{"CPU": 2.0}], "its nodes have no GPU"),
        (
            2,
            [{"CPU": 8.0, "GPU": 1.0}, {"CPU": 8.0, "GPU": 1.0}],
            "the most a node has: 1",
        ),
        (0.5, [{"CPU": 2.0, "GPU": 0.25}], "the most a node has: 0.25"),
    ],
)
def test_gpus_that_no_node_has_are_refused_before_any_chunk(
    tmp_path, monkeypatch, gpus, nodes, has
):
    alive = [{"Alive": True, "Resources": resources} for resources in nodes]
    gone = {"Alive": False, "Resources": {"CPU": 8.0, "GPU": 8.0}}
    submitted = _fake_ray(monkeypatch, nodes=[*alive, gone])
    with pytest.raises(ValueError) as error:
        run_sweep(
            TINY,
            "0",
            tmp_path / "r.csv",
            ray_address="auto",
            gpus_per_chunk=gpus,
            progress=False,
        )
    what = "1 GPU" if gpus == 1 else f"{gpus:g} GPUs"
    line = (
        f"each chunk asks for {what} (gpus_per_chunk), but no "
        "node of the Ray cluster at auto has that many "
        f"({has}); pass 0 to train on CPUs, or add nodes with GPUs"
    )
    assert str(error.value) == line
    assert not submitted
    if not nodes:  # as the page quotes it
        _assert_on_page(
            f"keras-nalu sweep: error: {line}",
            {"at auto": "at 127.0.0.1:6379", "gpus_per_chunk": "--gpus-per-chunk"},
        )


@without_a_cluster
@pytest.mark.parametrize("autoscaler", [False, True])
def test_gpus_a_node_has_are_accepted(tmp_path, monkeypatch, autoscaler):
    from ray._private.state import state

    gpus = 0.0
    if autoscaler:  # GPU nodes that start on demand, none running
        largest = {"CPU": 64, "GPU": 4}
        monkeypatch.setattr(
            state, "get_max_resources_from_cluster_config", lambda: largest
        )
    else:
        gpus = 1.0
    nodes = [{"Alive": True, "Resources": {"CPU": 2.0, "GPU": gpus}}]
    submitted = _fake_ray(monkeypatch, nodes=nodes)
    run_sweep(
        TINY,
        "0",
        tmp_path / "r.csv",
        ray_address="auto",
        gpus_per_chunk=0.5,
        progress=False,
    )
    assert [options["num_gpus"] for options in submitted] == [0.5]


@without_a_cluster
@pytest.mark.parametrize("address, tries", [("ray://head:10001", 2), ("head:6379", 1)])
def test_a_ray_client_server_slow_to_start_is_tried_again(monkeypatch, address, tries):
    calls = []

    def init(address, **_):
        calls.append(address)
        if len(calls) == 1:
            raise ConnectionAbortedError("Initialization failure from server:")

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(ray_connection.time, "sleep", lambda _: None)
    if tries == 1:  # a plain address: Ray's own error, at once
        with pytest.raises(ConnectionAbortedError):
            ray_connection._init(ray, address)
    else:
        ray_connection._init(ray, address)
    assert calls == [address] * tries


@without_a_cluster
def test_a_chunk_continues_from_its_backup_at_a_url(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    config = ExperimentConfig(
        model="nmu", operation="mul", input_size=10, iterations=600, eval_every=200
    )
    chunk = Chunk(config, (0, 1))
    # The backup a worker killed after its first evaluation leaves behind.
    stopped = tmp_path / backup_name(chunk)
    with pytest.raises(TimeLimitReached):
        train_chunk(chunk, limits=ChunkLimits(tmp_path, 0, deadline=0))
    memory = fsspec.filesystem("memory")
    folder = f"/backups-{secrets.token_hex(4)}"
    memory.put_file(str(stopped), f"{folder}/{stopped.name}")
    try:
        result = cluster._chunk_task(
            chunk, ChunkLimits(f"memory://{folder}", 0), cluster._versions()
        )
        assert not memory.exists(f"{folder}/{stopped.name}")  # done: deleted
    finally:
        memory.rm(folder, recursive=True)
    assert result["resumed_from"] == 200
    uninterrupted = train_chunk(chunk)
    pd.testing.assert_frame_equal(
        pd.DataFrame(result["rows"]).drop(columns=TIMING),
        pd.DataFrame(uninterrupted).drop(columns=TIMING),
    )


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow's own warnings"
)
def test_tensorflow_retracing_warnings_are_silenced_while_a_chunk_trains(
    monkeypatch,
):
    # `train_chunk` is what a Ray worker runs: the silencing must be in it.
    import tensorflow as tf

    levels = []

    def train_runs(runs, progress, limits, on_records):
        levels.append(tf.get_logger().getEffectiveLevel())

    monkeypatch.setattr(training, "train_runs", train_runs)
    before = tf.get_logger().level
    train_chunk(Chunk(ExperimentConfig(model="nau"), (0,)))
    assert levels == [logging.ERROR]
    assert tf.get_logger().level == before


@without_a_cluster
@pytest.mark.parametrize("second_stops_now", [True, False])
def test_ray_cancelling_a_chunk_twice_still_lets_it_back_up(
    second_stops_now, monkeypatch
):
    # Ray's cancellation comes to a task as SIGINT, and may come twice: in
    # a chunk's task the second one must not stop it before its backup.
    from keras_nalu.sweeps.engines import loop

    monkeypatch.setattr(loop, "SAME_CTRL_C", 0.0)  # each SIGINT a Ctrl-C
    with stop_at_interrupt(second_stops_now=second_stops_now):
        signal.raise_signal(signal.SIGINT)
        assert stop_requested()
        if second_stops_now:  # Ctrl-C twice at a driver
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
        else:
            signal.raise_signal(signal.SIGINT)
            assert stop_requested()
    assert not stop_requested()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@without_a_cluster
def test_a_node_with_other_versions_refuses_its_chunk_in_one_line():
    versions = {**cluster._versions(), "keras": "0.0.1"}
    chunk = Chunk(ExperimentConfig(model="nau", iterations=100, eval_every=100), (0,))
    with pytest.raises(RuntimeError, match=r"keras \S+ \(driver: 0\.0\.1\)") as error:
        cluster._chunk_task(chunk, ChunkLimits(), versions)
    # ... which the driver reports in one line, with what is kept
    failed = ray.exceptions.RayTaskError("_chunk_task", "traceback", error.value)
    kept = "4 rows of this sweep are kept in r.csv"
    message = cluster._failure_message(ray, failed, "127.0.0.1:6379", kept)
    assert "\n" not in message
    assert message.startswith(
        "a chunk failed on the Ray cluster (RuntimeError: the node at "
    )
    assert message.endswith(f"; {kept}: mend that and rerun the same sweep.")


# --- a real cluster -------------------------------------------------------------


class LocalCluster:
    """A `ray start --head` cluster of this machine, in a folder of its own.

    Its workers' runs hold at each evaluation while the file `hold` exists
    (`held_training`): a test that stops a sweep on its way creates it first.
    """

    def __init__(self, cpus: int = 2, gpus: int = 0, dashboard: bool = False):
        # short: Ray's socket paths live under it
        self.folder = Path(tempfile.mkdtemp(prefix="kn-ray-", dir="/tmp"))
        self.hold = self.folder / "hold"
        self.port = _free_port()
        self.client_port = _free_port()
        self.dashboard_port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.stopped = False
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(16),
            "TF_CPP_MIN_LOG_LEVEL": "2",
            # this process's engine, for the drivers and the workers alike
            "KERAS_BACKEND": BACKEND,
            # JAX's cache of compiled programs, shared by the workers: a chunk
            # that a worker compiled once loads in the next ones (a worker per
            # driver, and another one for a killed chunk)
            "JAX_COMPILATION_CACHE_DIR": str(self.folder / "jax-cache"),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
            # no idle workers started ahead, at each driver's start: a chunk's
            # task needs a worker of its own environment (`ray_options`)
            "RAY_enable_worker_prestart": "0",
            "RAY_prestart_worker_first_driver": "0",
        }
        self.env = held_training(env, self.hold)
        self.env.pop("RAY_ADDRESS", None)
        command = [
            *_ray_command(),
            "start",
            "--head",
            f"--port={self.port}",
            f"--ray-client-server-port={self.client_port}",
            f"--num-cpus={cpus}",
            f"--num-gpus={gpus}",
            f"--temp-dir={self.folder}",
            f"--include-dashboard={str(dashboard).lower()}",
            f"--dashboard-port={self.dashboard_port}",
            "--disable-usage-stats",
        ]
        try:
            subprocess.run(command, env=self.env, check=True, capture_output=True)
            _wait_for_port(self.client_port)  # Ray Client starts after `ray start`
        except BaseException:
            self.remove()
            raise

    def processes(self) -> set:
        """Every process of this cluster: its daemons and their workers."""
        mine = set()
        for process in psutil.process_iter(["cmdline"]):
            if any(str(self.folder) in part for part in process.info["cmdline"] or []):
                mine.add(process)
                with contextlib.suppress(psutil.Error):
                    mine.update(process.children(recursive=True))
        return mine

    def workers(self, task: str) -> list:
        """The worker processes running a task of this name now."""
        found = []
        for process in self.processes():
            with contextlib.suppress(psutil.Error):
                if process.cmdline()[:1] == [f"ray::{task}"]:
                    found.append(process)
        return found

    def stop(self, grace: float = 16.0) -> None:
        """What `ray stop` does, to this cluster only: SIGTERM, then SIGKILL."""
        self.stopped = True
        processes = self.processes()
        for process in processes:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _, alive = psutil.wait_procs(processes, timeout=grace)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(alive, timeout=5)

    def remove(self) -> None:
        self.stop(grace=0)
        shutil.rmtree(self.folder, ignore_errors=True)


def _wait_for_port(port: int, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _ray_command() -> list[str]:
    return [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]


def _sweep(env, *flags, wait=True):
    command = [sys.executable, "-m", "keras_nalu", "sweep", "--quiet", *flags]
    process = subprocess.Popen(
        command,
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if not wait:
        return process
    out, err = process.communicate(timeout=400)
    return process.returncode, out, err


def _ray_log_lines(err: str) -> list[str]:
    """Ray's log lines: `[2026-01-02 03:04:05,678 E 1 2] file.cc:1: ...` (C++),
    `2026-01-02 03:04:05,678\tINFO worker.py:1 -- ...` (Python)."""
    stamp = re.compile(r"\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\b")
    return [line for line in err.splitlines() if stamp.match(line)]


def _last_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.fixture(scope="module")
def module_cluster():
    """The module's cluster, once started: a list of at most one."""
    started = []
    try:
        yield started
    finally:
        for local in started:
            local.remove()


@pytest.fixture
def running_cluster(module_cluster):
    """The module's cluster, started by the first test that asks for it and
    shared by the next ones; started again after a test that stopped it."""
    if module_cluster and module_cluster[0].stopped:
        module_cluster.pop().remove()
    if not module_cluster:
        # a GPU declared, for shares of it
        module_cluster.append(LocalCluster(cpus=2, gpus=1))
    return module_cluster[0]


@pytest.fixture
def lost_cluster(running_cluster):
    """The module's cluster, for a test that stops it: that test comes last,
    so that no other one starts a cluster again."""
    return running_cluster


@with_a_cluster
def test_a_wrong_address_fails_in_one_line_within_60_s(tmp_path):
    address = f"127.0.0.1:{_free_port()}"  # nothing listens there
    # The time from the sweep's start to its failure, measured here; the
    # command's own start-up (Python, TensorFlow) is not the connection's.
    started = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach a Ray cluster"):
        run_sweep(
            TINY, "0", tmp_path / "first.csv", ray_address=address, progress=False
        )
    assert time.monotonic() - started < 60
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": BACKEND}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    code, _, err = _sweep(
        env,
        *_grid_flags(TINY),
        "--seeds=0",
        f"--results={tmp_path / 'r.csv'}",
        f"--ray-address={address}",
    )
    assert code == 1
    line = (
        f"keras-nalu sweep: error: cannot reach a Ray cluster at {address} "
        "(Connection refused); check the address, and that the cluster runs: "
        "`ray status` on its head node"
    )
    assert err.strip().splitlines() == [line]
    _assert_on_page(line, {address: "127.0.0.1:6380"})
    assert not (tmp_path / "r.csv.lock").exists()


@with_a_cluster
@pytest.mark.parametrize("client", [False, True], ids=["gcs-port", "ray-client"])
def test_a_cluster_of_token_authentication_is_explained(
    running_cluster, tmp_path, client
):
    # this process joins without the cluster's token
    address = running_cluster.address
    if client:
        address = f"ray://127.0.0.1:{running_cluster.client_port}"
    started = time.monotonic()
    with pytest.raises(ClusterError) as error:
        run_sweep(TINY, "0", tmp_path / "r.csv", ray_address=address, progress=False)
    assert time.monotonic() - started < 10  # Ray Client alone retried for 35 s
    line = f"keras-nalu sweep: error: {error.value}"
    assert line == (
        f"keras-nalu sweep: error: the Ray cluster at {address} uses token "
        "authentication and refused this driver; export RAY_AUTH_MODE=token, "
        "with the cluster's token in RAY_AUTH_TOKEN or ~/.ray/auth_token (as on "
        "the head node)"
    )
    _assert_on_page(
        line,
        {
            running_cluster.address: "127.0.0.1:6379",
            f":{running_cluster.client_port}": ":10001",
        },
    )
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def web_server():
    """A server that answers HTTP, as Ray's dashboard does (port 8265)."""
    import http.server
    import threading

    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@with_a_cluster
@pytest.mark.parametrize(
    "address, answer",
    [
        # the dashboard's port, or any web server
        ("{web}", "nothing at 127.0.0.1:8265 answers as a Ray cluster (a web"),
        ("ray://{web}", "nothing at ray://127.0.0.1:8265 answers as a Ray cluster"),
        # the GCS port given to Ray Client, and the other way round
        ("ray://{gcs}", "nothing at ray://127.0.0.1:6379 answers as a Ray cluster"),
        ("{client}", "127.0.0.1:10001 is a Ray Client port"),
    ],
)
def test_a_port_of_another_server_fails_in_one_line_at_once(
    running_cluster, web_server, tmp_path, address, answer
):
    ports = {
        "web": web_server,
        "gcs": running_cluster.address,
        "client": f"127.0.0.1:{running_cluster.client_port}",
    }
    address = address.format(**ports)
    started = time.monotonic()
    with pytest.raises(ClusterError) as error:
        run_sweep(TINY, "0", tmp_path / "r.csv", ray_address=address, progress=False)
    assert time.monotonic() - started < 10  # Ray itself: 35 to 45 s
    line = f"keras-nalu sweep: error: {error.value}"
    on_page = {
        web_server: "127.0.0.1:8265",
        running_cluster.address: "127.0.0.1:6379",
        ports["client"]: "127.0.0.1:10001",
    }
    _assert_on_page(line, on_page)
    for real, page in on_page.items():
        line = line.replace(real, page)
    assert line.startswith(f"keras-nalu sweep: error: {answer}")
    assert not ray.is_initialized()
    assert not (tmp_path / "r.csv").exists()


@with_a_cluster
def test_gpus_the_cluster_lacks_end_the_sweep_before_any_chunk(
    running_cluster, tmp_path
):
    # The cluster's one node has 1 GPU; a chunk asks for 2. Ray would queue
    # the chunks for ever, without a word.
    results = tmp_path / "r.csv"
    sweep = _sweep(
        running_cluster.env,
        *_grid_flags(TINY),
        "--seeds=0",
        f"--results={results}",
        f"--ray-address={running_cluster.address}",
        "--gpus-per-chunk=2",
        wait=False,
    )
    try:
        _, err = sweep.communicate(timeout=120)
    finally:
        sweep.kill()
    assert sweep.returncode == 2
    (line,) = err.strip().splitlines()
    assert line == (
        "keras-nalu sweep: error: each chunk asks for 2 GPUs (--gpus-per-chunk), "
        f"but no node of the Ray cluster at "
        f"{running_cluster.address} has that many (the most a node has: 1); pass "
        "0 to train on CPUs, or add nodes with GPUs"
    )
    _assert_on_page(line, {running_cluster.address: "127.0.0.1:6379"})
    assert not results.exists()


# Three chunks of two seeds: the first finishes after one evaluation, the two
# others train three times longer, and hold at their first evaluation while
# the cluster's hold file exists: a test stops them on their way.
LONG = 1500
SHORT_AND_LONG = {
    "model:iterations": [("nau", 500), ("nmu", LONG), ("nac", LONG)],
    "operation": ["mul"],
    "input_size": [10],
    "eval_every": [500],
}
SHORT_AND_LONG_FLAGS = [*_grid_flags(SHORT_AND_LONG), "--seeds=0-1", "--chunk-size=2"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> pd.DataFrame:
    """The rows of `SHORT_AND_LONG` trained here, without a stop."""
    path = tmp_path_factory.mktemp("uninterrupted") / "local.csv"
    run_sweep(SHORT_AND_LONG, "0-1", path, chunk_size=2, progress=False)
    rows = _sorted(read_results(path))
    assert set(rows["engine"]) == {"jax"}  # as the cluster's rows
    return rows


@with_a_cluster
def test_a_killed_chunk_continues_from_its_shared_backup(
    running_cluster, uninterrupted, tmp_path
):
    # the long chunk of `SHORT_AND_LONG` alone, on half of the cluster's GPU
    grid = {**SHORT_AND_LONG, "model:iterations": [("nmu", LONG)]}
    results = tmp_path / "ray.csv"
    backups = tmp_path / "shared"
    flags = [*_grid_flags(grid), "--seeds=0-1", f"--results={results}"]
    flags += [f"--backup-dir={backups}", "--backup-every=0", "--gpus-per-chunk=0.5"]
    flags += [f"--ray-address={running_cluster.address}"]
    running_cluster.hold.touch()  # the chunk holds after its first backup
    try:
        sweep = _sweep(running_cluster.env, *flags, wait=False)
        killed_at = None
        deadline = time.monotonic() + 300  # bounds a failure, not a race
        while killed_at is None and sweep.poll() is None:
            assert time.monotonic() < deadline, "no backup written"
            time.sleep(0.05)
            for file in backups.glob("*.npz"):
                with contextlib.suppress(ValueError, OSError):  # still written
                    killed_at = read_backup(file)[0]["step"]
        assert killed_at is not None, sweep.communicate()
        workers = running_cluster.workers("_chunk_task")
        assert len(workers) == 1
        # the worker's environment, as Ray set it for a chunk on half a GPU
        environ = workers[0].environ()
        workers[0].send_signal(signal.SIGKILL)
    finally:
        running_cluster.hold.unlink()
    out, err = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, err
    assert environ["KERAS_BACKEND"] == "jax"
    assert environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.45"
    resumed = re.search(r"continued from its backup at step (\d+)", err)
    assert resumed and int(resumed.group(1)) >= killed_at, err
    # stdout holds the summary table alone; Ray's lines about the dead
    # worker ("(raylet) A worker died ...") go to stderr
    assert all(line.startswith("|") for line in out.strip().splitlines()), out
    assert "(raylet)" in err
    joined = err.splitlines()[0]
    _assert_on_page(joined, {running_cluster.address: "127.0.0.1:6379"})
    rows = _sorted(read_results(results))
    assert set(rows["engine"]) == {"jax"}
    # the rows of the same chunk trained here, without a stop
    local = uninterrupted[uninterrupted["model"] == "nmu"].reset_index(drop=True)
    pd.testing.assert_frame_equal(rows, local)
    assert not list(backups.iterdir())


@pytest.mark.slow
def test_a_job_writes_its_results_on_the_head_node(tmp_path):
    """`ray job submit`: the driver runs on the head node, in Ray's copy of
    the working directory, where a relative --results lands."""
    job_cluster = LocalCluster(cpus=2, dashboard=True)
    try:
        here = tmp_path / "project"
        here.mkdir()
        code, out, err = _run(
            [
                *_ray_command(),
                "job",
                "submit",
                f"--address=http://127.0.0.1:{job_cluster.dashboard_port}",
                f"--working-dir={here}",
                "--",
                sys.executable,
                "-m",
                "keras_nalu",
                "sweep",
                "--quiet",
                *_grid_flags(TINY),
                "--seeds=0-1",
                "--results=results/job.csv",
                "--ray-address=auto",
            ],
            job_cluster.env,
        )
        assert code == 0, out + err
        assert not (here / "results").exists()  # not in the folder submitted
        (landed,) = job_cluster.folder.glob("**/working_dir_files/*/results/job.csv")
        assert len(read_results(landed)) == 2
    finally:
        job_cluster.remove()


def _run(command, env):
    done = subprocess.run(
        command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=400
    )
    return done.returncode, done.stdout, done.stderr


@with_a_cluster
def test_an_interrupted_driver_backs_its_chunks_up_and_stops(
    running_cluster, uninterrupted, tmp_path
):
    """Ctrl-C, as --help says: the chunks back up at their next evaluation,
    the rows on disk stay, the exit status is 130, and a rerun continues."""
    results = tmp_path / "ray.csv"
    folder = tmp_path / "backups"
    # the default --backup-every (600 s): no backup before Ctrl-C
    flags = [*SHORT_AND_LONG_FLAGS, f"--results={results}", f"--backup-dir={folder}"]
    # through Ray Client, as a driver off the cluster joins it
    client = f"--ray-address=ray://127.0.0.1:{running_cluster.client_port}"
    # The long chunks hold at their first evaluation until Ctrl-C stops them.
    running_cluster.hold.touch()
    try:
        sweep = _sweep(running_cluster.env, *flags, client, wait=False)
        deadline = time.monotonic() + 300  # bounds a failure, not a race
        while sweep.poll() is None and time.monotonic() < deadline:
            if results.exists() and len(read_results(results)):
                break
            time.sleep(0.05)
        assert sweep.poll() is None, sweep.communicate()
        assert not list(folder.glob("*.npz"))
        # The first chunk's rows are in: the second chunk trains, the third
        # one starts.
        sweep.send_signal(signal.SIGINT)
        out, err = sweep.communicate(timeout=120)
    finally:
        running_cluster.hold.unlink()
    assert sweep.returncode == 130, err
    assert not _ray_log_lines(err), err
    assert not out
    lines = err.strip().splitlines()
    # The chunk in training backed up at its next evaluation; the one that
    # was starting too, if it had got to its first evaluation (Ray's
    # cancellation can miss a task that starts, and is sent again).
    backups = {file.name: read_backup(file)[0]["step"] for file in folder.iterdir()}
    assert len(backups) in (1, 2), err
    assert all(500 <= step < LONG for step in backups.values())
    on_page = {str(results): "results/nmu.csv", str(folder): "/shared/backups/nmu"}
    where = (
        "each continues from its last backup in {folder}"
        if len(backups) == 2
        else "1 continues from its last backup in {folder}, 1 from the start"
    )
    assert lines[-1] == (
        f"keras-nalu sweep: interrupted: 2 rows of this sweep are kept in {results}, "
        f"2 chunks are left ({where.format(folder=folder)}): rerun the same sweep "
        "to continue."
    )
    _assert_on_page(lines[-1], on_page)
    deadline = time.monotonic() + 30
    while running_cluster.workers("_chunk_task") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not running_cluster.workers("_chunk_task")
    # The rerun joins at the GCS port (through Ray Client, above, each driver
    # costs one more process on the head node, which imports Keras) and
    # continues ...
    code, _, err = _sweep(
        running_cluster.env, *flags, f"--ray-address={running_cluster.address}"
    )
    assert code == 0, err
    # ... every chunk backed up at Ctrl-C from its backup
    continued = re.findall(r"chunk (\S+) continued from its backup at step (\d+)", err)
    assert {name: int(step) for name, step in continued} == backups, err
    name, step = continued[0]
    _assert_on_page(
        f"keras-nalu sweep: chunk {name} continued from its backup at step {step}",
        {name: "c39988aad6cf1-0-83b97b85.npz", f"step {step}": "step 1500"},
    )
    pd.testing.assert_frame_equal(_sorted(read_results(results)), uninterrupted)
    assert not list(folder.iterdir())


@with_a_cluster
def test_a_lost_cluster_ends_in_one_line_and_a_rerun_completes(
    lost_cluster, uninterrupted, tmp_path
):
    results = tmp_path / "ray.csv"
    folder = tmp_path / "backups"
    backups = f"file://{folder}"  # an fsspec URL
    flags = [*SHORT_AND_LONG_FLAGS, f"--results={results}"]
    flags += [f"--backup-dir={backups}", "--backup-every=0"]
    lost_cluster.hold.touch()  # the long chunks hold after their first backup
    try:
        sweep = _sweep(
            lost_cluster.env,
            *flags,
            f"--ray-address={lost_cluster.address}",
            wait=False,
        )
        # Stopped when the first chunk's rows are in and both others have a
        # backup.
        deadline = time.monotonic() + 300  # bounds a failure, not a race
        while sweep.poll() is None and time.monotonic() < deadline:
            if results.exists() and len(list(folder.glob("*.npz"))) == 2:
                break
            time.sleep(0.05)
        assert sweep.poll() is None, sweep.communicate()
        lost_cluster.stop(grace=3)  # as `ray stop --grace-period 3` does
    finally:
        lost_cluster.hold.unlink()
    stopped = time.monotonic()
    out, err = sweep.communicate(timeout=120)
    assert time.monotonic() - stopped < 60
    assert sweep.returncode == 1
    # Ray's log lines (C++ ones too) are not shown; what Ray reports of its
    # cluster (e.g. "(raylet) The autoscaler failed ...") goes to stderr
    assert not _ray_log_lines(err), err
    assert not out
    line = _last_line(err)
    # Ray may notice first (its reason), or the driver (nothing answers).
    reason = re.search(r" \((.*)\); \d+ rows", line)
    assert reason, line
    if reason.group(1).startswith("LocalRayletDiedError"):
        line = line.replace(reason.group(1), "nothing has answered there for 10 s")
    assert len(read_results(results)) == 2  # the first chunk's rows
    _assert_on_page(
        line,
        {
            lost_cluster.address: "127.0.0.1:6379",
            str(results): "results/nmu.csv",
            backups: "/shared/backups/nmu",
        },
    )
    assert re.search(r", 2 chunks are left \(each continues from its last", line)
    # The rerun continues both chunks left from their backups. It starts a Ray
    # runtime of its own: `local` does not join the cluster that RAY_ADDRESS
    # names (here the lost one).
    code, _, err = _sweep(
        {**lost_cluster.env, "RAY_ADDRESS": lost_cluster.address},
        *flags,
        "--ray-address=local",
    )
    assert code == 0, err
    assert len(re.findall(r"continued from its backup at step", err)) == 2, err
    pd.testing.assert_frame_equal(_sorted(read_results(results)), uninterrupted)
    assert not list(tmp_path.glob("*.lock"))
    assert not list(folder.iterdir())
