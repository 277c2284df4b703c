"""`keras-nalu sweep`: its flags, --time-limit, Ctrl-C and its messages."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from keras_nalu import cli
from keras_nalu.sweeps.engines import read_backup
from keras_nalu.sweeps.grid import load_grid_file, parse_grid
from keras_nalu.sweeps.results import read_results
from tests.helpers import interrupted_while_starting

GRID = ["--grid", "model=nau", "--grid", "input_size=10"]
GRID += ["--grid", "iterations=100", "--grid", "eval_every=100"]


def _sweep_flags(tmp_path) -> tuple[list[list[str]], list[dict]]:
    """Two command lines that give every flag of `keras-nalu sweep` another
    value than its default, and the arguments each must hand `run_sweep`."""
    grid_file = tmp_path / "grid.json"
    # overlapping ranges: they reach run_sweep with --allow-overlap only
    grid_file.write_text(
        json.dumps(
            {"interpolation_range": ["U[1,2]"], "extrapolation_range": ["U[1.5,3]"]}
        )
    )
    grid = {**load_grid_file(grid_file), **parse_grid(["model=nmu", "input_size=10"])}
    here = [
        *("--grid", "model=nmu", "--grid", "input_size=10", "--grid-file", grid_file),
        *("--allow-overlap", "--seeds", "3-4", "--chunk-size", "7", "--quiet"),
        *("--results", tmp_path / "here.csv", "--backup-every", "30"),
        *("--time-limit", "90", "--chunks-per-device", "4", "--pack-replicas", "8"),
        *("--processes-per-device", "2", "--unroll", "3", "--xla-command-buffers"),
    ]
    on_ray = [
        *("--grid", "model=nmu", "--grid", "input_size=10", "--results", "r.csv"),
        *("--ray-address", "local", "--backup-dir", tmp_path / "backups"),
        *("--gpus-per-chunk", "0.5", "--no-backup"),
    ]
    defaults = {
        "seeds": "0-9",
        "chunk_size": 100,
        "ray_address": None,
        "progress": True,
        "backup_every": 600.0,
        "backup_dir": None,
        "gpus_per_chunk": 0.0,
        "time_limit": None,
        "chunks_per_device": 1,
        "pack_replicas": None,
        "processes_per_device": 1,
        "unroll": 1,
        "command_buffers": False,
    }
    expected_here = {
        **defaults,
        "grid": grid,
        "results_path": str(tmp_path / "here.csv"),
        "seeds": "3-4",
        "chunk_size": 7,
        "progress": False,
        "backup_every": 30.0,
        "time_limit": 90.0,
        "chunks_per_device": 4,
        "pack_replicas": 8,
        "processes_per_device": 2,
        "unroll": 3,
        "command_buffers": True,
    }
    expected_on_ray = {
        **defaults,
        "grid": parse_grid(["model=nmu", "input_size=10"]),
        "results_path": "r.csv",
        "ray_address": "local",
        "backup_dir": str(tmp_path / "backups"),
        "gpus_per_chunk": 0.5,
        "backup_every": None,
    }
    return [here, on_ray], [expected_here, expected_on_ray]


def test_every_flag_reaches_run_sweep(tmp_path, monkeypatch):
    import keras_nalu.sweeps.engines.device as device
    import keras_nalu.sweeps.runner as runner

    seen = []

    def fake_sweep(grid, seeds, results_path, **options):
        seen.append({"grid": grid, "seeds": seeds, "results_path": results_path})
        seen[-1].update(options)
        raise SystemExit(0)

    monkeypatch.setattr(runner, "run_sweep", fake_sweep)
    # what --xla-command-buffers and --processes-per-device set before JAX
    # starts, left as it was after the test
    monkeypatch.setattr(device, "use_command_buffers", lambda: None)
    for name in ("KERAS_BACKEND", "XLA_PYTHON_CLIENT_PREALLOCATE"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    argvs, expected = _sweep_flags(tmp_path)
    for argv in argvs:
        with pytest.raises(SystemExit):
            cli.main(["sweep", *map(str, argv)])
    assert seen == expected
    # ... and those two command lines give every flag of the command
    parser = cli.build_parser()
    sweep = parser._subparsers._group_actions[0].choices["sweep"]
    flags = {flag for action in sweep._actions for flag in action.option_strings}
    given = {str(arg) for argv in argvs for arg in argv if str(arg).startswith("--")}
    assert flags - {"-h", "--help"} == given


def test_the_flags_are_the_options_of_run_sweep_with_their_defaults(monkeypatch):
    """Each field of `SweepOptions` and `FillingOptions` is a flag of the
    command, and a flag not given is the library's default: the options are
    defined once, in the library."""
    import dataclasses

    import keras_nalu.sweeps.runner as runner
    from keras_nalu.sweeps import SweepOptions
    from keras_nalu.sweeps.local import FillingOptions

    seen = {}

    def fake_sweep(grid, seeds, results_path, *, progress, **options):
        seen.update(options)
        raise SystemExit(0)

    monkeypatch.setattr(runner, "run_sweep", fake_sweep)
    with pytest.raises(SystemExit):
        cli.main(["sweep", "--grid", "model=nmu", "--results", "r.csv"])
    # chunk_seconds is a function (a chunk's predicted wall time): a script's
    # option only
    defaults = {
        field.name: field.default
        for options in (SweepOptions, FillingOptions)
        for field in dataclasses.fields(options)
        if field.name not in ("filling", "chunk_seconds")
    }
    assert seen == defaults


def test_a_sweep_stops_at_its_time_limit_and_the_same_command_continues(
    tmp_path, capsys
):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", *GRID, "--seeds", "0-1", "--chunk-size", "1"]
    argv += ["--results", str(path)]
    assert cli.main([*argv, "--time-limit", "0"]) == 0
    assert "stopped at --time-limit" in capsys.readouterr().err
    assert list(read_results(path)["seed"]) == [0]  # one chunk, then the limit
    assert cli.main(argv) == 0
    assert "stopped at --time-limit" not in capsys.readouterr().err
    assert sorted(read_results(path)["seed"]) == [0, 1]


@pytest.mark.parametrize("extra", [["--no-backup"], ["--ray-address", "local"]])
def test_a_time_limit_needs_backups_here(tmp_path, capsys, extra):
    argv = ["sweep", "--quiet", *GRID, "--results", str(tmp_path / "r.csv")]
    assert cli.main([*argv, "--time-limit", "60", *extra]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("keras-nalu sweep: error: --time-limit")
    assert len(error.splitlines()) == 1
    assert not (tmp_path / "r.csv").exists()


def test_chunks_per_device_must_be_positive(tmp_path, capsys):
    argv = ["sweep", "--quiet", *GRID, "--results", str(tmp_path / "r.csv")]
    assert cli.main([*argv, "--chunks-per-device", "0"]) == 2
    assert "--chunks-per-device must be" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["sweep", "summarize"])
def test_ctrl_c_while_the_command_starts_is_one_line_and_130(tmp_path, command):
    results = tmp_path / "results.csv"
    argv = ["summarize", results]
    if command == "sweep":
        argv = ["sweep", "--quiet", *GRID, "--seeds", "0", "--results", results]
    else:
        results.write_text("model,operation,seed,success,solved_at\n")
    before = sorted(tmp_path.iterdir())
    completed = interrupted_while_starting(*argv, cwd=tmp_path)
    assert completed.returncode == 130, completed.stderr[-3000:]
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("keras-nalu"), completed.stderr
    assert lines[0].endswith("interrupted")
    assert completed.stdout == ""
    assert sorted(tmp_path.iterdir()) == before


def test_a_time_limit_before_any_run_finished_says_so(tmp_path, capsys):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", "--grid", "model=nau", "--grid", "input_size=10"]
    argv += ["--grid", "iterations=300", "--grid", "eval_every=100"]
    argv += ["--seeds", "0", "--results", str(path), "--time-limit", "0"]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    (backup,) = (tmp_path / "results.csv.backup").glob("*.npz")
    assert err == [
        "keras-nalu sweep: stopped at --time-limit with runs left, the chunk in "
        f"training backed up to {backup}; run the same command again to continue",
        f"keras-nalu sweep: no run has finished yet, so there is no {path} and no "
        "table",
    ]
    assert not path.exists()


def test_a_time_limit_names_every_chunk_backed_up(tmp_path, capsys):
    # A pack of four chunks, or four threads, stops with four backups.
    from keras_nalu.cli.sweep import _print_outcome
    from keras_nalu.sweeps.runner import SweepOutcome

    backups = tuple(tmp_path / f"{name}.npz" for name in "abcd")
    path = tmp_path / "results.csv"
    _print_outcome(SweepOutcome(path, None, 0, 0, (), False, backups))
    assert capsys.readouterr().err.splitlines()[0] == (
        "keras-nalu sweep: stopped at --time-limit with runs left, the 4 chunks in "
        f"training backed up to {', '.join(map(str, backups))}; run the same "
        "command again to continue"
    )


def test_a_time_limit_between_seed_by_seed_chunks_names_no_backup(tmp_path, capsys):
    path = tmp_path / "results.csv"
    argv = ["sweep", "--quiet", "--grid", "model=inalu", "--grid", "input_size=10"]
    argv += ["--grid", "iterations=200", "--grid", "eval_every=100"]
    argv += ["--seeds", "0-1", "--chunk-size", "1", "--results", str(path)]
    assert cli.main([*argv, "--time-limit", "0"]) == 0
    err = capsys.readouterr().err
    assert (
        "keras-nalu sweep: stopped at --time-limit with runs left, between two "
        "runs, none cut short (no backup was needed); run the same command again "
        "to continue"
    ) in err
    assert "backed up" not in err
    assert list(read_results(path)["seed"]) == [0]
    assert not (tmp_path / "results.csv.backup").exists()


def _jax_sweep(*argv) -> subprocess.Popen:
    """`keras-nalu sweep ARGV` on the JAX engine, in a process group of its own."""
    return subprocess.Popen(
        [sys.executable, *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "jax"},
        start_new_session=True,
    )


def _wait_for(process, ready, timeout=300) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the sweep never got there"
        time.sleep(0.05)


def test_ctrl_c_as_timeout_sends_it_backs_up_every_chunk_trained_in_threads(
    tmp_path,
):
    # `timeout -s INT` sends SIGINT to its command, then to the command's
    # group: one Ctrl-C, two signals. Two chunks train in threads for a
    # million steps, each backed up at every evaluation, 20,000 steps apart:
    # both signals come while the threads train.
    grid = ["model=nau", "operation=mul", "input_size=10", "iterations=1000000"]
    argv = ["-m", "keras_nalu", "sweep", "--quiet", "--seeds", "0-3"]
    for item in [*grid, "eval_every=20000"]:
        argv += ["--grid", item]
    argv += ["--chunk-size", "2", "--chunks-per-device", "2", "--backup-every", "0"]
    sweep = _jax_sweep(*argv, "--results", tmp_path / "results.csv")
    backups = tmp_path / "results.csv.backup"
    try:
        _wait_for(sweep, lambda: len(list(backups.glob("*.npz"))) == 2)
        sweep.send_signal(signal.SIGINT)
        time.sleep(0.1)  # the first one handled alone, as it may be
        os.killpg(sweep.pid, signal.SIGINT)
        _, err = sweep.communicate(timeout=300)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 130, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("keras-nalu sweep: interrupted: "), err[-3000:]
    assert last.endswith(": run it again to continue")
    for backup in backups.glob("*.npz"):  # each chunk's, each named
        assert f"backed up to {backup}" in last
        assert {record["step"] for record in read_backup(backup)} != {0}


# Runs `keras-nalu sweep` (argv after a marker file) where every block of
# training steps is an XLA loop that never ends: the main thread waits on
# XLA, as it does while XLA compiles a large program.
_XLA_FOREVER = """
import sys
from pathlib import Path

import jax
from keras_nalu import cli
from keras_nalu.sweeps.engines.jax import JaxReplicaRun

def forever(run, start, strengths):
    Path(sys.argv[1]).touch()
    loop = jax.jit(lambda x: jax.lax.while_loop(lambda x: x == x, lambda x: x + 1, x))
    loop(0).block_until_ready()

JaxReplicaRun._train_block = forever
sys.exit(cli.main(sys.argv[2:]))
"""


def test_a_second_ctrl_c_ends_the_sweep_whatever_it_is_doing(tmp_path):
    marker = tmp_path / "in XLA"
    argv = ["-c", _XLA_FOREVER, marker, "sweep", "--quiet", *GRID]
    sweep = _jax_sweep(*argv, "--results", tmp_path / "results.csv")
    try:
        _wait_for(sweep, marker.exists)
        deadline = time.monotonic() + 60
        while sweep.poll() is None and time.monotonic() < deadline:
            sweep.send_signal(signal.SIGINT)  # Ctrl-C, again and again
            time.sleep(1.5)
        _, err = sweep.communicate(timeout=30)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 130, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        "keras-nalu sweep: interrupted at once by a second Ctrl-C: the chunks in "
        "training lose what they trained since their last backup; run it again "
        "to continue from there"
    )
