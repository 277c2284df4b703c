"""Chunks sized to finish inside a time limit (keras_nalu.sweeps.planning)."""

import time
import types

import pandas as pd
import pytest

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps import planning
from keras_nalu.sweeps.planning import StepTimes, plan_chunk_size
from keras_nalu.sweeps.results import config_id, read_results
from keras_nalu.sweeps.runner import run_sweep

TINY = {"model": "nau", "input_size": 10, "iterations": 200, "eval_every": 100}


def test_step_times_interpolate_and_overestimate_outside():
    times = StepTimes({10: 1.0, 30: 2.0}, overhead=4.0)
    assert times.per_step(1) == 1.0  # below the smallest: the smallest's
    assert times.per_step(20) == pytest.approx(1.5)
    assert times.per_step(60) == pytest.approx(4.0)  # in proportion beyond
    assert times.seconds(20, 10) == pytest.approx(19.0)


@pytest.mark.parametrize("seconds", [10.0, 100.0, 1e3, 1e4])
def test_the_largest_size_fits_and_one_more_does_not(seconds):
    times = StepTimes({1: 0.01, 100: 0.02, 1000: 0.1}, overhead=2.0)
    size = times.largest_within(seconds, steps=1000, cap=5000)
    budget = planning.MARGIN * seconds
    if size:
        assert times.seconds(size, 1000) <= budget
    if size < 5000:
        assert times.seconds(size + 1, 1000) > budget


def test_nothing_fits_when_one_replica_does_not():
    assert StepTimes({1: 1.0}).largest_within(10.0, steps=100, cap=50) == 0


def _linear_device(fixed, per_replica, overhead=1.0):
    """A fake measurement: a step of R replicas takes fixed + per_replica·R."""
    measured = []

    def measure(config, replicas):
        measured.append(replicas)
        return fixed + per_replica * replicas, overhead

    return measure, measured


def test_the_plan_measures_then_grows_then_fits(monkeypatch):
    config = ExperimentConfig(**{**TINY, "iterations": 100_000})
    measure, measured = _linear_device(fixed=1e-4, per_replica=1e-6)
    times = StepTimes()
    # The fake device takes no time: the plan's clock stands still, so that
    # the time left is 600 s at every step of the plan, on any machine.
    monkeypatch.setattr(planning, "time", types.SimpleNamespace(monotonic=lambda: 0))
    deadline = left = 600.0  # the clock reads 0
    size = plan_chunk_size(config, deadline, 5000, times, measure, log=lambda _: None)
    # 64 first; the estimate lies far beyond it, so a larger size is measured
    assert measured[0] == planning.FIRST_MEASURED
    assert len(measured) >= 2 and measured[1] <= planning.GROWTH * measured[0]
    assert 0 < size <= 5000
    predicted = 1.0 + 100_000 * (1e-4 + 1e-6 * size)  # the fake device's truth
    assert predicted <= planning.MARGIN * left
    # the next size up would not fit on the fake device's truth (within 3 %)
    assert 1.0 + 100_000 * (1e-4 + 1e-6 * size * 1.03) > planning.MARGIN * left * 0.97


def test_known_step_times_need_no_measurement():
    config = ExperimentConfig(**TINY)
    measure, measured = _linear_device(1e-3, 0.0)
    times = StepTimes({100: 1e-3}, overhead=1.0)
    size = plan_chunk_size(
        config, time.monotonic() + 60, 150, times, measure, log=lambda _: None
    )
    assert size == 150 and measured == []


def test_step_times_are_read_from_the_rows_of_the_same_recipe_here():
    config = ExperimentConfig(**TINY)
    other = ExperimentConfig(**{**TINY, "model": "nmu", "operation": "mul"})
    rows = []
    for cfg, replicas, wall, device in [
        (config, 4, 2.0, "cpu"),
        (config, 4, 3.0, "cpu"),  # the slower chunk of a size is kept
        (config, 8, 5.0, "cpu"),
        (other, 4, 99.0, "cpu"),  # another recipe
        (config, 4, 99.0, "NVIDIA H100"),  # another device
    ]:
        row = {**cfg.to_config(), "max_iterations": cfg.iterations}
        row.update(iterations=200, wall_time=wall, replicas=replicas)
        row.update(device=device, engine="jax", config_id=config_id(cfg))
        rows.append(row)
    longer = ExperimentConfig(**{**TINY, "iterations": 5000})  # any length
    times = planning.step_times_from_results(pd.DataFrame(rows), longer, "cpu", "jax")
    assert times.per_replicas == {4: 3.0 / 200, 8: 5.0 / 200}


def test_a_chunk_predicted_to_end_after_the_limit_does_not_start(tmp_path):
    # An hour's limit: the tiny chunks predicted to take 1 s fit in what is
    # left of it on any machine.
    path = tmp_path / "results.csv"
    outcome = run_sweep(
        [ExperimentConfig(**TINY)],
        "0-1",
        path,
        progress=False,
        time_limit=3600,
        chunk_seconds=lambda chunk: 3601.0,
    )
    assert not outcome.complete and outcome.new_rows == 0
    outcome = run_sweep(
        [ExperimentConfig(**TINY)],
        "0-1",
        path,
        progress=False,
        time_limit=3600,
        chunk_seconds=lambda chunk: 1.0,
    )
    assert outcome.complete and outcome.new_rows == 2


def test_sweep_within_writes_each_finished_chunk_and_says_so(tmp_path):
    path = tmp_path / "results.csv"
    configs = [ExperimentConfig(**{**TINY, "operation": op}) for op in ("add", "sub")]
    lines = []
    # An hour: far more than the tiny runs take on any machine.
    complete = planning.sweep_within(
        configs,
        [0, 1, 2],
        path,
        time.monotonic() + 3600,
        chunk_size=4,
        log=lines.append,
    )
    assert complete
    assert sorted(read_results(path)["seed"]) == [0, 0, 1, 1, 2, 2]
    done = [line for line in lines if line.startswith("chunk done:")]
    assert done and all(str(path) in line for line in done)
    assert sum(int(line.split()[2]) for line in done) == 6
    # a second call finds nothing to do and measures nothing
    lines.clear()
    assert planning.sweep_within(
        configs, [0, 1, 2], path, time.monotonic() + 3600, log=lines.append
    )
    assert lines == []


def test_sweep_within_stops_at_once_past_the_deadline(tmp_path):
    path = tmp_path / "results.csv"
    assert not planning.sweep_within(
        [ExperimentConfig(**TINY)], [0], path, time.monotonic() - 1
    )
    assert not path.exists()
