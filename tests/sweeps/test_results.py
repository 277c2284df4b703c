"""The results file of a sweep: its configuration ids, its lock, its rows."""

import csv
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.results import (
    RESULT_COLUMNS,
    config_id,
    read_results,
    record_row,
    results_lock,
)
from keras_nalu.sweeps.runner import ResultsAppender

ROOT = Path(__file__).resolve().parents[2]


def test_epsilon_enters_the_config_id_only_when_set():
    default = ExperimentConfig()
    assert config_id(default) == "c15431c47713f"  # the id before epsilon existed
    assert config_id(default) == config_id(ExperimentConfig(epsilon=None))
    assert config_id(default) != config_id(ExperimentConfig(epsilon=1e-8))
    with pytest.raises(ValueError, match="epsilon"):
        ExperimentConfig(epsilon=0.0)


def test_the_lock_file_is_held_during_the_sweep_and_gone_after_it(tmp_path):
    path = tmp_path / "results.csv"
    with results_lock(path):
        assert (tmp_path / "results.csv.lock").exists()
        with pytest.raises(ValueError, match="another sweep is writing"):
            with results_lock(path):
                pass
        assert (tmp_path / "results.csv.lock").exists()  # the refused one kept it
    assert not (tmp_path / "results.csv.lock").exists()


def _row(seed: int, solved_at: int | None) -> dict:
    """A results row of a run solved at `solved_at` (None: never solved)."""
    config = ExperimentConfig(model="nau", input_size=10, seed=seed)
    solved = solved_at is not None
    record = {
        "config": config.to_config(),
        "success": solved,
        "solved_at": solved_at,
        "best_step": 11000,
        "interpolation_mse": 1.5e-7,
        "extrapolation_mse": math.nan if solved else math.inf,
        "sparsity_error": 0.25 if solved else None,
        "diverged": False,
        "threshold": 1e-5,
        "evaluations": 12,
        "iterations": 12000,
        "wall_time": 3.5,
        "iterations_per_second": 3428.6,
        "replicas": 2,
        "subsets": [[0, 1], [2, 3]],
        "engine": "jax",
        "device": "cpu",
        "last_solved_at": solved_at,
        "final_success": solved,
    }
    return record_row(record)


def test_a_resumed_file_keeps_its_rows_byte_for_byte(tmp_path):
    # Rows of solved runs alone, then a chunk with a run never solved (its
    # solved_at empty): the rows written first stay as they were.
    path = tmp_path / "results.csv"
    ResultsAppender(path, None)([_row(0, 11000)])
    first = path.read_bytes()
    assert b",11000," in first and b"11000.0" not in first
    ResultsAppender(path, None)([_row(1, None), _row(2, 4000)])  # a resumed sweep
    assert path.read_bytes().startswith(first)
    # A row's text does not depend on the other rows of its file.
    alone = tmp_path / "alone.csv"
    ResultsAppender(alone, None)([_row(2, 4000)])
    last_line = alone.read_bytes().splitlines()[-1]
    assert path.read_bytes().splitlines()[-1] == last_line
    table = read_results(path)
    assert list(table["solved_at"].fillna(-1)) == [11000, -1, 4000]
    assert table["extrapolation_mse"].isna().tolist() == [True, False, True]
    assert table["final_success"].tolist() == [True, False, True]


COMMITTED_RESULTS = {
    "benchmarks/results/paper/results.csv": "current",  # '1379000.0' cells
    "benchmarks/results/table6/results.csv": "older",  # before engine, device ...
}


@pytest.mark.parametrize("name", COMMITTED_RESULTS)
def test_a_committed_file_resumed_keeps_every_cell_it_had(tmp_path, name):
    source = ROOT / name
    path = tmp_path / "results.csv"
    shutil.copy(source, path)
    before = read_results(path)
    ResultsAppender(path, None)([_row(0, 11000)])
    if COMMITTED_RESULTS[name] == "current":
        assert path.read_bytes().startswith(source.read_bytes())
    with (
        open(source, newline="", encoding="utf-8") as old,
        open(path, newline="", encoding="utf-8") as new,
    ):
        old_rows, new_rows = list(csv.DictReader(old)), list(csv.DictReader(new))
    assert list(new_rows[0]) == list(RESULT_COLUMNS)
    for was, now in zip(old_rows, new_rows, strict=False):
        assert {key: now[key] for key in was} == was
    assert len(new_rows) == len(old_rows) + 1
    had = list(old_rows[0])  # the columns the file had: read as they were
    after = read_results(path).iloc[: len(before)]
    pd.testing.assert_frame_equal(after[had], before[had])
