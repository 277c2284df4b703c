"""`keras-nalu --help` and `--version` at once; every flag explains itself."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import keras_nalu
from keras_nalu import cli
from keras_nalu.cli.registry import COMMANDS

ROOT = Path(__file__).resolve().parents[2]

#: How many more modules `keras-nalu --help` (or `--version`) may import than
#: `python -c pass`. Counted, not timed, so that a loaded machine does not
#: fail it: 59 more (the command's modules, argparse, json ...); with Keras
#: and its backend, thousands more.
MAX_EXTRA_MODULES = 100

#: What takes seconds to import, and the answer does not need.
HEAVY = {"keras", "tensorflow", "jax", "torch", "numpy", "pandas", "scipy"}


def imported(*argv: str) -> set[str]:
    """The modules `python ARGV` imports (`-X importtime`)."""
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    lines = [line for line in completed.stderr.splitlines() if "import time:" in line]
    return {line.split("|")[-1].strip() for line in lines[1:]}  # after the header


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_answer_at_once(flag):
    python = imported("-c", "pass")
    answer = imported("-m", "keras_nalu", flag)
    assert "keras_nalu.cli" in answer
    assert not answer & HEAVY
    assert len(answer - python) <= MAX_EXTRA_MODULES, sorted(answer - python)


def test_version_names_the_package_version(capsys):
    with pytest.raises(SystemExit) as exit_status:
        cli.main(["--version"])
    assert exit_status.value.code == 0
    assert capsys.readouterr().out.strip() == f"keras-nalu {keras_nalu.__version__}"


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
