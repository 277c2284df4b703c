"""benchmarks/rejudge.py: committed rows re-judged in place, and what is left."""

import dataclasses
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import nalm  # noqa: E402
import rejudge  # noqa: E402

from keras_nalu.sweeps.results import config_id, read_results  # noqa: E402

TABLE2 = rejudge.RESULTS / "table2" / "results.csv"


def _nau_sub_rows(tmp_path) -> Path:
    """The committed NAU − rows of Table 2 (quoted cells, two unsolved seeds)."""
    lines = TABLE2.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "results.csv"
    path.write_text(
        "".join([lines[0], *(line for line in lines if line.startswith("nau,sub,"))]),
        encoding="utf-8",
    )
    return path


def test_a_row_is_rejudged_in_its_two_cells_and_nothing_else(tmp_path):
    path = _nau_sub_rows(tmp_path)
    before = path.read_text(encoding="utf-8")
    rows = read_results(path)
    unsolved = rows[~rows["success"]]
    assert len(unsolved) == 2
    # A threshold above one unsolved seed's MSE and below the other's.
    new = float(unsolved["extrapolation_mse"].mean())
    report = rejudge.rejudge_file(path, lambda config: new, write=True)
    after = read_results(path)
    assert report.thresholds_changed == len(rows)
    assert len(report.flipped) == 1 and "nau sub seed" in report.flipped[0]
    assert (after["threshold"] == new).all()
    flipped = after["success"] != rows["success"]
    assert flipped.sum() == 1
    assert (rows.loc[flipped, "extrapolation_mse"] < new).all()
    kept = [c for c in rows.columns if c not in ("threshold", "success")]
    pd.testing.assert_frame_equal(after[kept], rows[kept])
    # Every other byte of every line is as it was.
    lines = zip(before.splitlines(), path.read_text().splitlines(), strict=True)
    header = before.splitlines()[0].split(",")
    judged = [header.index("threshold"), header.index("success")]
    for old_line, new_line in lines:
        spans = zip(rejudge.field_spans(old_line), rejudge.field_spans(new_line))
        for column, ((a, b), (c, d)) in enumerate(spans):
            assert column in judged or old_line[a:b] == new_line[c:d]
    # Rerun: nothing left to change.
    again = rejudge.rejudge_file(path, lambda config: new, write=False)
    assert again.thresholds_changed == 0


def test_a_row_whose_verdict_is_not_its_rule_is_refused(tmp_path):
    path = _nau_sub_rows(tmp_path)
    text = path.read_text(encoding="utf-8").replace(",True,5000.0,", ",False,5000.0,")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="its verdict is not its rule"):
        rejudge.rejudge_file(path, lambda config: 1.0, write=False)


@pytest.mark.parametrize(
    "old, new, solved, known, final, exact",
    [
        (1.0, 1.0, (5, 9), {}, True, True),  # the threshold did not move
        (1.0, 1.1, (None, None), {}, False, False),  # up: a step may be solved
        (1.0, 0.9, (None, None), {}, False, True),  # down, never solved
        (1.0, 0.9, (5, 9), {5: 0.1, 9: 0.2}, False, True),  # both known below
        (1.0, 0.9, (5, 9), {5: 0.1}, False, False),  # the last one's MSE unknown
        (1.0, 0.9, (5, 9), {5: 0.95, 9: 0.2}, False, False),  # lost at step 5
        (1.0, 0.9, (5, 9), {5: 0.1, 9: 0.2}, True, False),  # the final one unknown
    ],
)
def test_which_solved_steps_stay_exact(old, new, solved, known, final, exact):
    assert rejudge.solved_steps_exact(old, new, solved, known, final) is exact


def test_the_committed_rows_of_a_cell_hold_this_versions_threshold():
    # Ten inputs: the seed moves the two operands, and the threshold was the
    # one of the seed simulated first; now it is the configuration's.
    (cell,) = nalm.plan([10], ["nmru"], ["div"])
    config = nalm.configs_of(cell)[0]
    rows = read_results(nalm.OUT / "results.csv")
    rows = rows[rows["config_id"] == config_id(config)]
    assert len(rows) == 25
    moved = {dataclasses.replace(config, seed=s).task().subsets for s in range(25)}
    assert len(moved) > 1
    assert set(rows["threshold"]) == {config.success_threshold()}
