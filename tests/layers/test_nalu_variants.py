"""NALU variants: input-independent gate and one gate per path."""

import keras
import numpy as np
import pytest

from keras_nalu.explain import UnsupportedLayerError, explain
from keras_nalu.layers import NALU
from tests.backend import FLOAT_DTYPES_FUNCTIONS, to_numpy
from tests.layers import contract
from tests.layers.contract import (
    check_keras_round_trip,
    run_layer_test,
)

VARIANTS = {
    "constant": ({"gate_type": "constant"}, 3),
    "two_gates": ({"two_gates": True}, 4),
    "two_gates_bias": ({"two_gates": True, "use_gate_bias": True}, 6),
    "constant_two_gates_separate": (
        {"gate_type": "constant", "two_gates": True, "separate_weights": True},
        6,
    ),
}


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def nac(w_hat, m_hat):
    return np.tanh(w_hat) * sigmoid(m_hat)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_layer_contract(variant):
    kwargs, num_weights = VARIANTS[variant]
    run_layer_test(
        NALU,
        kwargs,
        reference=contract.nalu,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=0,
        # XLA once, for the variant that has every new weight.
        run_jit_compile_check=variant == "constant_two_gates_separate",
    )


def test_default_weights_are_unchanged():
    layer = NALU(2)
    layer.build((None, 3))
    assert [w.name for w in layer.weights] == ["w_hat", "m_hat", "gate"]
    assert layer.get_config()["gate_type"] == "input"
    assert layer.get_config()["two_gates"] is False


@pytest.mark.parametrize("dtype", FLOAT_DTYPES_FUNCTIONS)
def test_constant_gate_numerics(dtype):
    rng = np.random.default_rng(14)
    w_hat, m_hat = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    gate = np.array([0.7, -1.2])
    x = rng.uniform(0.5, 2.0, (5, 3))
    layer = NALU(2, gate_type="constant", dtype=dtype)
    layer.build((None, 3))
    for variable, value in zip(layer.weights, [w_hat, m_hat, gate]):
        _ = variable.assign(value)
    w = nac(w_hat, m_hat)
    g = sigmoid(gate)
    expected = g * (x @ w) + (1 - g) * np.exp(np.log(np.abs(x) + 1e-7) @ w)
    y = layer(x.astype(dtype))
    assert keras.backend.standardize_dtype(y.dtype) == dtype
    np.testing.assert_allclose(
        to_numpy(y), expected, rtol=1e-5 if dtype == "float32" else 1e-12
    )
    np.testing.assert_allclose(
        to_numpy(layer.gate_values(x.astype(dtype))), np.tile(g, (5, 1))
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES_FUNCTIONS)
def test_two_gates_numerics(dtype):
    rng = np.random.default_rng(15)
    w_hat, m_hat = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    gate, mul_gate = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    bias, mul_bias = rng.normal(size=2), rng.normal(size=2)
    x = rng.uniform(0.5, 2.0, (5, 3))
    layer = NALU(2, two_gates=True, use_gate_bias=True, dtype=dtype)
    layer.build((None, 3))
    values = [w_hat, m_hat, gate, bias, mul_gate, mul_bias]
    for variable, value in zip(layer.weights, values):
        _ = variable.assign(value)
    w = nac(w_hat, m_hat)
    g_add, g_mul = sigmoid(x @ gate + bias), sigmoid(x @ mul_gate + mul_bias)
    expected = g_add * (x @ w) + g_mul * np.exp(np.log(np.abs(x) + 1e-7) @ w)
    y = layer(x.astype(dtype))
    np.testing.assert_allclose(
        to_numpy(y), expected, rtol=1e-5 if dtype == "float32" else 1e-12
    )
    # the two gates are free: both open gives a + m
    both_open = NALU(1, two_gates=True, gate_type="constant")
    both_open.build((None, 2))
    _ = both_open.w_hat.assign([[30.0], [30.0]])
    _ = both_open.m_hat.assign([[30.0], [30.0]])
    _ = both_open.gate.assign([30.0])
    _ = both_open.mul_gate.assign([30.0])
    np.testing.assert_allclose(
        to_numpy(both_open(np.array([[2.0, 3.0]]))), [[5.0 + 6.0]]
    )


def test_seeded_gate_initializer_gives_two_different_gates():
    layer = NALU(
        2, two_gates=True, gate_initializer=keras.initializers.GlorotUniform(7)
    )
    layer.build((None, 3))
    assert not np.allclose(to_numpy(layer.gate), to_numpy(layer.mul_gate))


def test_bias_needs_an_input_gate():
    with pytest.raises(ValueError, match="use_gate_bias=True"):
        NALU(1, gate_type="constant", use_gate_bias=True)
    with pytest.raises(ValueError, match="gate_type="):
        NALU(1, gate_type="matrix")


def test_explain_reads_a_constant_gate_and_rejects_two_gates():
    model = keras.Sequential([keras.Input((2,)), NALU(1, gate_type="constant")])
    layer = model.layers[0]
    _ = layer.w_hat.assign([[30.0], [30.0]])
    _ = layer.m_hat.assign([[30.0], [30.0]])
    _ = layer.gate.assign([-30.0])  # input-independent: known without inputs
    assert str(explain(model)) == "y = x0 * x1"
    _ = layer.gate.assign([30.0])
    assert str(explain(model)) == "y = x0 + x1"
    two = keras.Sequential([keras.Input((2,)), NALU(1, two_gates=True)])
    with pytest.raises(UnsupportedLayerError, match="two independent gates"):
        explain(two)


def _round_trip_model():
    inputs = keras.Input((3,))
    outputs = keras.layers.Concatenate()(
        [NALU(2, name=name, **kwargs)(inputs) for name, (kwargs, _) in VARIANTS.items()]
    )
    return keras.Model(inputs, outputs)


def _round_trip_inputs():
    return np.random.default_rng(16).uniform(1.0, 2.0, (4, 3)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    loaded = check_keras_round_trip(
        _round_trip_model(), _round_trip_inputs(), tmp_path, export=True
    )
    assert loaded.get_layer("constant").gate_type == "constant"
    assert loaded.get_layer("two_gates").two_gates
