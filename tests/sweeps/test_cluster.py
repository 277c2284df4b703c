"""Sweeps on Ray clusters as they are run: `ray start`, lost clusters, backups.

The tests marked `cluster` start a real Ray cluster on this machine (`ray
start --head` in a temporary folder, token authentication on, as Ray >= 2.52
turns it on wherever a token exists) and stop it by ending its own processes,
never with `ray stop` (which would stop every cluster of the machine). The
drivers run as `keras-nalu sweep` processes, as a user runs them.
"""

import contextlib
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
from keras_nalu.sweeps import cluster, ray_connection  # noqa: E402
from keras_nalu.sweeps.chunks import Chunk, backup_name, train_chunk  # noqa: E402
from keras_nalu.sweeps.cluster import ray_options  # noqa: E402
from keras_nalu.sweeps.engines import TimeLimitReached, read_backup  # noqa: E402
from keras_nalu.sweeps.ray_connection import ClusterError  # noqa: E402
from keras_nalu.sweeps.results import read_results  # noqa: E402
from keras_nalu.sweeps.runner import run_sweep  # noqa: E402

TIMING = ["wall_time", "iterations_per_second"]
TINY = {
    "model": ["nau"],
    "operation": ["add"],
    "input_size": [10],
    "iterations": [100],
    "eval_every": [100],
}
ROOT = Path(keras_nalu.__file__).resolve().parent.parent


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


def _grid_flags(grid: dict) -> list[str]:
    flags = []
    for key, values in grid.items():
        flags += ["--grid", f"{key}={','.join(map(str, values))}"]
    return flags


# --- without a cluster ----------------------------------------------------------


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


def _fake_ray(monkeypatch) -> list[dict]:
    """Ray as already joined, whose tasks run here when submitted."""
    submitted = []
    results = {}

    def remote(**options):
        def wrap(function):
            class Task:
                @staticmethod
                def remote(*args):
                    reference = object()
                    submitted.append(options)
                    results[reference] = function(*args)
                    return reference

            return Task

        return wrap

    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "remote", remote)
    monkeypatch.setattr(ray, "wait", lambda refs, **_: (refs[:1], refs[1:]))
    monkeypatch.setattr(ray, "get", results.pop)
    monkeypatch.setattr(ray, "get_runtime_context", lambda: None)
    return submitted


def test_fractional_gpus_are_in_the_options_of_every_submitted_chunk(
    tmp_path, monkeypatch, caplog
):
    submitted = _fake_ray(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="keras_nalu.sweeps"):
        outcome = run_sweep(
            {**TINY, "model": ["nau", "nmu"]},
            "0-1",
            tmp_path / "r.csv",
            chunk_size=1,
            ray_address="auto",
            gpus_per_chunk=0.25,
            progress=False,
        )
    assert outcome.new_rows == 4
    assert [options["num_gpus"] for options in submitted] == [0.25] * 4
    env = submitted[0]["runtime_env"]["env_vars"]
    assert env["KERAS_BACKEND"] == keras.backend.backend()
    # said once per sweep, not once per chunk
    notes = [r.message for r in caplog.records if "not backed up" in r.message]
    assert len(notes) == 1
    assert not list(tmp_path.glob("*.lock"))


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
    if backups == "folder":  # created, written to, and emptied
        assert (tmp_path / "shared").is_dir()
        assert not list((tmp_path / "shared").iterdir())


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


