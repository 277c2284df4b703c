"""The CLI package stays thin: a module and a short handler per command.

Module and function sizes across the package: tests/test_sizes.py.
"""

import ast
from pathlib import Path

import pytest

import keras_nalu.cli
from keras_nalu.cli.registry import COMMANDS
from tests.package_source import code_lines


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_is_a_module_with_a_short_handler(name):
    command = COMMANDS[name]
    assert command.__name__ == f"keras_nalu.cli.{name}"
    assert command.HELP and callable(command.add_flags)
    source = Path(command.__file__).read_text(encoding="utf-8")
    (handler,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "run"
    ]
    length = code_lines(handler, source.splitlines())
    assert length <= 40, f"{name}: run has {length} lines of code"


def test_the_help_lists_every_command_of_the_registry(capsys):
    with pytest.raises(SystemExit):
        keras_nalu.cli.main(["--help"])
    out = capsys.readouterr().out
    assert "{" + ",".join(COMMANDS) + "}" in out
