"""Sweeps: chunks, a resumable results file, refusal of foreign files."""

import fcntl
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pandas as pd
import pytest

from keras_nalu import cli
from keras_nalu.experiments import ExperimentConfig, run_experiment
from keras_nalu.reports.summary import load_results
from keras_nalu.sweeps.chunks import backup_files, chunk_backup, plan_chunks
from keras_nalu.sweeps.engines import (
    ReplicaRun,
    read_backup,
    stop_at_interrupt,
    stop_requested,
)
from keras_nalu.sweeps.grid import grid_configs, parse_grid
from keras_nalu.sweeps.results import RESULT_COLUMNS, config_id, read_results
from keras_nalu.sweeps.runner import run_sweep
from tests.bad_paths import unwritable_folder
from tests.helpers import held_training, keras_nalu_cli

GRID = [
    "model=nau,nmu",
    "operation=sub",
    "input_size=10",
    "iterations=200",
    "eval_every=100",
]
SEEDS = "0-1"
TIMING = ["wall_time", "iterations_per_second"]


def _sorted(table):
    return table.sort_values(["config_id", "seed"]).reset_index(drop=True)


def test_chunks_are_cut_before_finished_pairs_are_removed():
    config = ExperimentConfig(input_size=10)
    done = {(config_id(config), 1), (config_id(config), 2)}
    chunks = plan_chunks([config], range(5), chunk_size=2, done=done)
    assert [chunk.seeds for chunk in chunks] == [(0,), (3,), (4,)]


