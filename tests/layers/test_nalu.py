"""NALU: y = g ⊙ (x·W) + (1 - g) ⊙ exp(log(|x| + ε)·W), g = σ(x·G + b) (Trask et al.
2018)."""

import keras
import numpy as np
import pytest

from keras_nalu import initializers
from keras_nalu.layers import NALU
from tests.backend import gradients, to_numpy
from tests.layers import contract
from tests.layers.contract import run_layer_test

VARIANTS = {
    # kwargs, trainable weights, losses once built
    "default": ({}, 3, 0),
    "separate_weights": ({"separate_weights": True}, 5, 0),
    "use_gate_bias": ({"use_gate_bias": True}, 4, 0),
    "separate_weights_and_gate_bias": (
        {"separate_weights": True, "use_gate_bias": True, "epsilon": 1e-5},
        6,
        0,
    ),
}


@pytest.mark.parametrize(
    "kwargs, num_weights, num_losses", list(VARIANTS.values()), ids=list(VARIANTS)
)
def test_layer_contract(kwargs, num_weights, num_losses):
    run_layer_test(
        NALU,
        kwargs,
        reference=contract.nalu,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_losses,
    )


def test_weight_names():
    layer = NALU(2, separate_weights=True, use_gate_bias=True)
    layer.build((None, 3))
    assert sorted(w.name for w in layer.weights) == [
        "gate",
        "gate_bias",
        "m_hat",
        "mul_m_hat",
        "mul_w_hat",
        "w_hat",
    ]
    shared = NALU(2)
    shared.build((None, 3))
    assert sorted(w.name for w in shared.weights) == ["gate", "m_hat", "w_hat"]


BIG = 20.0  # tanh(20)·σ(20) is 1 in float32


def hand_set(signs, gate, gate_bias=None, mul_signs=None, **kwargs):
    """A NALU with W = `signs` (±1) by saturation and the given gate."""
    signs = np.asarray(signs, "float32")
    layer = NALU(
        signs.shape[1],
        separate_weights=mul_signs is not None,
        use_gate_bias=gate_bias is not None,
        **kwargs,
    )
    layer.build((None, signs.shape[0]))
    layer.w_hat.assign(BIG * signs)
    layer.m_hat.assign(np.full(signs.shape, BIG))
    if mul_signs is not None:
        layer.mul_w_hat.assign(BIG * np.asarray(mul_signs, "float32"))
        layer.mul_m_hat.assign(np.full(signs.shape, BIG))
    layer.gate.assign(np.broadcast_to(np.float32(gate), signs.shape))
    if gate_bias is not None:
        layer.gate_bias.assign(np.full((signs.shape[1],), gate_bias, "float32"))
    return layer


def test_saturated_gate_selects_the_additive_or_multiplicative_path():
    x = np.random.default_rng(0).uniform(1.0, 2.0, (128, 2)).astype("float32")
    kernel = np.ones((2, 1))
    additive = hand_set([[1.0], [1.0]], gate=40.0)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(additive.gate_values(x)), 1.0
    )
    np.testing.assert_allclose(to_numpy(additive(x)), x @ kernel, rtol=1e-6)
    np.testing.assert_allclose(
        to_numpy(additive(x))[:, 0], x[:, 0] + x[:, 1], rtol=1e-6
    )
    multiplicative = hand_set([[1.0], [1.0]], gate=-40.0)
    np.testing.assert_allclose(
        to_numpy(multiplicative(x)),
        contract.log_space_product(x, kernel, 1e-7),
        rtol=2e-6,
    )
    np.testing.assert_allclose(
        to_numpy(multiplicative(x))[:, 0], x[:, 0] * x[:, 1], rtol=2e-6
    )


def test_a_saturated_gate_shuts_out_a_path_that_overflows():
    x = np.array([[1e20, 1e20]], "float32")  # NAC•: exp(92) overflows
    additive = hand_set([[1.0], [1.0]], gate=40.0)
    np.testing.assert_allclose(to_numpy(additive(x)), [[2e20]], rtol=1e-6)


def test_half_open_gate_averages_the_paths():
    x = np.random.default_rng(1).uniform(1.0, 2.0, (64, 2)).astype("float32")
    y = to_numpy(hand_set([[1.0], [1.0]], gate=0.0)(x))
    a, b = x[:, 0], x[:, 1]
    np.testing.assert_allclose(y[:, 0], 0.5 * (a + b) + 0.5 * a * b, rtol=2e-6)


