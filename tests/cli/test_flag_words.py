"""A command's errors are the package's checks, told with the command's flags.

The package's checks raise `ArgumentError`, whose fields name the argument;
the command maps each argument to its flag from the table its parser was
built from (`Parser.flag_names`). Nothing in `keras_nalu/cli/` reads a
message back with a regular expression, and the command makes no check of
its own that the package makes.
"""

import ast

import pytest

from keras_nalu import cli
from keras_nalu.errors import ArgumentError
from tests.helpers import keras_nalu_cli
from tests.package_source import PACKAGE, parse, place

GRID = ["--grid", "model=nau", "--grid", "input_size=10", "--grid", "iterations=100"]


def regular_expressions(tree: ast.Module) -> list[int]:
    """The lines of `tree` that import or call Python's `re` module."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "re" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "re":
            lines.append(node.lineno)
    return lines


def test_the_detector_finds_a_regular_expression():
    assert regular_expressions(ast.parse("import re\nre.sub('a', 'b', 'c')")) == [1]
    assert regular_expressions(ast.parse("from re import sub")) == [1]
    assert regular_expressions(ast.parse("import json")) == []


def test_no_command_rewrites_a_message_with_a_regular_expression():
    found = [
        f"{place(path)}:{line}"
        for path in sorted((PACKAGE / "cli").glob("*.py"))
        for line in regular_expressions(parse(path))
    ]
    assert not found, found


def _recorded_errors(monkeypatch) -> list[ArgumentError]:
    """The `ArgumentError`s `run_sweep` raises from now on."""
    from keras_nalu.sweeps import runner

    raised = []
    real = runner.run_sweep

    def recording(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        except ArgumentError as error:
            raised.append(error)
            raise

    monkeypatch.setattr(runner, "run_sweep", recording)
    return raised


@pytest.mark.parametrize(
    "flags",
    [
        ["--seeds", "3-1"],
        ["--seeds", "x"],
        ["--chunk-size", "0"],
        ["--time-limit", "5", "--no-backup"],
        ["--time-limit", "5", "--ray-address", "local"],
        ["--no-backup", "--chunks-per-device", "0"],
        ["--no-backup", "--gpus-per-chunk", "1"],
    ],
)
def test_a_sweeps_error_is_run_sweeps_in_flag_words(
    tmp_path, capsys, monkeypatch, flags
):
    raised = _recorded_errors(monkeypatch)
    argv = ["sweep", "--quiet", *GRID, "--results", tmp_path / "r.csv", *flags]
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and out == "" and len(err) == 1, err
    # the check that refused it is the package's, made once: in run_sweep
    assert len(raised) == 1, err
    parser = cli.build_parser()
    sweep = parser._subparsers._group_actions[0].choices["sweep"]
    words = raised[0].in_words(sweep.flag_names)
    assert err[0] == f"keras-nalu sweep: error: {words}"
    assert not list(tmp_path.iterdir())
