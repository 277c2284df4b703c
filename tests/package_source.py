"""The package's source, read once, for the tests that hold it to rules.

Each rule's test lists what breaks it as findings, strings that name a place
(`keras_nalu/sweeps/runner.py::run_sweep`), and fails on any.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import keras_nalu

PACKAGE = Path(keras_nalu.__file__).parent
ROOT = PACKAGE.parent


def module_files() -> dict[str, Path]:
    """Every module of keras_nalu by dotted name, with its source file."""
    files = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    return files


@functools.cache
def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def place(path: Path) -> str:
    """A source file as findings name it: its path from the repository root."""
    return path.relative_to(ROOT).as_posix()


def docstring_node(body: list[ast.stmt]) -> ast.Expr | None:
    """The docstring statement that opens a body, or None."""
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first
    return None


def code_lines(function: ast.FunctionDef | ast.AsyncFunctionDef, lines) -> int:
    """Lines of code of a function: its body's lines after the docstring that
    are neither blank nor only a comment (`lines`: its file's lines)."""
    body = function.body
    if docstring_node(body) is not None:
        body = body[1:]
    if not body:
        return 0
    text = lines[body[0].lineno - 1 : function.end_lineno]
    return sum(1 for line in text if line.strip() and not line.lstrip().startswith("#"))
