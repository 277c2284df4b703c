"""DMU: a gate between x0 ± x1 and x0·x1^±1 (Curry 2025, the author's code)."""

import itertools
import types

import keras
import numpy as np
import pytest

from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.layers import DMU
from tests.backend import (
    FLOAT_DTYPES_FUNCTIONS,
    float64_functions,
    gradients,
    steps_per_execution,
    to_numpy,
)
from tests.layers import contract
from tests.layers.contract import check_keras_round_trip, run_layer_test

VARIANTS = {
    # kwargs; four trainable weights (γ, β, W, b), no losses
    "dmu_add": {"initialization": "add"},
    "dmu_sub_soft_gate_at_inference": {"initialization": "sub", "discretize": False},
}


@pytest.mark.parametrize("kwargs", list(VARIANTS.values()), ids=list(VARIANTS))
def test_layer_contract(kwargs):
    run_layer_test(
        DMU,
        kwargs,
        reference=contract.dmu,
        expected_num_trainable_weights=4,
        expected_num_losses=0,
        input_range=(-2.0, 2.0),
    )


def test_defaults_are_the_authors():
    layer = DMU(2)
    layer.build((None, 3))
    assert layer.initialization == "add" and layer.discretize
    assert isinstance(layer.gate_initializer, keras.initializers.GlorotUniform)
    assert isinstance(layer.gate_bias_initializer, keras.initializers.Zeros)
    assert tuple(layer.gate_kernel.shape) == (3, 4)  # linear logits, then log
    np.testing.assert_array_equal(to_numpy(layer.norm_scale), np.ones(3))
    np.testing.assert_array_equal(to_numpy(layer.norm_offset), np.zeros(3))


def hand_set(initialization, domain, dtype="float32", discretize=True):
    """A DMU whose gate prefers `domain` ("linear" or "log") by 4 logits."""
    layer = DMU(1, initialization=initialization, discretize=discretize, dtype=dtype)
    layer.build((None, 2))
    layer.gate_kernel.assign(np.zeros((2, 2)))
    layer.gate_bias.assign([4.0, 0.0] if domain == "linear" else [0.0, 4.0])
    return layer


def every_sign(magnitudes):
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=2)))
    return (signs * magnitudes).astype("float32")


@pytest.mark.parametrize(
    "initialization, domain, operation",
    [
        ("add", "linear", np.add),
        ("add", "log", np.multiply),
        ("sub", "linear", np.subtract),
        ("sub", "log", np.divide),
    ],
)
def test_computes_each_operation_exactly_at_inference(
    initialization, domain, operation
):
    x = every_sign([3.0, 4.0])
    y = to_numpy(hand_set(initialization, domain)(x))[:, 0]
    np.testing.assert_allclose(y, operation(x[:, 0], x[:, 1]), rtol=1e-5)
    # Far outside any training range too: the gate is one-hot.
    big = every_sign([3e4, 2e3])
    y = to_numpy(hand_set(initialization, domain)(big))[:, 0]
    np.testing.assert_allclose(y, operation(big[:, 0], big[:, 1]), rtol=1e-5)


def test_training_mixes_both_domains_with_the_soft_gate():
    x = np.array([[3.0, 4.0]], "float32")
    layer = hand_set("add", "linear")
    g = 1.0 / (1.0 + np.exp(-4.0))  # softmax of (4, 0)
    training = to_numpy(layer(x, training=True))[0, 0]
    assert training == pytest.approx(g * 7.0 + (1.0 - g) * 12.0, rel=1e-5)
    soft = hand_set("add", "linear", discretize=False)
    assert to_numpy(soft(x))[0, 0] == pytest.approx(training, rel=1e-6)
    assert to_numpy(layer(x))[0, 0] == pytest.approx(7.0, rel=1e-6)


def test_training_limits_the_magnitude_inference_does_not():
    x = np.array([[1e4, 1e4]], "float32")  # x0·x1 = 10⁸
    layer = hand_set("add", "log")
    assert to_numpy(layer(x))[0, 0] == pytest.approx(1e8, rel=1e-5)
    assert to_numpy(layer(x, training=True))[0, 0] <= 1e6


def test_a_zero_divisor_stays_finite():
    layer = hand_set("sub", "log")
    x = np.array([[2.0, 0.0]], "float32")
    assert np.isfinite(to_numpy(layer(x, training=True))).all()
    assert np.isfinite(to_numpy(layer(x))).all()


