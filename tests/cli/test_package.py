"""The CLI package stays thin: small modules, short functions, a handler per command."""

import ast
from pathlib import Path

import pytest

import keras_nalu.cli
from keras_nalu.cli.registry import COMMANDS

PACKAGE = Path(keras_nalu.cli.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))


def code_lines(function: ast.FunctionDef) -> int:
    """Lines of a function's code, its docstring left out."""
    body = function.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and len(body) > 1
    ):
        first = body[1]
    return function.end_lineno - first.lineno + 1


def functions(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_modules_are_small_and_functions_short(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 600
    long = {f.name: code_lines(f) for f in functions(path) if code_lines(f) > 80}
    assert not long, f"{path.name}: functions over 80 lines of code: {long}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_is_a_module_with_a_short_handler(name):
    command = COMMANDS[name]
    assert command.__name__ == f"keras_nalu.cli.{name}"
    assert command.HELP and callable(command.add_flags)
    (handler,) = [f for f in functions(Path(command.__file__)) if f.name == "run"]
    assert code_lines(handler) <= 40, f"{name}: run has {code_lines(handler)} lines"


def test_the_help_lists_every_command_of_the_registry(capsys):
    with pytest.raises(SystemExit):
        keras_nalu.cli.main(["--help"])
    out = capsys.readouterr().out
    assert "{" + ",".join(COMMANDS) + "}" in out
