"""benchmarks/table2.py (and table6.py): the Markdown summary with the verdict."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import table2  # noqa: E402


def _rows(model, operation, solved, seeds=4):
    return [
        {
            "model": model,
            "operation": operation,
            "max_iterations": 50_000,
            "seed": seed,
            "success": seed < solved,
            "solved_at": 18_000.0 if seed < solved else float("nan"),
            "sparsity_error": 0.4 if seed < solved else float("nan"),
            "wall_time": 500.0,
            "replicas": seeds,
        }
        for seed in range(seeds)
    ]


def test_rows_of_table_6_get_the_verdict_and_the_others_a_table_of_their_own():
    results = pd.DataFrame(_rows("nau", "add", 4) + _rows("inalu", "add", 0))
    text = table2.table_text(results)
    paper, beyond = text.split("Presets without a row in Table 6:")
    assert "| + | nau | 5·10⁴ | 4 | 100% [51%, 100%] | 100% | inside |" in paper
    assert "| 1.8e+04 / 1.8e+04 | 0.4 | 500 s |" in paper
    assert "<!-- --8<-- [start:beyond] -->" in beyond
    assert "| + | inalu | 5·10⁴ | 4 | 0% [0%, 49%] | — | — | 500 s |" in beyond


def test_no_beyond_table_when_every_row_is_in_table_6():
    text = table2.table_text(pd.DataFrame(_rows("nau", "sub", 4)))
    assert "beyond" not in text and "[start:paper]" in text
