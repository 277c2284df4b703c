"""benchmarks/held.py: a run replaces its setting's rows; the summary pools seeds."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import held  # noqa: E402


def _rows(regularizer, above, seeds=2):
    return pd.DataFrame(
        {
            "hidden_size": 4,
            "steps": 30_000,
            "regularizer": regularizer,
            "epsilon": "keras",
            "seed": range(seeds),
            "evaluations": 31,
            "above_threshold": above,
            "largest_extrapolation_mse": 168.0,
            "threshold": 0.16,
            "engine": "jax",
            "device": "cpu",
            "wall_time": 26.0,
        }
    )


def test_a_run_replaces_the_rows_of_its_setting_only(tmp_path):
    path = tmp_path / "results.csv"
    pd.concat([_rows("full", 3), _rows("none", 30)]).to_csv(path, index=False)
    merged = held.merged(path, _rows("full", 2))
    assert sorted(merged["above_threshold"]) == [2, 2, 30, 30]


def test_the_summary_pools_every_seed_of_a_setting():
    text = held.summary_text(pd.concat([_rows("full", [2, 5]), _rows("none", 30)]))
    assert "| 4 | 30,000 | full | keras | 2 | 7 of 62, 11% [6%, 22%] | 2–5 |" in text
    assert "| 4 | 30,000 | none | keras | 2 | 60 of 62," in text
