"""benchmarks/published.py: the papers' numbers and the one verdict rule."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import published  # noqa: E402


@pytest.mark.parametrize(
    "successes, seeds, paper, expected",
    [
        # ours inside the paper's interval: NMU ×, 19/20 against 98/100
        (19, 20, published.TABLE_6[("mul", "nmu")], "inside"),
        # the paper's rate inside ours, ours outside the paper's: 0/20 vs 7 %
        (0, 20, published.TABLE_6[("sub", "linear")], "inside"),
        # overlapping intervals, neither rate inside the other's: 1/5 vs 24/38
        (1, 5, published.FIG_3_HIDDEN_SIZE[("nmu", 10)], "open"),
        # no overlap: 0/10 [0 %, 28 %] against 33/36 [78 %, 97 %]
        (0, 10, published.FIG_3_HIDDEN_SIZE[("nmu", 4)], "below"),
        (100, 100, published.TABLE_6[("sub", "linear")], "above"),
        # a rate without a count: 64 % [57.1 %, 69.6 %] does not hold 70.2 %
        (144, 225, published.NALM_10_INPUTS[("div", "real_npu")], "below"),
        (198, 225, published.NALM_10_INPUTS[("div", "nmru")], "inside"),
        (5, 20, None, "no paper number"),
        (0, 0, published.TABLE_6[("mul", "nmu")], "no paper number"),
    ],
)
def test_one_verdict_rule(successes, seeds, paper, expected):
    assert published.verdict(successes, seeds, paper) == expected
    assert expected in published.VERDICTS


def test_the_edges_of_an_interval_count_as_inside():
    paper = published.Reported(0.5)
    assert published.verdict(1, 2, paper) == "inside"  # the rate itself
    lower = published.success_rate_interval(3, 10)[1]
    assert published.verdict(3, 10, published.Reported(lower)) == "inside"


def test_the_plain_real_npu_is_the_modified_one_less_15_1_points():
    rates = {unit: row.rate for (_, unit), row in published.NALM_10_INPUTS.items()}
    assert rates == {"nmru": 0.916, "real_npu_modified": 0.853, "real_npu": 0.702}


def test_the_plain_real_npu_has_two_readings_of_15_1_percent():
    """ "Improving … by 15.1 %": points (85.3 − 15.1) or relative (85.3 / 1.151)."""
    readings = {way: row.rate for way, row in published.REAL_NPU_READINGS.items()}
    assert readings == {"points": 0.702, "relative": 0.741}
    assert "Learning Division" in published.NALM_PAPER
    assert "(2021)" in published.NALM_PAPER


def test_the_figure_3_counts_say_where_they_come_from():
    assert "read off its Wilson error bars" in published.FIG_3_COUNTS_NOTE
    assert "neither its caption nor its text" in published.FIG_3_COUNTS_NOTE
    assert "seeds 0–49" in published.FIG_3_COUNTS_NOTE
    assert "App. C.3 (Fig. 7)" in published.__doc__


def test_the_docstring_examples_run():
    import doctest

    result = doctest.testmod(published, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0