@pytest.mark.parametrize("bias, expected", [(40.0, "sum"), (-40.0, "quotient")])
def test_separate_weights_and_gate_bias_select_their_own_path(bias, expected):
    # Add path W = [1, 1], mul path W = [1, -1]; the bias alone saturates the
    # gate, whatever the sign of the inputs.
    x = np.random.default_rng(2).uniform(-3.0, 3.0, (128, 2)).astype("float32")
    x = x[np.abs(x).min(axis=1) > 0.1]
    layer = hand_set(
        [[1.0], [1.0]], gate=0.0, gate_bias=bias, mul_signs=[[1.0], [-1.0]]
    )
    y = to_numpy(layer(x))[:, 0]
    a, b = x[:, 0], x[:, 1]
    if expected == "sum":
        np.testing.assert_allclose(y, a + b, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(y, np.abs(a / b), rtol=2e-6)


def outputs_and_gradients(layer, x):
    y = to_numpy(layer(x))
    return y, gradients(lambda x: keras.ops.sum(layer(x)), layer.trainable_weights, [x])


@pytest.mark.parametrize(
    "kwargs", [kwargs for kwargs, _, _ in VARIANTS.values()], ids=list(VARIANTS)
)
def test_finite_outputs_and_gradients_for_exact_zeros(kwargs):
    keras.utils.set_random_seed(0)
    layer = NALU(2, **kwargs)
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.5, 0.0, -2.0]], "float32")
    y, grads = outputs_and_gradients(layer, x)
    assert np.all(np.isfinite(y))
    assert all(np.all(np.isfinite(g)) for g in grads)


def test_finite_when_the_multiplicative_path_divides_by_zero():
    layer = hand_set([[1.0], [-1.0]], gate=-40.0)  # a / b with b = 0
    y, grads = outputs_and_gradients(layer, np.array([[2.0, 0.0]], "float32"))
    np.testing.assert_allclose(y, [[2e7]], rtol=1e-5)
    assert all(np.all(np.isfinite(g)) for g in grads)


def test_mixed_float16_multiplies_in_float32(mixed_float16):
    # The multiplicative path's product passes 65504 (float16's largest).
    layer = hand_set([[1.0], [1.0], [1.0]], gate=-40.0)
    x = np.array([[300.0, 300.0, 0.001]], "float32")
    y = layer(x)
    assert keras.backend.standardize_dtype(y.dtype) == "float16"
    expected = 300.0 * 300.0 * float(np.float16(0.001))
    np.testing.assert_allclose(np.float64(y[0, 0]), expected, rtol=1e-3)


@pytest.mark.parametrize(
    "initializer",
    ["nac_uniform", initializers.NACUniform(seed=3)],
    ids=["unseeded", "int_seed"],
)
def test_separate_weights_are_independent_draws(initializer):
    layer = NALU(4, separate_weights=True, kernel_initializer=initializer)
    layer.build((None, 6))
    draws = [layer.w_hat, layer.m_hat, layer.mul_w_hat, layer.mul_m_hat]
    values = [to_numpy(w) for w in draws]
    for i, first in enumerate(values):
        for second in values[i + 1 :]:
            assert not np.any(np.isclose(first, second))


@pytest.mark.parametrize("epsilon", [0.0, -1e-7, float("nan"), float("inf"), "1e-7"])
def test_invalid_epsilon_raises(epsilon):
    with pytest.raises(ValueError, match=rf"epsilon.*Received: epsilon={epsilon!r}"):
        NALU(2, epsilon=epsilon)


@pytest.mark.parametrize("units", [0, -1, 2.5, "3", True, None])
def test_invalid_units_raise(units):
    with pytest.raises(ValueError, match=rf"units.*Received: units={units!r}"):
        NALU(units)


def test_rank_1_input_raises():
    with pytest.raises(ValueError, match="min_ndim=2, found ndim=1"):
        NALU(2)(np.ones(3, "float32"))
    with pytest.raises(ValueError, match=r"NALU expects inputs of rank >= 2"):
        NALU(2).build((3,))
