"""No module of keras_nalu or of benchmarks/ is over 600 lines, no function
over 80 lines of code (60 in keras_nalu.sweeps).

A module's lines are all the lines of its file. A function's lines of code
are the lines of its body after its docstring that are neither blank nor
only a comment; its signature and decorators do not count, and a nested
function counts in its own length and in the enclosing function's.
"""

import ast

from tests.package_source import ROOT, code_lines, module_files, parse, place

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _functions(node, prefix=""):
    """(qualified name, node) of every function under `node`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from _functions(child, f"{name}.")
        else:
            yield from _functions(child, prefix)


def checked_files() -> list:
    """The package's modules and the benchmark scripts (`benchmarks/`)."""
    benchmarks = sorted((ROOT / "benchmarks").rglob("*.py"))
    return [*module_files().values(), *benchmarks]


def findings(paths=None) -> dict[str, int]:
    """`path` (a long module) or `path::function` (a long function): its length."""
    found = {}
    for path in checked_files() if paths is None else paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_MODULE_LINES:
            found[place(path)] = len(lines)
        for name, function in _functions(parse(path)):
            length = code_lines(function, lines)
            if length > MAX_FUNCTION_LINES:
                found[f"{place(path)}::{name}"] = length
    return found


FINDINGS = findings()


def test_the_rule_counts_code_not_docstrings_blanks_or_comments():
    source = 'def f():\n    """Doc.\n\n    More.\n    """\n    # why\n\n    x = 1\n'
    source += "    return (\n        x\n    )\n"
    (function,) = ast.parse(source).body
    assert code_lines(function, source.splitlines()) == 4


def test_the_rule_reads_the_benchmarks_too(tmp_path, monkeypatch):
    assert ROOT / "benchmarks" / "paper.py" in checked_files()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES + 1))
    long = tmp_path / "long.py"
    long.write_text("def f():\n" + body + "\n" * MAX_MODULE_LINES, encoding="utf-8")
    monkeypatch.setattr("tests.test_sizes.place", lambda path: path.name)
    found = findings([long])
    assert found == {
        "long.py": MAX_FUNCTION_LINES + 2 + MAX_MODULE_LINES,
        "long.py::f": MAX_FUNCTION_LINES + 1,
    }


def test_no_module_over_600_lines_and_no_function_over_80_lines_of_code():
    assert not FINDINGS, (
        f"over {MAX_MODULE_LINES} lines or {MAX_FUNCTION_LINES}: {FINDINGS}"
    )


MAX_SWEEP_FUNCTION_LINES = 60


def test_no_function_of_the_sweeps_over_60_lines_of_code():
    # The sweep engine (keras_nalu.sweeps, its engines included) is held to
    # shorter functions than the rest: each step of a sweep reads in one go.
    long = {}
    for module, path in module_files().items():
        if not module.startswith("keras_nalu.sweeps"):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for name, function in _functions(parse(path)):
            length = code_lines(function, lines)
            if length > MAX_SWEEP_FUNCTION_LINES:
                long[f"{place(path)}::{name}"] = length
    assert not long, f"over {MAX_SWEEP_FUNCTION_LINES} lines of code: {long}"
