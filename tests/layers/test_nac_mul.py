"""NAC•: y = exp(log(|x| + ε) · W), W = tanh(Ŵ) ⊙ σ(M̂) (Trask et al. 2018, eq. 3)."""

import keras
import numpy as np
import pytest

from keras_nalu.layers import NACMul
from tests.backend import float64_functions, gradients, to_numpy
from tests.layers import contract
from tests.layers.contract import run_layer_test

VARIANTS = {
    # kwargs, trainable weights, losses once built
    "default": ({}, 2, 0),
    "epsilon_1e-4": ({"epsilon": 1e-4}, 2, 0),
}


@pytest.mark.parametrize(
    "kwargs, num_weights, num_losses", list(VARIANTS.values()), ids=list(VARIANTS)
)
def test_layer_contract(kwargs, num_weights, num_losses):
    run_layer_test(
        NACMul,
        kwargs,
        reference=contract.nac_mul,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_losses,
        input_range=(-2.0, 2.0),
    )


BIG = 20.0  # tanh(20)·σ(20) is 1 in float32


def hand_set(signs, **kwargs):
    """A NAC• whose W is ±1 (sign ±1) or 0 (sign 0), by saturation."""
    signs = np.asarray(signs, "float32")
    layer = NACMul(signs.shape[1], **kwargs)
    layer.build((None, signs.shape[0]))
    layer.w_hat.assign(BIG * np.where(signs == 0, 1.0, signs))
    layer.m_hat.assign(np.where(signs == 0, -BIG, BIG))
    return layer


@pytest.mark.parametrize("epsilon", [1e-7, 1e-3])
@pytest.mark.parametrize("low, high", [(1.0, 10.0), (-10.0, 10.0), (1e-4, 1e-2)])
def test_saturated_weights_multiply_within_epsilon(epsilon, low, high):
    layer = hand_set([[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]], epsilon=epsilon)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer.kernel), [[1, 1, 1], [1, -1, 0]], atol=1e-8
    )
    x = np.random.default_rng(0).uniform(low, high, (256, 2)).astype("float32")
    magnitude = np.abs(x.astype("float64"))
    a, b = magnitude[:, 0], magnitude[:, 1]
    y = to_numpy(layer(x)).astype("float64")
    # What the unit computes: ∏ (|x| + ε)^W, to float32 precision ...
    np.testing.assert_allclose(y[:, 0], (a + epsilon) * (b + epsilon), rtol=2e-6)
    np.testing.assert_allclose(y[:, 1], (a + epsilon) / (b + epsilon), rtol=2e-6)
    np.testing.assert_allclose(y[:, 2], a + epsilon, rtol=2e-6)
    # ... which is |a·b| up to the ε terms: |y - ab| <= ε(|a| + |b| + ε).
    bound = epsilon * (a + b + epsilon) + 2e-6 * (a + epsilon) * (b + epsilon)
    assert np.all(np.abs(y[:, 0] - a * b) <= bound)


@float64_functions
def test_matches_numpy_for_random_weights():
    rng = np.random.default_rng(1)
    layer = NACMul(3, dtype="float64")
    layer.build((None, 4))
    layer.w_hat.assign(rng.normal(size=(4, 3)))
    layer.m_hat.assign(rng.normal(size=(4, 3)))
    x = rng.uniform(-3.0, 3.0, (32, 4))
    np.testing.assert_allclose(layer(x), contract.nac_mul(layer, x), rtol=1e-12)


def test_sign_is_lost():
    layer = hand_set([[1.0], [1.0]])
    y = to_numpy(layer(np.array([[-3.0, 4.0], [-3.0, -4.0]], "float32")))
    np.testing.assert_allclose(y[:, 0], [12.0, 12.0], rtol=1e-6)


def outputs_and_gradients(layer, x):
    y = to_numpy(layer(x))
    return y, gradients(lambda x: keras.ops.sum(layer(x)), layer.trainable_weights, [x])


@pytest.mark.parametrize("hand_set_weights", [False, True])
def test_finite_outputs_and_gradients_for_exact_zeros(hand_set_weights):
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.5, 0.0, -2.0]], "float32")
    if hand_set_weights:
        # Divide by an exact zero: (0 + ε)^-1 = 1e7, large but finite.
        layer = hand_set([[-1.0], [1.0], [0.0]])
    else:
        keras.utils.set_random_seed(0)
        layer = NACMul(2)
    y, grads = outputs_and_gradients(layer, x)
    assert np.all(np.isfinite(y))
    assert all(np.all(np.isfinite(g)) for g in grads)
    if hand_set_weights:
        np.testing.assert_allclose(y[:, 0], [2e7, 1.0, 1e-7 / 1.5], rtol=1e-5)


def test_mixed_float16_multiplies_in_float32(mixed_float16):
    # The product passes 65504 (float16's largest) on its way to the result.
    layer = hand_set([[1.0], [1.0], [1.0]])
    x = np.array([[300.0, 300.0, 0.001]], "float32")
    y = layer(x)
    assert keras.backend.standardize_dtype(y.dtype) == "float16"
    expected = 300.0 * 300.0 * float(np.float16(0.001))
    np.testing.assert_allclose(np.float64(y[0, 0]), expected, rtol=1e-3)


@pytest.mark.parametrize("epsilon", [0.0, -1e-7, float("nan"), float("inf"), "1e-7"])
def test_invalid_epsilon_raises(epsilon):
    with pytest.raises(ValueError, match=rf"epsilon.*Received: epsilon={epsilon!r}"):
        NACMul(2, epsilon=epsilon)


@pytest.mark.parametrize("units", [0, -1, 2.5, "3", True, None])
def test_invalid_units_raise(units):
    with pytest.raises(ValueError, match=rf"units.*Received: units={units!r}"):
        NACMul(units)


def test_rank_1_input_raises():
    with pytest.raises(ValueError, match="min_ndim=2, found ndim=1"):
        NACMul(2)(np.ones(3, "float32"))
    with pytest.raises(ValueError, match=r"NACMul expects inputs of rank >= 2"):
        NACMul(2).build((3,))
