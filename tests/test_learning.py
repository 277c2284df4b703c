"""Small convergence runs: the units learn the arithmetic task and extrapolate.

A 10-input version of Madsen & Johansen's (2020) arithmetic task (§4.1): x ~ U[1, 2]^10
for training, U[2, 6]^10 for extrapolation, a = x0 + x1 + x2, b = x2 + x3 + x4 (two
overlapping subsets), target op(a, b). Success is Madsen & Johansen's (2020) criterion
(§4.1.1): the extrapolation MSE is below that of the nearly-perfect
solution, every right weight 1 - ε and every wrong weight ε (ε = 10⁻⁵),
measured on the same extrapolation samples.

Each run has a fixed seed and is deterministic; the chosen hyperparameters
also solve the task for most other seeds (see each test). The data are made
here with NumPy, independent of `keras_nalu.tasks`.
"""

import time

import keras
import numpy as np
import pytest

from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.layers import NAC, NAU, NMU
from tests.backend import BACKEND, to_numpy

INPUT_SIZE = 10
SUBSET_A = slice(0, 3)
SUBSET_B = slice(2, 5)
EPSILON = 1e-5
OPERATIONS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
INTERPOLATION_RANGE = (1.0, 2.0)
EXTRAPOLATION_RANGE = (2.0, 6.0)
BATCH_SIZE = 128
STEPS_PER_EPOCH = 1_000  # a fixed pool of 128 000 training samples, reshuffled
#: Keras' PyTorch trainer takes one step per execution.
STEPS_PER_EXECUTION = 1 if BACKEND == "torch" else 100

#: One eager step at a time, PyTorch takes 3.5 ms a step here against 0.5 ms
#: for TensorFlow's blocks of 100 (2-core CPU): it runs the addition (10⁴
#: steps, 35 s) and leaves the other 7·10⁴ steps (4 min) to the other backends.
long_on_pytorch = pytest.mark.skipif(
    BACKEND == "torch",
    reason="one step per execution on PyTorch: 4 min for these runs; "
    "the addition run covers PyTorch",
)


def arithmetic_data(operation, num_samples, value_range, seed):
    """x (float32) and the exact float64 target op(a, b) of that x."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(*value_range, (num_samples, INPUT_SIZE)).astype("float32")
    exact = x.astype("float64")
    a, b = exact[:, SUBSET_A].sum(axis=1), exact[:, SUBSET_B].sum(axis=1)
    return x, OPERATIONS[operation](a, b)


def nearly_perfect_prediction(operation, x, epsilon=EPSILON):
    """The ε-solution's output: right weights 1 - ε, wrong weights ε."""
    first = np.full((INPUT_SIZE, 2), epsilon)
    first[SUBSET_A, 0] = 1.0 - epsilon
    first[SUBSET_B, 1] = 1.0 - epsilon
    hidden = np.asarray(x, "float64") @ first
    if operation == "mul":  # NMU with both weights 1 - ε
        second = np.full(2, 1.0 - epsilon)
        return np.prod(hidden * second + 1.0 - second, axis=1)
    sign = 1.0 if operation == "add" else -1.0
    return hidden @ np.array([1.0 - epsilon, sign * (1.0 - epsilon)])


def mse(prediction, target):
    return float(np.mean((np.asarray(prediction, "float64").ravel() - target) ** 2))


def train(model, operation, steps, learning_rate, seed, callbacks=()):
    """Adam with a cosine decay to 10⁻⁵ of `learning_rate`, batches of 128."""
    x, t = arithmetic_data(
        operation, STEPS_PER_EPOCH * BATCH_SIZE, INTERPOLATION_RANGE, seed
    )
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, steps, alpha=1e-5)
    model.compile(
        keras.optimizers.Adam(schedule),
        "mse",
        steps_per_execution=STEPS_PER_EXECUTION,
    )
    started = time.perf_counter()
    history = model.fit(
        x,
        t[:, None].astype("float32"),
        batch_size=BATCH_SIZE,
        epochs=steps // STEPS_PER_EPOCH,
        callbacks=list(callbacks),
        verbose=0,
    )
    print(f"{steps} steps in {time.perf_counter() - started:.1f} s")
    assert int(to_numpy(model.optimizer.iterations)) == steps
    return history


