"""Every benchmark script's `--help` opens with its whole one-line summary."""

import ast
import os
import subprocess
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


def test_table2_help_shows_its_summary_whole():
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / "table2.py"), "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    text = " ".join(completed.stdout.split())
    assert (
        "Madsen & Johansen's (2020) Table 2 rows over 100 seeds, beside the paper."
    ) in text