def _sweep_process(
    results,
    grid=GRID,
    options=("--seeds", SEEDS, "--chunk-size", "2"),
    hold_after=None,
):
    """The sweep in a fresh process whose runs hold at their evaluations
    while `results`'s hold file exists (`held_training`), from the start or
    once `hold_after` exists; the file is made here."""
    command = [sys.executable, "-m", "keras_nalu", "sweep", "--quiet"]
    for item in grid:
        command += ["--grid", item]
    command += [*options, "--results", str(results)]
    hold = results.with_name("hold")
    hold.touch()
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen(
        command,
        env=held_training(env, hold, hold_after),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _kill_once(process, ready, failure, timeout=300):
    """SIGKILLs `process` as soon as `ready()` is truthy (or it has exited);
    the timeout bounds a failure, not a race."""
    try:
        deadline = time.monotonic() + timeout
        while not ready() and process.poll() is None:
            assert time.monotonic() < deadline, f"{failure} in {timeout} s"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()


def _rows(path):
    try:
        return len(pd.read_csv(path))
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return 0


def test_an_interrupted_sweep_resumes_to_the_same_rows(tmp_path):
    interrupted = tmp_path / "interrupted.csv"
    # Two chunks (one per model): once the first chunk's rows are in, the
    # second holds at its first evaluation, and the kill finds it training.
    process = _sweep_process(interrupted, hold_after=interrupted)
    _kill_once(process, lambda: _rows(interrupted), "no chunk finished")
    finished_before_kill = _rows(interrupted)
    assert finished_before_kill == 2, "the sweep must be cut after a chunk"

    resumed = run_sweep(
        parse_grid(GRID), SEEDS, interrupted, chunk_size=2, progress=False
    )
    assert resumed.skipped == finished_before_kill
    assert resumed.new_rows == 4 - finished_before_kill
    reference = run_sweep(
        parse_grid(GRID),
        SEEDS,
        tmp_path / "reference.csv",
        chunk_size=2,
        progress=False,
    )
    assert reference.new_rows == 4
    after, expected = read_results(interrupted), read_results(reference.path)
    assert not after.duplicated(["config_id", "seed"]).any()
    assert len(after) == 4
    pd.testing.assert_frame_equal(
        _sorted(after).drop(columns=TIMING), _sorted(expected).drop(columns=TIMING)
    )
    assert list(after.columns) == list(RESULT_COLUMNS)
    table = load_results(interrupted)  # readable by the summaries
    assert table["success"].dtype == bool
    assert set(table["model"]) == {"nau", "nmu"}


def test_a_sweep_killed_inside_a_chunk_continues_it_from_its_backup(
    tmp_path, monkeypatch
):
    grid = ["model=nmu", "operation=mul", "input_size=10", "iterations=400"]
    grid += ["eval_every=100"]
    killed = tmp_path / "killed.csv"
    backups = tmp_path / "killed.csv.backup"
    options = ("--seeds", "0-1", "--chunk-size", "2", "--backup-every", "0")
    _kill_once(  # the chunk holds after its first evaluation and backup
        _sweep_process(killed, grid, options),
        lambda: list(backups.glob("*.npz")),
        "no backup written",
    )
    assert _rows(killed) == 0, "the sweep must be killed inside its only chunk"
    (backup,) = backups.glob("*.npz")
    config = grid_configs(parse_grid(grid))[0]
    assert backup == chunk_backup(killed, plan_chunks([config], [0, 1], 2)[0])

    restored_at = []
    restore = ReplicaRun.restore_backup

    def spy(run, path):
        found = restore(run, path)
        restored_at.append(run.step if found else None)
        return found

    monkeypatch.setattr(ReplicaRun, "restore_backup", spy)
    resumed = run_sweep(parse_grid(grid), "0-1", killed, chunk_size=2, progress=False)
    assert resumed.new_rows == 2
    assert restored_at and restored_at[0] >= 100  # continued, not restarted
    assert not backups.exists()  # deleted once the chunk is trained
    reference = run_sweep(
        parse_grid(grid),
        "0-1",
        tmp_path / "reference.csv",
        chunk_size=2,
        progress=False,
        backup_every=None,
    )
    assert restored_at[1:] == [] and not (tmp_path / "reference.csv.backup").exists()
    pd.testing.assert_frame_equal(
        _sorted(read_results(killed)).drop(columns=TIMING),
        _sorted(read_results(reference.path)).drop(columns=TIMING),
    )


# Runs `keras-nalu sweep` (argv after the script) in a fresh process that
# sends itself SIGINT, as Ctrl-C does, right after its evaluation at step 300.
_CTRL_C_AT_300 = """
import os, signal, sys
from keras_nalu import cli
from keras_nalu.sweeps.engines import ReplicaRun

evaluate = ReplicaRun.evaluate

def evaluate_then_ctrl_c(run, step):
    evaluate(run, step)
    if step == 300:
        os.kill(os.getpid(), signal.SIGINT)

ReplicaRun.evaluate = evaluate_then_ctrl_c
sys.exit(cli.main(sys.argv[1:]))
"""


def test_ctrl_c_backs_up_the_chunk_at_its_step_and_exits_130(tmp_path):
    grid = ["model=nau", "operation=add", "input_size=10", "iterations=100000"]
    grid += ["eval_every=100"]
    results = tmp_path / "results.csv"
    command = [sys.executable, "-c", _CTRL_C_AT_300, "sweep", "--quiet"]
    for item in grid:
        command += ["--grid", item]
    command += ["--seeds", "0-1", "--results", str(results)]  # backups every 600 s
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    completed = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=600
    )
    assert completed.returncode == 130, completed.stderr[-3000:]
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    (backup,) = (tmp_path / "results.csv.backup").glob("*.npz")
    assert lines[-1] == (
        "keras-nalu sweep: interrupted: nau-add ×2 seeds stopped at step 300 of "
        f"100,000, backed up to {backup}: run it again to continue"
    )
    # The step of Ctrl-C, not the last 600-second backup (there was none).
    assert {record["step"] for record in read_backup(backup)} == {300}
    assert not results.exists()  # no chunk finished
    assert not (tmp_path / "results.csv.lock").exists()
    config = grid_configs(parse_grid(grid))[0]
    assert backup == chunk_backup(results, plan_chunks([config], [0, 1], 100)[0])