def extrapolation(operation, model):
    """(extrapolation MSE, ε-threshold) on 10⁴ extrapolation samples."""
    x, t = arithmetic_data(operation, 10_000, EXTRAPOLATION_RANGE, seed=12345)
    threshold = mse(nearly_perfect_prediction(operation, x), t)
    extrapolation_mse = mse(model.predict(x, batch_size=10_000, verbose=0), t)
    print(f"extrapolation MSE {extrapolation_mse:.3e}, threshold {threshold:.3e}")
    return extrapolation_mse, threshold


def sparsity_error(weights):
    """Madsen & Johansen (2020), eq. 17: max over the weights of min(|W|, |1 - |W||)."""
    magnitude = np.abs(np.concatenate([np.ravel(w) for w in weights]))
    return float(np.max(np.minimum(magnitude, np.abs(1.0 - magnitude))))


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_success_threshold_is_small_but_not_zero(operation):
    x, t = arithmetic_data(operation, 10_000, EXTRAPOLATION_RANGE, seed=12345)
    assert 0 < mse(nearly_perfect_prediction(operation, x), t) < 1e-4
    # The same weights at ε = 0 are the exact solution.
    assert mse(nearly_perfect_prediction(operation, x, epsilon=0.0), t) < 1e-24


# Every seed tried solves + (0-8) and - (0-5) with these settings, in 10⁴ steps.
@pytest.mark.parametrize(
    "operation, seed", [("add", 0), pytest.param("sub", 1, marks=long_on_pytorch)]
)
def test_nau_nau_learns_addition_and_subtraction(operation, seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input((INPUT_SIZE,)), NAU(2), NAU(1)], name=f"nau_nau_{operation}"
    )
    schedule = RegularizationSchedule(strength=0.1, start=1_000, end=4_000)
    history = train(model, operation, 10_000, 1e-2, seed, [schedule])
    assert history.history["sparsity_strength"][-1] == pytest.approx(0.1)
    extrapolation_mse, threshold = extrapolation(operation, model)
    assert extrapolation_mse < threshold, (extrapolation_mse, threshold)
    assert sparsity_error(model.get_weights()) < 1e-4


# Every seed tried (0-8) solves × with these settings. The sparsity ramp starts
# once the MSE alone has told the two NAU columns apart; an earlier or shorter
# run (e.g. 2·10⁴ steps) leaves a third to a half of the seeds in a wrong basin.
@long_on_pytorch
def test_nau_nmu_learns_multiplication():
    seed = 0
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input((INPUT_SIZE,)), NAU(2), NMU(1)], name="nau_nmu_mul"
    )
    schedule = RegularizationSchedule(strength=1.0, start=20_000, end=30_000)
    train(model, "mul", 40_000, 1e-2, seed, [schedule])
    extrapolation_mse, threshold = extrapolation("mul", model)
    assert extrapolation_mse < threshold, (extrapolation_mse, threshold)
    assert sparsity_error(model.get_weights()) < 1e-4


# Seeds 0, 3, 4: extrapolation MSE 5e-5 to 2.2e-4, effective weights within
# 0.013 of the exact ones.
@long_on_pytorch
def test_nac_nac_learns_addition():
    seed = 0
    keras.utils.set_random_seed(seed)
    model = keras.Sequential(
        [keras.Input((INPUT_SIZE,)), NAC(2), NAC(1)], name="nac_nac_add"
    )
    train(model, "add", 20_000, 5e-2, seed)
    extrapolation_mse, threshold = extrapolation("add", model)
    # W = tanh(Ŵ)σ(M̂) reaches ±1 and 0 only in the limit, so the ε-threshold
    # is out of reach in 2·10⁴ steps; the map it learns is still a + b.
    first, second = (keras.ops.convert_to_numpy(layer.kernel) for layer in model.layers)
    effective = (first @ second).ravel()
    expected = np.zeros(INPUT_SIZE)
    expected[SUBSET_A] += 1.0
    expected[SUBSET_B] += 1.0
    np.testing.assert_allclose(effective, expected, atol=0.03)
    assert extrapolation_mse < 2e-3, extrapolation_mse
