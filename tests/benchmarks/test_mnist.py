"""benchmarks/mnist.py: the summary the Results page includes."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import mnist  # noqa: E402


def test_the_summary_counts_seeds_within_the_bound_per_length():
    row = {
        "baseline_mean_mse": 0.5,
        "baseline_std_mse": 0.1,
        "bound": 0.8,
        "bound_over_mean": 1.6,
        "unit_mse": [0.4, 0.9],
    }
    result = {
        "task": "product",
        "unit": "nmu",
        "options": {"train_length": 2},
        "wall_time": 897.2,
        "table": [
            {**row, "length": 2, "success": [True, True]},
            {**row, "length": 10, "success": [True, False]},
        ],
    }
    text = mnist.summary_markdown([result])
    assert "| product, NMU | 2 digits | 2: 2/2 · **10: 1/2** | 897 s |" in text
    assert "<!-- --8<-- [start:product] -->" in text
