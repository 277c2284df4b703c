"""Piecewise: a condition (an NSR) choosing between two units."""

import keras
import numpy as np
import pytest

from keras_nalu.layers import NAU, NSR, ArithmeticCell, Piecewise
from tests.backend import to_numpy
from tests.layers import contract
from tests.layers.contract import check_keras_round_trip


def make(units=1, **kwargs):
    return Piecewise(NSR(units), NAU(units), NAU(units), **kwargs)


def test_output_is_the_condition_mixing_the_biased_branches():
    rng = np.random.default_rng(0)
    layer = make(2)
    layer.build((None, 3))
    for variable in layer.trainable_weights:
        variable.assign(rng.normal(size=variable.shape))
    x = rng.uniform(-3.0, 3.0, (5, 3)).astype("float32")
    c = contract.nsr(layer.condition, x)
    t = contract.nau(layer.if_true, x) + contract.weight(layer, "true_bias")
    f = contract.nau(layer.if_false, x) + contract.weight(layer, "false_bias")
    np.testing.assert_allclose(to_numpy(layer(x)), c * t + (1 - c) * f, rtol=1e-5)
    assert len(layer.trainable_weights) == 5 + 1 + 1 + 2


def test_without_bias_the_branches_are_the_units():
    layer = make(use_bias=False)
    layer.build((None, 2))
    assert len(layer.trainable_weights) == 5 + 1 + 1


def hand_set_nsr(nsr, first, second, sign, bias):
    """An NSR (λ = 10) with sign weight `sign`: o₁ = x[first], o₂ = x[second]."""
    columns = np.zeros((2, 1), "float32")
    one, two = columns.copy(), columns.copy()
    one[first], two[second] = 30.0, 30.0
    nsr.operand_1.assign(one)
    nsr.operand_2.assign(two)
    nsr.sign_kernel.assign([[sign]])
    nsr.zero_kernel.assign([[0.0]])
    nsr.bias.assign([bias])


def test_a_recurrent_piecewise_is_a_running_minimum():
    # Step input [x_t, h]: where h > x_t take x_t, else keep h.
    unit = Piecewise(NSR(1, scale=10.0), NAU(1), NAU(1), use_bias=False)
    cell = ArithmeticCell(unit, initial_state_value=100.0)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    rnn(np.zeros((1, 1, 1), "float32"))
    hand_set_nsr(unit.condition, first=1, second=0, sign=30.0, bias=-15.0)
    unit.if_true.kernel.assign([[1.0], [0.0]])
    unit.if_false.kernel.assign([[0.0], [1.0]])
    x = np.array([[[7.0], [9.0], [3.0], [5.0], [1.0], [4.0]]], "float32")
    y = to_numpy(rnn(x))[0, :, 0]
    np.testing.assert_allclose(y, np.minimum.accumulate(x[0, :, 0]), atol=0.05)


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ((NSR(1), NAU(2), NAU(1)), "units=1, 2 and 1"),
        (("nsr", NAU(1), NAU(1)), "condition='nsr'"),
        ((NSR(1), keras.layers.ReLU(), NAU(1)), "if_true=<ReLU"),
    ],
)
def test_bad_arguments_are_named_in_one_line(arguments, fragment):
    with pytest.raises(ValueError) as info:
        Piecewise(*arguments)
    message = str(info.value)
    assert fragment in message and "\n" not in message
    with pytest.raises(ValueError, match="use_bias=1"):
        Piecewise(NSR(1), NAU(1), NAU(1), use_bias=1)


def test_config_and_keras_round_trip(tmp_path):
    keras.utils.set_random_seed(1)
    inputs = keras.Input((3,))
    layer = make(2, name="piecewise")
    model = keras.Model(inputs, layer(inputs))
    config = layer.get_config()
    clone = Piecewise.from_config(config)
    assert clone.get_config() == config
    x = np.random.default_rng(2).uniform(-2.0, 2.0, (4, 3)).astype("float32")
    check_keras_round_trip(model, x, tmp_path)
