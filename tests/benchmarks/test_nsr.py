"""benchmarks/nsr.py: the tasks of Faber & Wattenhofer's scripts, and a seed's
verdict per magnitude."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import nsr  # noqa: E402


def test_comparisons_learn_on_digits_and_test_around_one_large_number():
    rng = np.random.default_rng(0)
    x, t = nsr.comparison_data("gt", rng)
    assert x.shape == (81, 2) and x.min() == 1 and x.max() == 9
    np.testing.assert_array_equal(t[:, 0], x[:, 0] > x[:, 1])
    x, t = nsr.comparison_data("eq", rng)
    assert x.shape == (18, 2) and t.sum() == 9
    x, t = nsr.comparison_test("leq", 14, rng)
    assert len(x) == 21 and x.min() >= 1e14 - 5
    np.testing.assert_array_equal(t[:, 0], x[:, 0] <= x[:, 1])
    assert (x[:, 0] - x[:, 1] != 0).sum() == 20  # float64 holds a ± 5 exactly


def test_piecewise_targets_follow_the_condition():
    x = np.array([[3, 1, 10, 20, 30], [1, 3, 10, 20, 30], [2, 2, 10, 20, 30]], float)
    np.testing.assert_array_equal(nsr.piecewise_targets("f", x)[:, 0], [34, 10, 10])
    np.testing.assert_array_equal(nsr.piecewise_targets("feq", x)[:, 0], [10, 10, 34])
    x, t = nsr.piecewise_data("feq", np.random.default_rng(0))
    assert x.shape == (4000, 5) and (x[:, 0] == x[:, 1]).sum() == 2000


def test_a_seed_solves_the_magnitudes_where_every_point_is_within_a_half():
    rows = pd.DataFrame(
        [
            {
                "task": "gt",
                "seed": s,
                "magnitude": 10**k,
                "mae": 0.1,
                "solved": not (s == 1 and k == 9),
                "train_mae": 0.1,
                "steps": 10,
                "wall_time": 1.0,
            }
            for s in range(2)
            for k in range(1, 15)
        ]
    )
    table = nsr.solved_table(rows, nsr.COMPARISONS, 10, 10**7)
    assert "| > | 2 | 2/2: 100 % [34, 100] | 1/2: 50 % [9, 91] |" in table
