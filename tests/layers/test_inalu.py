"""The iNALU (a NALU course report, Schlör et al. 2020): paths, sign, gate,
regularizer."""

import itertools

import keras
import numpy as np
import pytest

from keras_nalu import regularizers
from keras_nalu.callbacks import LossGatedRegularization
from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.explain import UnsupportedLayerError, explain
from keras_nalu.layers import iNALU
from keras_nalu.layers.inalu import inalu_product
from tests.backend import FLOAT_DTYPES_FUNCTIONS, to_numpy
from tests.layers import contract
from tests.layers.contract import (
    check_keras_round_trip,
    run_layer_test,
)

SATURATED = 30.0  # tanh(30)·σ(30) == 1 in float32 and float64 to 1e-13


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_inalu(x, w_hat, m_hat, mul_w_hat, mul_m_hat, gate, eps=1e-7, omega=20.0):
    w_add = np.tanh(w_hat) * sigmoid(m_hat)
    w_mul = np.tanh(mul_w_hat) * sigmoid(mul_m_hat)
    magnitude = np.exp(np.minimum(np.log(np.maximum(np.abs(x), eps)) @ w_mul, omega))
    factors = np.sign(x)[:, :, None] * np.abs(w_mul) + 1.0 - np.abs(w_mul)
    sign = np.clip(np.prod(factors, axis=1), -1.0, 1.0)
    g = sigmoid(gate)
    return g * (x @ w_add) + (1.0 - g) * magnitude * sign


def test_layer_contract():
    run_layer_test(
        iNALU,
        reference=contract.inalu,
        expected_num_trainable_weights=5,
        expected_num_losses=5,
        expected_num_schedules=1,  # one Saturation on every parameter
        input_range=(-2.0, 2.0),
    )
    layer = iNALU(2)
    layer.build((None, 3))
    assert [w.name for w in layer.weights] == [
        "w_hat",
        "m_hat",
        "mul_w_hat",
        "mul_m_hat",
        "gate",
    ]
    assert tuple(layer.gate.shape) == (2,)  # input-independent


def test_authors_initialization():
    keras.utils.set_random_seed(0)
    layer = iNALU(50)
    layer.build((None, 200))
    for name, mean in [("w_hat", 1.0), ("m_hat", -1.0), ("mul_w_hat", 1.0)]:
        values = to_numpy(getattr(layer, name))
        assert values.mean() == pytest.approx(mean, abs=0.01), name
        assert values.std() == pytest.approx(0.1, rel=0.05), name
    assert not np.allclose(to_numpy(layer.w_hat), to_numpy(layer.mul_w_hat))
    assert to_numpy(layer.gate).std() < 0.3


def test_one_integer_seed_still_gives_four_different_draws():
    layer = iNALU(
        2,
        w_hat_initializer=keras.initializers.RandomNormal(1.0, 0.1, seed=3),
        m_hat_initializer=keras.initializers.RandomNormal(-1.0, 0.1, seed=3),
    )
    layer.build((None, 4))
    noise = [
        to_numpy(layer.w_hat) - 1.0,
        to_numpy(layer.m_hat) + 1.0,
        to_numpy(layer.mul_w_hat) - 1.0,
        to_numpy(layer.mul_m_hat) + 1.0,
    ]
    for a, b in itertools.combinations(noise, 2):
        assert not np.allclose(a, b)
    again = iNALU(2, **{k: v for k, v in layer.get_config().items() if "init" in k})
    again.build((None, 4))
    np.testing.assert_array_equal(to_numpy(again.mul_m_hat), to_numpy(layer.mul_m_hat))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES_FUNCTIONS)
def test_numerics_match_numpy(dtype):
    rng = np.random.default_rng(6)
    weights = [rng.normal(0.0, 1.5, (3, 2)) for _ in range(4)]
    gate = rng.normal(size=2)
    x = rng.uniform(-3.0, 3.0, (6, 3))
    x[0, 1] = 0.0  # the sign of 0 is 0; the log sees ε
    layer = iNALU(2, dtype=dtype)
    layer.build((None, 3))
    for variable, value in zip(layer.weights, [*weights, gate]):
        _ = variable.assign(value)
    y = layer(x.astype(dtype))
    assert keras.backend.standardize_dtype(y.dtype) == dtype
    expected = numpy_inalu(x, *weights, gate)
    np.testing.assert_allclose(
        to_numpy(y), expected, rtol=1e-5 if dtype == "float32" else 1e-12
    )


