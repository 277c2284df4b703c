"""Every benchmark script's `--help` opens with its whole one-line summary."""

import ast
import runpy
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.rglob("*.py"))


@pytest.mark.parametrize(
    "script", SCRIPTS, ids=lambda path: str(path.relative_to(BENCHMARKS))
)
def test_the_first_docstring_line_is_a_whole_sentence(script):
    # The scripts' --help shows that line (argparse's description); a
    # sentence carried over to the next line was cut off there.
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
    summary, *rest = doc.splitlines()
    assert summary.rstrip().endswith("."), summary
    assert not rest or rest[0] == "", rest[0]


def test_table2_help_shows_its_summary_whole(monkeypatch, capsys):
    # run as a script in this process, not a fresh one that imports Keras again
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", [str(BENCHMARKS / "table2.py"), "--help"])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(BENCHMARKS / "table2.py"), run_name="__main__")
    assert stopped.value.code == 0
    output = capsys.readouterr().out
    text = " ".join(output.split())
    assert (
        "Madsen & Johansen's (2020) Table 2 rows over 100 seeds, beside the paper."
    ) in text
