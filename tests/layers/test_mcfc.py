"""MC-FC: y = σ(w + b) ⊙ (x · softmax(R)), and its log-space form (Hoedt et al.
2021)."""

import keras
import numpy as np
import pytest

from keras_nalu import regularizers
from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.layers import MCFC, MCFCMul
from tests.backend import gradients, to_numpy
from tests.layers import contract
from tests.layers.contract import (
    check_keras_round_trip,
    run_layer_test,
)

UNITS = {"MCFC": (MCFC, contract.mcfc, 3), "MCFCMul": (MCFCMul, contract.mcfc_mul, 4)}


@pytest.mark.parametrize("name", list(UNITS))
def test_layer_contract(name):
    cls, reference, num_weights = UNITS[name]
    run_layer_test(
        cls,
        reference=reference,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=0,
        input_range=(0.5, 2.0),
    )
    reward = regularizers.NegativeL2(1.0, start=0, end=10)
    run_layer_test(
        cls,
        {
            "junction_regularizer": reward,
            "gate_regularizer": reward,
            "gate_bias_regularizer": reward,
        },
        reference=reference,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=3,
        expected_num_schedules=1,
        input_range=(0.5, 2.0),
        run_mixed_precision_check=False,
    )


def hand_set(cls, junction, gate_kernel, gate_bias, **kwargs):
    junction = np.asarray(junction, "float32")
    layer = cls(junction.shape[1], **kwargs)
    layer.build((None, junction.shape[0]))
    layer.junction.assign(junction)
    layer.gate_kernel.assign([gate_kernel])
    layer.gate_bias.assign(gate_bias)
    return layer


def softmax_rows(logits):
    scaled = np.exp(logits - logits.max(axis=1, keepdims=True))
    return scaled / scaled.sum(axis=1, keepdims=True)


def test_numerics_match_numpy_with_hand_set_weights():
    junction = np.array([[2.0, -1.0, 0.5], [0.0, 0.0, 3.0]])
    gate_kernel, gate_bias = [0.5, -1.0, 2.0], [0.25, 0.5, -3.0]
    layer = hand_set(MCFC, junction, gate_kernel, gate_bias)
    x = np.random.default_rng(0).uniform(-3.0, 3.0, (16, 2)).astype("float32")
    gate = 1.0 / (1.0 + np.exp(-(np.add(gate_kernel, gate_bias))))
    kernel = softmax_rows(junction) * gate
    np.testing.assert_allclose(to_numpy(layer(x)), x @ kernel, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        effective_weights(layer)["kernel"], kernel, rtol=1e-6, atol=1e-7
    )
    mul = hand_set(MCFCMul, junction, gate_kernel, gate_bias)
    mul.bias.assign([0.1, -0.2, 0.0])
    positive = np.abs(x) + 0.1
    expected = np.exp(np.log(positive) @ kernel + [0.1, -0.2, 0.0])
    np.testing.assert_allclose(to_numpy(mul(positive)), expected, rtol=1e-5)


def test_mass_is_conserved_with_an_open_gate():
    junction = np.random.default_rng(1).normal(size=(5, 3))
    layer = hand_set(MCFC, junction, [30.0, 30.0, 30.0], [0.0, 0.0, 0.0])
    x = np.random.default_rng(2).uniform(0.0, 4.0, (8, 5)).astype("float32")
    y = to_numpy(layer(x))
    np.testing.assert_allclose(y.sum(axis=1), x.sum(axis=1), rtol=1e-5)
    assert np.all(y >= 0)  # non-negative mass stays non-negative: no subtraction


def test_a_selection_and_a_saturated_gate_add_and_multiply_exactly():
    big = 30.0  # softmax and sigmoid saturate to 0 and 1 in float32
    junction = [[big, -big], [big, -big], [-big, big]]
    layer = hand_set(MCFC, junction, [big, big], [0.0, 0.0])
    x = np.array([[3.0, 4.0, 5.0]], "float32")
    np.testing.assert_array_equal(to_numpy(layer(x)), [[7.0, 5.0]])
    mul = hand_set(MCFCMul, junction, [big, big], [0.0, 0.0])
    np.testing.assert_allclose(to_numpy(mul(x)), [[12.0, 5.0]], rtol=1e-6)


def test_one_output_sums_every_input_through_the_gate():
    layer = MCFC(1)
    layer.build((None, 3))
    layer.gate_kernel.assign([[0.0]])
    x = np.array([[1.0, 2.0, 3.0]], "float32")
    np.testing.assert_allclose(to_numpy(layer(x)), [[3.0]])  # σ(0)·6