@pytest.mark.parametrize("num_inputs", [2, 3])
def test_sign_correction_gives_the_sign_of_every_product(num_inputs):
    """W_m = 1 on the selected inputs, 0 on one extra, negative, ignored input."""
    patterns = np.array(list(itertools.product([-1.0, 1.0], repeat=num_inputs)))
    magnitudes = np.arange(2.0, 2.0 + num_inputs)
    selected = patterns * magnitudes
    ignored = np.full((len(patterns), 1), -7.0)
    x = np.concatenate([selected, ignored], axis=1).astype("float32")
    kernel = np.array([[1.0]] * num_inputs + [[0.0]], "float32")
    y = inalu_product(x, kernel, 1e-7, 20.0)
    np.testing.assert_allclose(y[:, 0], np.prod(selected, axis=1), rtol=1e-5)
    # and through the layer, with saturated weights and the gate closed
    layer = iNALU(1)
    layer.build((None, num_inputs + 1))
    w_hat = np.where(kernel > 0, SATURATED, -SATURATED)
    _ = layer.mul_w_hat.assign(w_hat)
    _ = layer.mul_m_hat.assign(w_hat)
    _ = layer.gate.assign([-SATURATED])
    np.testing.assert_allclose(
        to_numpy(layer(x))[:, 0], np.prod(selected, axis=1), rtol=1e-5
    )


def test_omega_caps_the_log_space_sum():
    x = np.full((1, 2), 1e6, "float32")  # log-space sum 2·log(1e6) ≈ 27.6 > 20
    kernel = np.ones((2, 1), "float32")
    y = inalu_product(x, kernel, 1e-7, 20.0)
    np.testing.assert_allclose(y, [[np.exp(20.0)]], rtol=1e-5)
    assert np.isfinite(
        inalu_product(np.full((1, 2), 1e30, "float32"), kernel, 1e-7, 20)
    )


def test_default_regularizer_is_the_authors_and_loss_gated():
    layer = iNALU(1)
    reg = layer.kernel_regularizer
    assert reg is layer.gate_regularizer  # one strength for the whole unit
    assert isinstance(reg, regularizers.Saturation)
    assert (reg.strength, reg.threshold, reg.loss_threshold, reg.warmup_epochs) == (
        0.05,
        20.0,
        1.0,
        10,
    )
    w = np.array([[0.0], [25.0], [-19.0]], "float32")
    assert float(reg.penalty(w)) == pytest.approx((20.0 + 0.0 + 1.0) / 3)
    assert float(reg(w)) == 0.0  # off until the callback switches it on
    reg.set_enabled(True)
    assert float(reg(w)) == pytest.approx(0.05 * 7.0)


def _switch_model():
    model = keras.Sequential([keras.Input((2,)), iNALU(1)])
    model.compile("adam", "mse", metrics=["mse"], jit_compile=False)
    switch = LossGatedRegularization(monitor="mse")
    switch.set_model(model)
    switch.on_train_begin()
    return model, switch, model.layers[0].kernel_regularizer


def test_loss_gate_waits_for_warmup_and_a_low_loss():
    model, switch, reg = _switch_model()
    x = np.ones((1, 2), "float32")
    for epoch in range(9):  # warm-up: off even at a low loss
        logs = {"mse": 0.5}
        switch.on_epoch_end(epoch, logs)
        assert not reg.enabled and logs["saturation_strength"] == 0.0
    logs = {"mse": 0.5}
    switch.on_epoch_end(9, logs)  # 10 epochs done, loss < 1: on
    assert reg.enabled and logs["saturation_strength"] == 0.05
    model(x)
    assert sum(float(to_numpy(loss)) for loss in model.losses) > 0.0
    switch.on_epoch_end(10, {"mse": 3.0})  # loss back above 1: off
    assert not reg.enabled
    model(x)
    assert sum(float(to_numpy(loss)) for loss in model.losses) == 0.0


def test_loss_gate_reaches_the_traced_training_step():
    model, switch, reg = _switch_model()
    x, y = np.ones((4, 2), "float32"), np.ones((4, 1), "float32")
    off = model.evaluate(x, y, verbose=0, return_dict=True)
    reg.set_enabled(True)
    on = model.evaluate(x, y, verbose=0, return_dict=True)
    assert on["mse"] == pytest.approx(off["mse"])
    assert on["loss"] > off["loss"] + 1.0  # 0.05·Σ mean(20 - |p|) over 5 tensors


def test_loss_gate_names_a_missing_monitor():
    _, switch, _ = _switch_model()
    with pytest.raises(ValueError, match="'mse'"):
        switch.on_epoch_end(0, {"loss": 0.5})


def test_effective_weights_are_the_two_paths_and_explain_rejects_it():
    model = keras.Sequential([keras.Input((2,)), iNALU(1)])
    weights = effective_weights(model.layers[0])
    assert sorted(weights) == ["kernel", "mul_kernel"]
    with pytest.raises(UnsupportedLayerError, match="iNALU"):
        explain(model)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"units": 0}, "units"), ({"epsilon": -1.0}, "epsilon"), ({"omega": 0}, "omega")],
)
def test_constructor_validation_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=f"{name}="):
        iNALU(**{"units": 1, **kwargs})


def _round_trip_model():
    return keras.Sequential([keras.Input((3,)), iNALU(2, name="inalu")])


def _round_trip_inputs():
    return np.random.default_rng(7).uniform(-2.0, 2.0, (4, 3)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    loaded = check_keras_round_trip(
        _round_trip_model(), _round_trip_inputs(), tmp_path, export=True
    )
    reg = loaded.get_layer("inalu").kernel_regularizer
    assert isinstance(reg, regularizers.Saturation) and reg.loss_threshold == 1.0
