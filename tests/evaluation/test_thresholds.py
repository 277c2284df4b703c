import numpy as np
import pytest

from keras_nalu.evaluation import (
    nearly_perfect_kernel,
    simulate_threshold,
    single_module_threshold,
    success_threshold,
)
from keras_nalu.evaluation.thresholds import simulate_single_module_threshold
from keras_nalu.tasks import ArithmeticTask
from keras_nalu.tasks.nalm import single_module_task
from tests import route_without_tensorflow as route
from tests.backend import requires_tensorflow

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


# --- the single-module threshold (Mistry et al.'s benchmark, ε = 10⁻⁴) -----------

# E over a, b ~ U[2, 6]: E[x] = 4, E[x²] = 52/3, E[1/x²] = 1/12.
_SQUARE, _INVERSE_SQUARE = 52.0 / 3.0, 1.0 / 12.0
_EPS = 1e-4
SINGLE_MODULE = {
    # (operation, inputs): the closed form of the simulated MSE on U[2, 6]
    ("add", 2): _EPS**2 * (2 * _SQUARE + 2 * 16.0),
    ("sub", 2): _EPS**2 * (2 * _SQUARE + 2 * 16.0),
    ("mul", 2): ((1 - _EPS) ** 2 - 1) ** 2 * _SQUARE**2,
    ("div", 2): ((1 - _EPS) / (1 + _EPS) - 1) ** 2 * _SQUARE * _INVERSE_SQUARE,
    # Σ of 10 inputs: variance 10·4/3 around 40.
    ("add", 10): _EPS**2 * (40.0**2 + 10 * 4.0 / 3.0),
}


@pytest.mark.parametrize("operation, inputs", list(SINGLE_MODULE))
def test_single_module_threshold_matches_its_closed_form(operation, inputs):
    task = single_module_task(operation, inputs, "U[1,2]", "U[2,6]", seed=4)
    simulated = simulate_single_module_threshold(task, samples=SAMPLES)
    assert simulated == pytest.approx(SINGLE_MODULE[operation, inputs], rel=0.02)


def test_single_module_threshold_of_ten_inputs_counts_the_distractors():
    two = single_module_task("mul", 2, "U[1,2]", "U[2,6]")
    ten = single_module_task("mul", 10, "U[1,2]", "U[2,6]")
    # ×: a·b·((1 - ε)²∏(1 - ε|x_j|) - 1) ≈ -ε(2 + Σ_j |x_j|)·a·b, 8 distractors
    expected = _EPS**2 * (34.0**2 + 8 * 4.0 / 3.0) * _SQUARE**2
    assert simulate_single_module_threshold(ten, samples=SAMPLES) == pytest.approx(
        expected, rel=0.03
    )
    assert simulate_single_module_threshold(two, samples=SAMPLES) < expected / 100


def test_single_module_threshold_refuses_other_tasks_in_one_line():
    with pytest.raises(ValueError) as info:
        single_module_threshold(ArithmeticTask("mul"))
    message = str(info.value)
    assert "subsets=((" in message and "two one-input subsets" in message
    assert "\n" not in message
    with pytest.raises(ValueError, match="operation='squared'"):
        single_module_threshold(single_module_task("squared", 2))


def test_single_module_and_two_layer_thresholds_are_cached_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_NALU_CACHE_DIR", str(tmp_path))
    task = single_module_task("add", 2, "U[1,2]", "U[2,6]")
    single = single_module_threshold(task, samples=20_000)
    two_layer = success_threshold(task, samples=20_000)
    # The two-layer W^ε adds one input exactly: float64 rounding is all it measures.
    assert two_layer < 1e-25 and single > 1e-7
    assert len(list((tmp_path / "thresholds").glob("*.json"))) == 2
    assert single_module_threshold(task, samples=20_000) == single


def _tensorflow_drawn(task, rule):
    """The threshold with the inputs drawn by TensorFlow's sampler (`sample`)."""
    from keras_nalu.evaluation import thresholds

    simulate = {
        "two_layer": thresholds.simulate_threshold,
        "single_module": thresholds.simulate_single_module_threshold,
    }[rule]

    class TensorFlowDrawn:
        def __getattr__(self, name):
            return getattr(task, name)

        def sample_numpy(self, n, which, seed):
            x, t = task.sample(n, which, seed)
            return np.asarray(x), np.asarray(t)

    return simulate(TensorFlowDrawn())


@requires_tensorflow
@pytest.mark.parametrize(
    "task, rule",
    [
        (route.sub_task(), "two_layer"),
        (ArithmeticTask(operation="mul", input_size=30), "two_layer"),
        (
            ArithmeticTask(
                operation="div",
                interpolation_range="U[-2,-1]",
                extrapolation_range="U[-6,-2]",
            ),
            "two_layer",
        ),
        (single_module_task("div", input_size=10), "single_module"),
    ],
    ids=["sub-20-inputs", "mul-30-inputs", "div-negative", "single-module-div"],
)
def test_the_numpy_draw_gives_the_tensorflow_drawn_threshold(task, rule):
    """Thresholds are simulated without TensorFlow since this package's NumPy
    sampler draws TensorFlow's numbers: the two estimates from 10⁶ draws agree
    to float64 rounding (1e-12 relative), far inside their simulation error
    (about 10⁻³ of the threshold)."""
    from keras_nalu.evaluation import thresholds

    simulate = {
        "two_layer": thresholds.simulate_threshold,
        "single_module": thresholds.simulate_single_module_threshold,
    }[rule]
    numpy_drawn = simulate(task)
    tensorflow_drawn = _tensorflow_drawn(task, rule)
    assert numpy_drawn == pytest.approx(tensorflow_drawn, rel=1e-12)


@requires_tensorflow
def test_the_route_without_tensorflow_checks_the_tensorflow_drawn_value():
    # tests/route_without_tensorflow.py compares its rows with these numbers.
    task = route.sub_task()
    threshold = _tensorflow_drawn(task, "two_layer")
    assert threshold == pytest.approx(route.SUB_THRESHOLD, rel=1e-12)
    exact, near = nearly_perfect_kernel(task, 0.0), nearly_perfect_kernel(task, 1e-5)
    squares = []
    for chunk in range(10):
        x, _ = task.sample(100_000, "extrapolation", (2_020, chunk))
        x = np.asarray(x, np.float64)
        error = (x @ near - x @ exact) @ np.array([1.0, -1.0])
        squares.append(error**2)
    squares = np.concatenate(squares)
    assert squares.mean() == pytest.approx(threshold, rel=1e-9)
    standard_error = squares.std() / np.sqrt(squares.size)
    assert standard_error == pytest.approx(route.SUB_STANDARD_ERROR, rel=0.05)