def test_initialization_is_the_authors():
    square = MCFC(3)
    square.build((None, 3))
    np.testing.assert_array_equal(to_numpy(square.junction), np.eye(3))
    np.testing.assert_array_equal(to_numpy(square.gate_bias), 0.0)
    wide = MCFC(3)
    wide.build((None, 5))
    junction = to_numpy(wide.junction)  # orthogonal columns
    np.testing.assert_allclose(junction.T @ junction, np.eye(3), atol=1e-5)
    single = MCFC(1)
    single.build((None, 2))
    assert abs(float(to_numpy(single.gate_kernel)[0, 0])) == pytest.approx(1.0)
    mul = MCFCMul(2)
    mul.build((None, 2))
    np.testing.assert_array_equal(to_numpy(mul.bias), 0.0)
    assert mul.get_config()["junction_initializer"] is None


def test_the_log_space_form_takes_positive_inputs_only():
    layer = MCFCMul(1)
    y = to_numpy(layer(np.array([[-2.0, 3.0]], "float32")))
    assert np.isnan(y).all()


def test_an_input_of_zero_gives_an_exact_zero_and_finite_gradients():
    """0^k = 0 for every k > 0, so the weights' gradient there is 0, not the
    0 · log 0 = 0 · -inf = NaN of the plain formula."""
    junction = [[0.5, -1.0], [0.0, 2.0]]  # every share > 0
    layer = hand_set(MCFCMul, junction, [1.0, -0.5], [0.0, 0.0])
    layer.bias.assign([0.1, -0.2])
    x = np.array([[0.0, 3.0], [-0.0, 0.5], [2.0, 3.0]], "float32")
    np.testing.assert_array_equal(to_numpy(layer(x))[:2], 0.0)
    variables = [layer.junction, layer.gate_kernel, layer.gate_bias, layer.bias]
    by_weights = gradients(lambda x: keras.ops.sum(layer(x)), variables, [x])
    assert all(np.isfinite(grad).all() for grad in by_weights)
    np.testing.assert_array_equal(by_weights[-1][:2], 0.0)  # that input's, too
    # y is 0 for every weight near these: the rows with a 0 add nothing.
    without = gradients(lambda x: keras.ops.sum(layer(x)), variables, [x[2:]])
    for grad, grad_without in zip(by_weights[:-1], without[:-1]):
        np.testing.assert_allclose(grad, grad_without, rtol=1e-6, atol=1e-7)


def test_a_share_of_exactly_zero_leaves_a_zero_input_out():
    big = 100.0  # softmax gives exactly 0 and 1: exp(-200) underflows float32
    layer = hand_set(MCFCMul, [[big, -big], [-big, big]], [30.0, 30.0], [0.0, 0.0])
    y = to_numpy(layer(np.array([[0.0, 5.0]], "float32")))
    np.testing.assert_allclose(y, [[0.0, 5.0]], rtol=1e-6)  # 0^1, and 0^0 · 5^1


def test_a_fit_on_inputs_with_a_zero_keeps_finite_weights():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), MCFCMul(1)])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    x = np.array([[0.0, 2.0], [1.0, 2.0], [3.0, 0.5]], "float32")
    history = model.fit(x, x.prod(axis=1), epochs=2, batch_size=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert all(np.isfinite(to_numpy(w)).all() for w in model.weights)


@pytest.mark.parametrize("name", list(UNITS))
@pytest.mark.parametrize("units", [0, -1, 1.5])
def test_bad_units_are_named(name, units):
    with pytest.raises(ValueError, match=f"units={units!r}"):
        UNITS[name][0](units)


def _round_trip_model():
    inputs = keras.Input((3,))
    reward = regularizers.NegativeL2(2.0, start=0, end=5)
    outputs = keras.layers.Concatenate()(
        [
            MCFC(2, junction_regularizer=reward, name="mcfc")(inputs),
            MCFCMul(1, name="mcfc_mul")(inputs),
        ]
    )
    return keras.Model(inputs, outputs)


def _round_trip_inputs():
    return np.random.default_rng(9).uniform(0.5, 2.0, (4, 3)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    loaded = check_keras_round_trip(
        _round_trip_model(), _round_trip_inputs(), tmp_path, export=True
    )
    reward = loaded.get_layer("mcfc").junction_regularizer
    assert isinstance(reward, regularizers.NegativeL2) and reward.strength == 2.0
    assert type(loaded.get_layer("mcfc_mul")) is MCFCMul
