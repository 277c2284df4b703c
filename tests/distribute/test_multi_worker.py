"""NAU → NMU under `MultiWorkerMirroredStrategy`: two workers on 127.0.0.1.

Each worker is a fresh process (`_worker.py`, started by `conftest.py` on free
loopback ports) with its own `TF_CONFIG`. They train every config of the
recipe and must end with the same weights, schedule and evaluations as each
other and as one device here.
"""

import numpy as np
import pytest

from tests.distribute import _worker


@pytest.fixture(scope="module")
def workers(distributed_runs):
    names = [f"worker_{index}" for index in range(_worker.WORKERS)]
    for name in names:
        distributed_runs.wait(name)
    return [_worker.load_result(distributed_runs.out_dir / f"{n}.npz") for n in names]


@pytest.mark.parametrize("config", sorted(_worker.CONFIGS))
def test_workers_agree_and_match_one_device(workers, config):
    first, second = (results[config] for results in workers)
    reference = _worker.reference(config)
    assert int(first["iterations"]) == int(second["iterations"]) == _worker.STEPS
    for got, other, want in zip(
        first["weights"], second["weights"], reference["weights"]
    ):
        np.testing.assert_array_equal(got, other)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("config", sorted(_worker.CONFIGS))
def test_workers_hold_the_same_schedule_and_evaluations(workers, config):
    first, second = (results[config] for results in workers)
    reference = _worker.reference(config)
    for result in (first, second):
        assert result["strength_types"] == ["MirroredVariable"] * 2
        np.testing.assert_allclose(
            result["strengths"][..., 0], reference["strengths"][..., 0], rtol=1e-6
        )
        np.testing.assert_allclose(
            result["evaluations"], reference["evaluations"], rtol=1e-5
        )
    np.testing.assert_array_equal(first["evaluations"], second["evaluations"])
