import numpy as np
import pytest

from keras_nalu.evaluation import (
    nearly_perfect_kernel,
    simulate_threshold,
    success_threshold,
)
from keras_nalu.tasks import ArithmeticTask

# The reference code's values for the default configuration (Madsen & Johansen 2020,
# §4.1.1).
REFERENCE = {"mul": 0.16001, "add": 1.4786e-5, "sub": 1.384e-8, "squared": 0.1595}
SAMPLES = 200_000


@pytest.mark.parametrize("operation", sorted(REFERENCE))
def test_default_threshold_within_ten_percent_of_reference(operation):
    threshold = simulate_threshold(ArithmeticTask(operation=operation), samples=SAMPLES)
    assert threshold == pytest.approx(REFERENCE[operation], rel=0.10)


@pytest.mark.parametrize("operation", ["mul", "add", "div", "root"])
def test_reference_geometry_reproduces_reference_values(operation):
    # The reference simulation's inclusive R slices: 26 inputs, overlap 13.
    reference = {**REFERENCE, "div": 4.94e-12, "root": 8.96e-9}
    task = ArithmeticTask(operation=operation, explicit_subsets=((0, 26), (13, 39)))
    assert simulate_threshold(task, samples=SAMPLES) == pytest.approx(
        reference[operation], rel=0.03
    )


def test_nearly_perfect_kernel_marks_the_subsets():
    task = ArithmeticTask(seed=3)
    kernel = nearly_perfect_kernel(task, 1e-5)
    (a0, a1), (b0, b1) = task.subsets
    assert kernel.shape == (100, 2)
    np.testing.assert_allclose(kernel[a0:a1, 0], 1 - 1e-5)
    np.testing.assert_allclose(kernel[b0:b1, 1], 1 - 1e-5)
    assert np.sum(kernel > 0.5) == 50
    assert np.all(kernel[kernel < 0.5] == 1e-5)


def test_threshold_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_NALU_CACHE_DIR", str(tmp_path))
    task = ArithmeticTask(operation="add", input_size=20)
    first = success_threshold(task, samples=20_000)
    files = list((tmp_path / "thresholds").glob("*.json"))
    assert len(files) == 1
    # A different offset (seed) has the same geometry: same cache entry.
    assert success_threshold(task.replace(seed=5), samples=20_000) == first
    assert len(list((tmp_path / "thresholds").glob("*.json"))) == 1
    # A corrupt entry is recomputed, not trusted.
    files[0].write_text("{not json")
    assert success_threshold(task, samples=20_000) == pytest.approx(first)