# Runs `keras-nalu sweep` (argv after the script) in a fresh process that
# sends itself SIGINT right after the second evaluation at step 200, that is,
# of the second seed of a preset trained one seed at a time.
_CTRL_C_AT_SECOND_200 = """
import os, signal, sys
from keras_nalu import cli
from keras_nalu.evaluation import SuccessCriterion

evaluate = SuccessCriterion.evaluate
seen = []

def evaluate_then_ctrl_c(judge, step):
    evaluation = evaluate(judge, step)
    if step == 200:
        seen.append(step)
        if len(seen) == 2:
            os.kill(os.getpid(), signal.SIGINT)
    return evaluation

SuccessCriterion.evaluate = evaluate_then_ctrl_c
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_ctrl_c_stops_a_seed_by_seed_sweep_keeping_its_finished_seeds(
    tmp_path, capsys, backend
):
    grid = ["model=inalu", "input_size=10", "iterations=400", "eval_every=100"]
    results = tmp_path / "results.csv"
    argv = ["sweep", "--quiet"]
    for item in grid:
        argv += ["--grid", item]
    argv += ["--seeds", "0-1", "--results", str(results)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": backend}
    completed = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AT_SECOND_200, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert completed.returncode == 130, completed.stderr[-3000:]
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert lines[-1] == (
        "keras-nalu sweep: interrupted: inalu-add seed 1 stopped at step 200 of "
        "400, 1 of 2 seeds trained; it starts over on the next run (this preset "
        "trains one seed at a time, without backups): run it again to continue"
    )
    assert list(read_results(results)["seed"]) == [0]  # the finished seed kept
    assert not (tmp_path / "results.csv.backup").exists()
    # The rerun continues what the stopped process left, on the same backend:
    # in this process where it is this process's backend.
    if backend == keras.backend.backend():
        assert cli.main(argv) == 0
        err = capsys.readouterr().err
    else:
        rerun = subprocess.run(
            [sys.executable, "-m", "keras_nalu", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        err = rerun.stderr
    assert "(2 rows of this sweep: 1 new, 1 already there)" in err
    assert sorted(read_results(results)["seed"]) == [0, 1]


def test_a_sweep_leaves_no_lock_file_nor_the_folders_it_made(tmp_path, monkeypatch):
    grid = {"model": ["nau"], "input_size": [10], "iterations": [100]}
    results = tmp_path / "made" / "for it" / "results.csv"

    def failing(*args, **kwargs):
        raise ValueError("training failed")

    monkeypatch.setattr("keras_nalu.sweeps.training.train_chunks", failing)
    with pytest.raises(ValueError, match="training failed"):
        run_sweep(grid, "0", results, progress=False)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()

    foreign = tmp_path / "foreign.csv"
    foreign.write_text("not,a,sweep\n1,2,3\n")
    with pytest.raises(ValueError, match="not a keras-nalu sweep results file"):
        run_sweep(grid, "0", foreign, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign.csv"]

    run_sweep({**grid, "eval_every": [100]}, "0", results, progress=False)
    assert sorted(p.name for p in results.parent.iterdir()) == ["results.csv"]


def test_run_sweep_takes_one_options_object_or_its_fields_by_name(
    tmp_path, monkeypatch
):
    import inspect

    from keras_nalu.sweeps import SweepOptions
    from keras_nalu.sweeps.local import FillingOptions

    assert len(inspect.signature(run_sweep).parameters) <= 8
    received = []
    prepared = SweepOptions.prepared

    def spy(options):
        received.append(options)
        return prepared(options)

    monkeypatch.setattr(SweepOptions, "prepared", spy)
    grid = {"model": ["nau"], "input_size": [10], "iterations": [100]}
    options = SweepOptions(
        chunk_size=1, backup_every=None, filling=FillingOptions(pack_replicas=0)
    )
    path = tmp_path / "a.csv"
    whole = run_sweep(grid, "0-1", path, options, progress=False)
    assert whole.new_rows == 2
    assert list(whole.results["replicas"]) == [1, 1]  # chunk_size reached it
    # By name, the same options reach the sweep, which finds its rows done.
    by_name = run_sweep(
        grid,
        "0-1",
        path,
        progress=False,
        chunk_size=1,
        backup_every=None,
        pack_replicas=0,
    )
    assert received == [options, options]
    assert by_name.skipped == 2 and by_name.new_rows == 0
    columns = ["config_id", "seed", "success", "interpolation_mse"]
    pd.testing.assert_frame_equal(whole.results[columns], by_name.results[columns])
    with pytest.raises(TypeError, match="unexpected keyword argument 'chunksize'"):
        run_sweep(grid, "0", tmp_path / "c.csv", chunksize=1)
    with pytest.raises(ValueError, match=r"options=SweepOptions.*\['chunk_size'\]"):
        run_sweep(grid, "0", tmp_path / "c.csv", options, chunk_size=2)
    assert not (tmp_path / "c.csv").exists()


def test_the_backup_interval_reaches_the_sweep(tmp_path, monkeypatch):
    import keras_nalu.sweeps.runner as runner

    with pytest.raises(ValueError, match="backup_every"):
        run_sweep({"input_size": [10]}, "0", tmp_path / "r.csv", backup_every=-1)
    seen = []

    def fake_sweep(grid, seeds, results, **options):
        seen.append(options["backup_every"])
        raise SystemExit(0)

    monkeypatch.setattr(runner, "run_sweep", fake_sweep)
    argv = ["sweep", "--quiet", "--results", str(tmp_path / "r.csv")]
    for extra in ([], ["--backup-every", "30"], ["--no-backup"]):
        with pytest.raises(SystemExit):
            cli.main([*argv, *extra])
    assert seen == [600.0, 30.0, None]


@pytest.mark.parametrize(
    "content",
    [
        b"\x00\x81\xff garbage \x00",
        b"model,operation,seed,success\nnmu,mul,0,True\n",
        b"",
    ],
    ids=["binary", "foreign-csv", "empty"],
)
def test_a_foreign_results_file_is_refused_and_untouched(tmp_path, capsys, content):
    path = tmp_path / "results.csv"
    path.write_bytes(content)
    argv = ["sweep", "--quiet", "--grid", "input_size=10", "--grid", "iterations=10"]
    code = cli.main([*argv, "--seeds", "0", "--results", str(path)])
    assert code == 2
    error = capsys.readouterr().err
    assert "not a keras-nalu sweep results file" in error
    assert len(error.strip().splitlines()) == 1
    assert path.read_bytes() == content


def test_a_duplicated_row_is_refused_and_untouched(tmp_path):
    grid = {"model": ["nau"], "input_size": [10], "iterations": [20]}
    path = tmp_path / "results.csv"
    run_sweep(grid, "0", path, progress=False)
    table = read_results(path)
    pd.concat([table, table]).to_csv(path, index=False)
    content = path.read_bytes()
    with pytest.raises(ValueError, match="appears twice"):
        run_sweep(grid, "0-1", path, progress=False)
    assert path.read_bytes() == content


def test_two_sweeps_never_write_one_file(tmp_path):
    path = tmp_path / "results.csv"
    with open(tmp_path / "results.csv.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(ValueError, match="another sweep"):
            run_sweep({"input_size": [10]}, "0", path, progress=False)
    assert not path.exists()


def test_the_sweep_command_prints_the_summary(tmp_path, capsys):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", "--grid", "model=nau", "--grid", "input_size=10"]
    argv += ["--grid", "iterations=100", "--grid", "eval_every=100"]
    assert cli.main([*argv, "--seeds", "3-4", "--results", str(path)]) == 0
    captured = capsys.readouterr()
    assert "| add | nau | 2 |" in captured.out
    assert f"results: {path} (2 rows of this sweep: 2 new, 0 already there)" in (
        captured.err
    )
    rows = read_results(path)
    assert list(rows["seed"]) == [3, 4]
    assert np.all(rows["max_iterations"] == 100)
    assert np.all(rows["iterations"] == 100)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"ray_address": "auto", "pack_replicas": 100}, "On Ray, each chunk"),
        ({"processes_per_device": 2, "chunks_per_device": 2}, "not both"),
        ({"processes_per_device": 0}, "processes_per_device"),
        ({"pack_replicas": -1}, "pack_replicas"),
    ],
)
def test_ways_to_fill_a_device_that_do_not_fit_are_refused(tmp_path, options, match):
    config = ExperimentConfig(model="nau", input_size=10, iterations=100)
    with pytest.raises(ValueError, match=match):
        run_sweep([config], "0", tmp_path / "results.csv", **options)
    assert not list(tmp_path.iterdir())


def test_ways_of_a_sweep_trained_here_asked_of_ray_are_named_as_given(tmp_path, capsys):
    argv = ["sweep", "--quiet", "--grid", "model=nau", "--ray-address", "auto"]
    code, _, err = keras_nalu_cli(
        capsys, *argv, "--results", tmp_path / "r.csv", "--unroll", "4"
    )
    assert code == 2
    assert err == [
        "keras-nalu sweep: error: On Ray, each chunk is a task of its own, trained "
        "alone: packs, processes and unrolled loops are ways of a sweep trained "
        "here. Received: --unroll 4"
    ]


def test_a_script_that_each_process_would_run_again_is_told_so(monkeypatch):
    # The processes of processes_per_device are spawned: each imports the
    # script again, as the module __mp_main__, and a sweep outside
    # `if __name__ == "__main__":` would start again in each of them.
    from keras_nalu.sweeps.local import FillingOptions

    for name in ("KERAS_BACKEND", "XLA_PYTHON_CLIENT_PREALLOCATE"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    script = compile(
        "FillingOptions(processes_per_device=2).prepared()", "sweep.py", "exec"
    )
    names = {"__file__": "sweep.py", "FillingOptions": FillingOptions}
    with pytest.raises(RuntimeError) as error:
        exec(script, {**names, "__name__": "__mp_main__"})
    assert str(error.value).startswith(
        "sweep.py runs a sweep with processes_per_device outside `if __name__ == "
        '"__main__":`'
    )
    exec(script, {**names, "__name__": "__main__"})  # the sweep's own process


def test_a_sweep_process_that_ends_as_it_starts_is_not_a_backup_to_continue():
    from keras_nalu.sweeps import local

    class Ended:  # a process that ended before it was ready to train
        exitcode = 1

        def is_alive(self):
            return False

    with pytest.raises(RuntimeError) as error:
        local._check_alive([(Ended(), None)], {0}, set(), [])
    assert 'under `if __name__ == "__main__":`' in str(error.value)
    assert "run the sweep again" not in str(error.value)


def test_the_signals_of_one_ctrl_c_are_one_ctrl_c(monkeypatch):
    # A terminal sends SIGINT to every process of its group, `timeout -s
    # INT` to its command, then to the command's group: one Ctrl-C may come
    # twice. A second Ctrl-C is one at least SAME_CTRL_C seconds later.
    from keras_nalu.sweeps.engines import loop

    with stop_at_interrupt():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # no KeyboardInterrupt
        assert stop_requested()
        monkeypatch.setattr(loop, "SAME_CTRL_C", 0.0)  # as if a second later
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert not stop_requested()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_preset_that_cannot_be_vectorized_is_swept_seed_by_seed(tmp_path):
    # The iNALU's reinitialization acts on one model at a time: the sweep
    # trains its seeds with run_experiment and records the same verdicts
    # (compared on the second seed: its row is of its own seed, not the
    # chunk's first).
    grid = ["model=inalu", "input_size=10", "iterations=200", "eval_every=100"]
    outcome = run_sweep(
        parse_grid(grid), "0-1", tmp_path / "r.csv", chunk_size=2, progress=False
    )
    assert outcome.new_rows == 2
    rows = read_results(outcome.path).sort_values("seed").reset_index(drop=True)
    assert list(rows["replicas"]) == [1, 1]
    assert rows.loc[0, "extrapolation_mse"] != rows.loc[1, "extrapolation_mse"]
    config = ExperimentConfig(
        model="inalu", input_size=10, iterations=200, eval_every=100, seed=1
    )
    _, record = run_experiment(config, verbose=False)
    assert rows.loc[1, "extrapolation_mse"] == pytest.approx(
        record["extrapolation_mse"], rel=1e-5
    )
    assert rows.loc[1, "best_step"] == record["best_step"]


def test_the_snmu_sweeps_as_replicas_where_its_engine_carries_the_noise(tmp_path):
    # The sNMU's noise seed is model state: the JAX engine carries it per
    # replica; the TensorFlow engine cannot, and the sweep trains seed by seed.
    import keras

    grid = [
        "model=single_snmu",
        "operation=mul",
        "input_size=2",
        "subset_ratio=0.5",
        "overlap_ratio=0",
        "iterations=100",
        "eval_every=50",
    ]
    outcome = run_sweep(
        parse_grid(grid), "0-1", tmp_path / "r.csv", chunk_size=2, progress=False
    )
    rows = read_results(outcome.path)
    expected = 2 if keras.backend.backend() == "jax" else 1
    assert list(rows["replicas"]) == [expected, expected]
    assert np.isfinite(rows["extrapolation_mse"].astype(float)).all()


def test_a_file_from_before_epsilon_resumes_with_its_ids(tmp_path):
    grid = {"model": ["nau"], "input_size": [10], "iterations": [20]}
    path = tmp_path / "results.csv"
    run_sweep(grid, "0", path, progress=False)
    read_results(path).drop(columns=["epsilon"]).to_csv(path, index=False)
    old = read_results(path)
    assert list(old.columns) == list(RESULT_COLUMNS) and old["epsilon"].isna().all()
    assert run_sweep(grid, "0", path, progress=False).new_rows == 0  # same id
    with_epsilon = run_sweep({**grid, "epsilon": [1e-8]}, "0", path, progress=False)
    assert with_epsilon.new_rows == 1  # a different configuration
    table = read_results(path)
    assert len(set(table["config_id"])) == 2
    assert sorted(table["epsilon"].fillna(0)) == [0, 1e-8]


def test_a_row_cut_short_is_refused_with_its_line_and_untouched(tmp_path):
    grid = {"model": ["nau"], "input_size": [10], "iterations": [20]}
    path = tmp_path / "results.csv"
    run_sweep(grid, "0-1", path, progress=False)
    content = path.read_bytes()
    path.write_bytes(content[: len(content) - 30])  # the second run, line 3
    cut = path.read_bytes()
    with pytest.raises(ValueError, match="line 3 .*cut short") as error:
        run_sweep(grid, "0-2", path, progress=False)
    assert "left untouched" in str(error.value)
    assert path.read_bytes() == cut


def test_a_sweep_into_a_read_only_folder_is_one_line(tmp_path, capsys):
    with unwritable_folder(tmp_path) as folder:
        results = folder / "results.csv"
        with pytest.raises(ValueError, match="cannot write in"):
            run_sweep({"input_size": [10]}, "0", results, progress=False)
        argv = ["sweep", "--quiet", "--grid", "input_size=10", "--seeds", "0"]
        assert cli.main([*argv, "--results", str(results)]) == 2
        error = capsys.readouterr().err
        assert len(error.strip().splitlines()) == 1
        assert f"--results {str(results)!r}: cannot write in" in error
        assert not results.exists()


def test_a_lock_file_that_cannot_be_created_is_one_line(tmp_path):
    path = tmp_path / "results.csv"
    (tmp_path / "results.csv.lock").mkdir()  # in the way of the lock file
    with pytest.raises(ValueError, match="cannot create the lock file"):
        run_sweep({"input_size": [10]}, "0", path, progress=False)


def test_the_sweep_command_refuses_overlapping_ranges(tmp_path, capsys):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", "--grid", "input_size=10", "--seeds", "0"]
    argv += ["--results", str(path)]
    overlap = ["--grid", "interpolation_range:extrapolation_range=U[1,3]:U[2,6]"]
    assert cli.main([*argv, *overlap]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1
    assert "overlap on U[2, 3]" in error and "--allow-overlap" in error
    assert not path.exists()


def test_a_sweep_chunk_keeps_no_evaluation_history(monkeypatch):
    """Its rows hold verdicts only: no list of every evaluation is kept."""
    from keras_nalu.sweeps import training
    from keras_nalu.sweeps.chunks import Chunk

    histories = []
    train_runs = training.train_runs

    def spy(*args, **kwargs):
        records = train_runs(*args, **kwargs)
        histories.extend(record["history"] for run in records for record in run)
        return records

    monkeypatch.setattr(training, "train_runs", spy)
    config = ExperimentConfig(model="nau", input_size=10, iterations=20, eval_every=10)
    rows = training.train_chunk(Chunk(config, (0, 1)))
    assert histories == [None, None]
    assert [(row["seed"], row["evaluations"]) for row in rows] == [(0, 3), (1, 3)]


def test_a_finished_chunk_leaves_no_backup_even_without_backups(tmp_path, capsys):
    grid = {"model": ["nau"], "input_size": [10], "iterations": [300]}
    grid["eval_every"] = [100]
    path = tmp_path / "results.csv"
    assert not run_sweep(grid, "0-1", path, progress=False, time_limit=0).complete
    (backup,) = (tmp_path / "results.csv.backup").glob("*.npz")
    argv = ["sweep", "--quiet", "--seeds", "0-1", "--results", str(path)]
    for key, (value,) in grid.items():
        argv += ["--grid", f"{key}={value}"]
    assert cli.main([*argv, "--no-backup"]) == 0
    assert not backup.exists()
    assert not (tmp_path / "results.csv.backup").exists()
    err = capsys.readouterr().err
    assert "1 chunk backups in results.csv.backup/ are not continued" in err
    assert sorted(read_results(path)["seed"]) == [0, 1]
    assert cli.main(["progress", str(path)]) == 2
    assert "no chunk of" in capsys.readouterr().err  # none "in training"


def test_backup_files_lists_every_npz_file_beside_the_results(tmp_path):
    folder = tmp_path / "sweep.csv.backup"
    folder.mkdir()
    for name in ("single.npz", "batched.npz", "notes.txt"):
        (folder / name).write_bytes(b"")
    found = backup_files(tmp_path / "sweep.csv")
    assert [path.name for path in found] == ["batched.npz", "single.npz"]
    assert backup_files(tmp_path / "other.csv", folder) == found
    assert backup_files(tmp_path / "missing.csv") == []