def test_a_chunk_continues_from_its_backup_at_a_url(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    config = ExperimentConfig(
        model="nmu", operation="mul", input_size=10, iterations=600, eval_every=200
    )
    chunk = Chunk(config, (0, 1))
    # The backup a worker killed after its first evaluation leaves behind.
    stopped = tmp_path / backup_name(chunk)
    with pytest.raises(TimeLimitReached):
        train_chunk(chunk, backup=stopped, backup_every=0, deadline=0)
    memory = fsspec.filesystem("memory")
    folder = f"/backups-{secrets.token_hex(4)}"
    memory.put_file(str(stopped), f"{folder}/{stopped.name}")
    try:
        result = cluster._chunk_task(
            chunk, f"memory://{folder}", 0, cluster._versions()
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

    from keras_nalu.sweeps import engines

    levels = []

    def train_replicas(config, seeds, **options):
        levels.append(tf.get_logger().getEffectiveLevel())
        return []

    monkeypatch.setattr(engines, "train_replicas", train_replicas)
    before = tf.get_logger().level
    train_chunk(Chunk(ExperimentConfig(model="nau"), (0,)))
    assert levels == [logging.ERROR]
    assert tf.get_logger().level == before


def test_a_node_with_other_versions_refuses_its_chunk_in_one_line():
    versions = {**cluster._versions(), "keras": "0.0.1"}
    chunk = Chunk(ExperimentConfig(model="nau", iterations=100, eval_every=100), (0,))
    with pytest.raises(RuntimeError, match=r"keras \S+ \(driver: 0\.0\.1\)") as error:
        cluster._chunk_task(chunk, None, None, versions)
    # ... which the driver reports in one line, with what is kept
    failed = ray.exceptions.RayTaskError("_chunk_task", "traceback", error.value)
    message = cluster._failure_message(
        ray, failed, "127.0.0.1:6379", 4, 2, Path("r.csv"), None
    )
    assert "\n" not in message
    assert "a chunk failed on the Ray cluster (RuntimeError: the node" in message
    assert "4 rows of this sweep are kept in r.csv, 2 chunks are left" in message
    assert message.endswith("rerun the same sweep.")


# --- a real cluster -------------------------------------------------------------


class LocalCluster:
    """A `ray start --head` cluster of this machine, in a folder of its own."""

    def __init__(self, cpus: int = 2, gpus: int = 0, dashboard: bool = False):
        # short: Ray's socket paths live under it
        self.folder = Path(tempfile.mkdtemp(prefix="kn-ray-", dir="/tmp"))
        self.port = _free_port()
        self.client_port = _free_port()
        self.dashboard_port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(16),
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }
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


def _last_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.fixture(scope="module")
def running_cluster():
    started = LocalCluster(cpus=2, gpus=1)  # a GPU declared, for shares of it
    try:
        yield started
    finally:
        started.remove()


@pytest.fixture
def lost_cluster():
    started = LocalCluster(cpus=2)
    try:
        yield started
    finally:
        started.remove()


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
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    code, _, err = _sweep(
        env,
        *_grid_flags(TINY),
        "--seeds=0",
        f"--results={tmp_path / 'r.csv'}",
        f"--ray-address={address}",
    )
    assert code == 1
    assert err.strip().splitlines() == [
        f"keras-nalu sweep: error: cannot reach a Ray cluster at {address} "
        "(Connection refused); check the address, and that the cluster runs: "
        "`ray status` on its head node"
    ]
    assert not (tmp_path / "r.csv.lock").exists()


def test_a_cluster_of_token_authentication_is_explained(running_cluster, tmp_path):
    started = time.monotonic()
    with pytest.raises(ClusterError) as error:
        # this process joins without the cluster's token
        run_sweep(
            TINY,
            "0",
            tmp_path / "r.csv",
            ray_address=running_cluster.address,
            progress=False,
        )
    assert time.monotonic() - started < 60
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(
        f"the Ray cluster at {running_cluster.address} uses token authentication "
        "and refused this driver; "
    )
    assert "RAY_AUTH_MODE=token" in message or "RAY_AUTH_TOKEN" in message
    assert not ray.is_initialized()


def test_a_lost_cluster_ends_in_one_line_and_a_rerun_completes(lost_cluster, tmp_path):
    grid = {
        "model": ["nau", "nmu", "nac"],
        "operation": ["mul"],
        "input_size": [10],
        "iterations": [1000],
        "eval_every": [250],
    }
    results = tmp_path / "ray.csv"
    backups = f"file://{tmp_path / 'backups'}"  # an fsspec URL
    flags = [*_grid_flags(grid), "--seeds=0-1", "--chunk-size=2"]
    flags += [f"--results={results}", f"--backup-dir={backups}", "--backup-every=0"]
    sweep = _sweep(
        lost_cluster.env, *flags, f"--ray-address={lost_cluster.address}", wait=False
    )
    deadline = time.monotonic() + 300
    while sweep.poll() is None and time.monotonic() < deadline:
        if results.exists() and len(read_results(results)):
            break
        time.sleep(0.1)
    assert sweep.poll() is None, sweep.communicate()
    kept = len(read_results(results))
    lost_cluster.stop(grace=3)  # as `ray stop --grace-period 3` does
    stopped = time.monotonic()
    _, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 1
    assert "Traceback" not in err
    line = _last_line(err)
    assert line.startswith(
        f"keras-nalu sweep: error: lost the Ray cluster at {lost_cluster.address}"
    ), err
    assert re.search(
        rf"; {kept} rows of this sweep are kept in {re.escape(str(results))}, "
        rf"\d chunks are left \(each continues from its last backup in "
        rf"{re.escape(backups)}\): start it again \(`ray status` shows it\) and "
        r"rerun the same sweep\.$",
        line,
    ), line
    assert time.monotonic() - stopped < 60
    # The rerun starts a Ray runtime of its own: `local` does not join the
    # cluster that RAY_ADDRESS names (here the lost one).
    code, _, err = _sweep(
        {**lost_cluster.env, "RAY_ADDRESS": lost_cluster.address},
        *flags,
        "--ray-address=local",
    )
    assert code == 0, err
    local = run_sweep(grid, "0-1", tmp_path / "local.csv", chunk_size=2, progress=False)
    pd.testing.assert_frame_equal(
        _sorted(read_results(results)), _sorted(read_results(local.path))
    )
    assert not list(tmp_path.glob("*.lock"))
    assert not list((tmp_path / "backups").iterdir())


def test_a_killed_chunk_continues_from_its_shared_backup(running_cluster, tmp_path):
    grid = {
        "model": ["nmu"],
        "operation": ["mul"],
        "input_size": [10],
        "iterations": [8000],
        "eval_every": [500],
    }
    results = tmp_path / "ray.csv"
    backups = tmp_path / "shared"
    flags = [*_grid_flags(grid), "--seeds=0-1", f"--results={results}"]
    flags += [f"--backup-dir={backups}", "--backup-every=0", "--gpus-per-chunk=0.5"]
    # through Ray Client, as a driver off the cluster joins it
    client = f"ray://127.0.0.1:{running_cluster.client_port}"
    sweep = _sweep(running_cluster.env, *flags, f"--ray-address={client}", wait=False)
    killed_at = None
    deadline = time.monotonic() + 300
    while killed_at is None and sweep.poll() is None and time.monotonic() < deadline:
        for file in backups.glob("*.npz"):
            with contextlib.suppress(ValueError, OSError):
                step = read_backup(file)[0]["step"]
                if step >= 1000:
                    workers = running_cluster.workers("_chunk_task")
                    assert len(workers) == 1
                    workers[0].send_signal(signal.SIGKILL)
                    killed_at = step
        time.sleep(0.05)
    _, err = sweep.communicate(timeout=300)
    assert killed_at is not None, err
    assert sweep.returncode == 0, err
    resumed = re.search(r"continued from its backup at step (\d+)", err)
    assert resumed and int(resumed.group(1)) >= killed_at, err
    local = run_sweep(grid, "0-1", tmp_path / "local.csv", progress=False)
    pd.testing.assert_frame_equal(
        _sorted(read_results(results)), _sorted(read_results(local.path))
    )
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


@pytest.mark.slow
def test_an_interrupted_driver_stops_its_chunks(lost_cluster, tmp_path):
    """Ctrl-C: the rows on disk stay, Ray stops the chunks, a rerun completes."""
    grid = {
        "model": ["nau", "nmu", "nac"],
        "operation": ["mul"],
        "input_size": [10],
        "iterations": [1000],
        "eval_every": [250],
    }
    results = tmp_path / "ray.csv"
    flags = [*_grid_flags(grid), "--seeds=0-1", "--chunk-size=2"]
    flags += [f"--results={results}", f"--backup-dir={tmp_path / 'backups'}"]
    flags += ["--backup-every=0", f"--ray-address={lost_cluster.address}"]
    sweep = _sweep(lost_cluster.env, *flags, wait=False)
    deadline = time.monotonic() + 300
    while sweep.poll() is None and time.monotonic() < deadline:
        if results.exists() and len(read_results(results)):
            break
        time.sleep(0.1)
    assert sweep.poll() is None, sweep.communicate()
    sweep.send_signal(signal.SIGINT)
    _, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 130, err
    assert "Traceback" not in err
    deadline = time.monotonic() + 30
    while lost_cluster.workers("_chunk_task") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not lost_cluster.workers("_chunk_task")
    code, _, err = _sweep(lost_cluster.env, *flags)
    assert code == 0, err
    local = run_sweep(grid, "0-1", tmp_path / "local.csv", chunk_size=2, progress=False)
    pd.testing.assert_frame_equal(
        _sorted(read_results(results)), _sorted(read_results(local.path))
    )
