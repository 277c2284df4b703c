"""`keras-nalu --help` and `--version` at once; every flag explains itself."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import keras_nalu
from keras_nalu import cli
from keras_nalu.cli.registry import COMMANDS

ROOT = Path(__file__).resolve().parents[2]

#: How many times longer than `python -c pass` `keras-nalu --help` may take.
#: Measured on the 2-core CPU under load (fastest of 5): about 3 (0.08 s
#: against 0.03 s); about 220 (8.2 s) while the command imported Keras and
#: TensorFlow for it. The margin is for a loaded machine.
MAX_RATIO = 10


def fastest(command: list[str], runs: int = 5) -> float:
    """The shortest wall time of `runs` runs of `command`, in seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        completed = subprocess.run(
            command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
        )
        times.append(time.perf_counter() - started)
        assert completed.returncode == 0, completed.stderr[-2000:]
    return min(times)


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_answer_at_once(flag):
    python = fastest([sys.executable, "-c", "pass"])
    answer = fastest([sys.executable, "-m", "keras_nalu", flag])
    assert answer < MAX_RATIO * python, (answer, python)
    assert answer < 1.0


def test_version_names_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_status:
        cli.main(["--version"])
    assert exit_status.value.code == 0
    assert capsys.readouterr().out.strip() == f"keras-nalu {keras_nalu.__version__}"


def test_help_without_a_sub_command_imports_no_keras():
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "keras_nalu", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in completed.stderr.splitlines()}
    assert "keras_nalu.cli" in imported
    assert not imported & {"keras", "tensorflow", "jax", "pandas"}


def help_text(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_flag_has_help(capsys, command):
    parser = cli.build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]
    bare = [
        action.option_strings or [action.dest]
        for action in sub._actions
        if not action.help
    ]
    assert not bare, f"{command}: flags without help: {bare}"
    assert help_text(capsys, command)


def test_sweep_help_shows_its_defaults(capsys):
    text = help_text(capsys, "sweep")
    for default in ("(default: 0-9)", "(default: 100)", "(default: results/sweep.csv)"):
        assert default in text


def test_plot_help_lists_the_columns_to_plot_against(capsys):
    text = help_text(capsys, "plot")
    for column in ("hidden_size", "max_iterations", "interpolation_range", "engine"):
        assert column in text