@float64_functions
@pytest.mark.float64
@pytest.mark.parametrize("initialization", ["add", "sub"])
def test_training_output_matches_the_formula(initialization):
    rng = np.random.default_rng(3)
    layer = DMU(2, initialization=initialization, dtype="float64")
    layer.build((None, 3))
    for variable in layer.trainable_weights:
        variable.assign(rng.normal(size=variable.shape))
    x = rng.uniform(-30.0, 30.0, (16, 3))
    np.testing.assert_allclose(
        to_numpy(layer(x, training=True)),
        contract.dmu_formula(layer, x, training=True),
        rtol=1e-12,
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES_FUNCTIONS)
def test_gradients_match_finite_differences_of_the_formula(dtype):
    rng = np.random.default_rng(5)
    layer = DMU(2, initialization="sub", dtype=dtype)
    layer.build((None, 3))
    for variable in layer.trainable_weights:
        variable.assign(rng.normal(size=variable.shape))
    x = rng.uniform(-3.0, 3.0, (8, 3)).astype(dtype)
    x[np.abs(x) < 0.3] = 0.7
    upstream = rng.normal(size=(8, 2)).astype(dtype)
    grads = gradients(
        lambda: keras.ops.sum(keras.ops.multiply(layer(x, training=True), upstream)),
        layer.trainable_weights,
    )
    # The formula in float64, each weight moved by ±step in turn.
    names = ["norm_scale", "norm_offset", "gate_kernel", "gate_bias"]
    assert [w.path.split("/")[-1] for w in layer.trainable_weights] == names
    weights = {name: contract.weight(layer, name) for name in names}
    step = 1e-6
    for name, grad in zip(names, grads):
        numeric = np.zeros_like(weights[name])
        for index in np.ndindex(*numeric.shape):
            losses = []
            for delta in (step, -step):
                moved = {key: value.copy() for key, value in weights.items()}
                moved[name][index] += delta
                shadow = types.SimpleNamespace(
                    initialization="sub", units=2, discretize=True, **moved
                )
                y = contract.dmu_formula(shadow, x, training=True)
                losses.append(np.sum(y * upstream))
            numeric[index] = (losses[0] - losses[1]) / (2 * step)
        tolerance = 1e-5 if dtype == "float64" else 1e-3
        np.testing.assert_allclose(grad, numeric, rtol=tolerance, atol=tolerance)


def test_effective_weights_are_the_fixed_operands():
    for initialization, column in (("add", [1, 1, 0]), ("sub", [1, -1, 0])):
        layer = DMU(2, initialization=initialization)
        layer.build((None, 3))
        kernel = effective_weights(layer)["kernel"]
        np.testing.assert_array_equal(kernel, np.array([column, column]).T)


def test_learns_division_and_extrapolates():
    keras.utils.set_random_seed(2)
    rng = np.random.default_rng(2)
    x = rng.uniform(1.0, 2.0, (256, 2)).astype("float32")
    model = keras.Sequential([keras.Input((2,)), DMU(1, initialization="sub")])
    model.compile(
        keras.optimizers.Adam(0.05), "mse", steps_per_execution=steps_per_execution(40)
    )
    x = np.tile(x, (20, 1))  # 80 steps of 64 in one epoch
    model.fit(x, x[:, :1] / x[:, 1:], batch_size=64, epochs=1, verbose=0)
    test = rng.uniform(2.0, 6.0, (64, 2)).astype("float32")
    prediction = model.predict(test, verbose=0)[:, 0]
    np.testing.assert_allclose(prediction, test[:, 0] / test[:, 1], rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"units": 0}, "units=0"),
        ({"initialization": "mul"}, "initialization='mul'"),
        ({"discretize": "yes"}, "discretize='yes'"),
        ({"dtype": "int32"}, "dtype='int32'"),
    ],
)
def test_bad_arguments_are_named_in_one_line(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        DMU(**{"units": 1, **kwargs})
    message = str(info.value)
    assert fragment in message and "\n" not in message


def test_one_input_is_refused_at_build():
    with pytest.raises(ValueError, match="input_dim=1"):
        DMU(1).build((None, 1))


def _model():
    keras.utils.set_random_seed(4)
    inputs = keras.Input((3,))
    return keras.Model(inputs, DMU(2, initialization="sub", name="dmu")(inputs))


def _inputs():
    return np.random.default_rng(9).uniform(-2.0, 2.0, (4, 3)).astype("float32")


def test_keras_round_trip(tmp_path):
    loaded = check_keras_round_trip(_model(), _inputs(), tmp_path)
    assert loaded.get_layer("dmu").initialization == "sub"
