"""NMRU: an NMU over [|x|, 1/(|x| + ε)] with the sign (Mistry et al. 2021)."""

import itertools

import keras
import numpy as np
import pytest

from keras_nalu import constraints, initializers, regularizers
from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.layers import NMRU
from keras_nalu.layers.nmru import FLOAT32_EPSILON
from tests.backend import gradients, to_numpy
from tests.layers import contract
from tests.layers.contract import (
    check_keras_round_trip,
    run_layer_test,
)

VARIANTS = {
    # kwargs, trainable weights, losses once built (a Sparsity: one strength)
    "default": ({}, 1, 1),
    "unclamped_unregularized": (
        {"kernel_regularizer": None, "kernel_constraint": None},
        1,
        0,
    ),
}


@pytest.mark.parametrize(
    "kwargs, num_weights, num_losses", list(VARIANTS.values()), ids=list(VARIANTS)
)
def test_layer_contract(kwargs, num_weights, num_losses):
    run_layer_test(
        NMRU,
        kwargs,
        reference=contract.nmru,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_losses,
        expected_num_schedules=num_losses,
        input_range=(-2.0, 2.0),
    )


def test_defaults_are_the_papers():
    layer = NMRU(2)
    layer.build((None, 3))
    assert tuple(layer.kernel.shape) == (6, 2)  # rows of x, then of 1/x
    assert isinstance(layer.kernel_initializer, initializers.NMUUniform)
    assert isinstance(layer.kernel_constraint, constraints.Clip)
    box = (layer.kernel_constraint.min_value, layer.kernel_constraint.max_value)
    assert box == (0.0, 1.0)
    reg = layer.kernel_regularizer
    assert isinstance(reg, regularizers.Sparsity)
    assert (reg.strength, reg.start, reg.end, reg.domain) == (
        10.0,
        50_000,
        75_000,
        "unsigned",
    )
    assert layer.epsilon == FLOAT32_EPSILON == 2.0**-23


def hand_set(kernel, **kwargs):
    kernel = np.asarray(kernel, kwargs.get("dtype", "float32"))
    layer = NMRU(kernel.shape[1], **kwargs)
    layer.build((None, kernel.shape[0] // 2))
    layer.kernel.assign(kernel)
    return layer


def sign_patterns(magnitudes):
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=len(magnitudes))))
    return (signs * magnitudes).astype("float32")


def test_divides_two_inputs_of_every_sign():
    x = sign_patterns([3.0, 4.0])
    assert len(x) == 4
    # rows: x0, x1, 1/x0, 1/x1; columns: x0/x1, x1/x0, x0·x1, 1/(x0·x1)
    layer = hand_set(
        [
            [1.0, 0.0, 1.0, 0.0],
            [0.0, 1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0, 1.0],
            [1.0, 0.0, 0.0, 1.0],
        ]
    )
    y = to_numpy(layer(x))
    a, b = x[:, 0].astype("float64"), x[:, 1].astype("float64")
    expected = np.stack([a / b, b / a, a * b, 1.0 / (a * b)], axis=1)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert np.array_equal(np.sign(y), np.sign(expected))


def test_divides_three_inputs_of_every_sign():
    x = sign_patterns([2.0, 5.0, 0.5])
    assert len(x) == 8
    # columns: x0·x1 / x2, x0 / (x1·x2), x0 / x1 with x2 ignored, 1 / x2
    layer = hand_set(
        [
            [1.0, 1.0, 1.0, 0.0],  # x0
            [1.0, 0.0, 0.0, 0.0],  # x1
            [0.0, 0.0, 0.0, 0.0],  # x2
            [0.0, 0.0, 0.0, 0.0],  # 1/x0
            [0.0, 1.0, 1.0, 0.0],  # 1/x1
            [1.0, 1.0, 0.0, 1.0],  # 1/x2
        ]
    )
    y = to_numpy(layer(x))
    a, b, c = (x[:, i].astype("float64") for i in range(3))
    expected = np.stack([a * b / c, a / (b * c), a / b, 1.0 / c], axis=1)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert np.array_equal(np.sign(y), np.sign(expected))


def test_training_adds_epsilon_inference_is_exact():
    layer = hand_set([[0.0], [1.0]])  # y = 1/|x|, x > 0
    x = np.array([[1e-3], [2.0]], "float32")
    inference = to_numpy(layer(x))
    training = to_numpy(layer(x, training=True))
    np.testing.assert_allclose(inference[:, 0], 1.0 / x[:, 0], rtol=1e-7)
    eps = np.float32(FLOAT32_EPSILON)
    np.testing.assert_allclose(training[:, 0], 1.0 / (x[:, 0] + eps), rtol=1e-7)
    assert training[0, 0] < inference[0, 0]


def test_a_zero_input_stays_finite_in_training_and_ignored_when_unselected():
    x = np.array([[0.0, 3.0]], "float32")
    divides_by_zero = hand_set([[0.0], [1.0], [1.0], [0.0]])  # x1 / x0
    assert to_numpy(divides_by_zero(x, training=True))[0, 0] == pytest.approx(
        3.0 / FLOAT32_EPSILON, rel=1e-6
    )
    assert np.isinf(to_numpy(divides_by_zero(x))[0, 0])  # exact: 3 / 0
    ignores_zero = hand_set([[0.0], [1.0], [0.0], [0.0]])  # x1, x0 unused
    assert to_numpy(ignores_zero(x))[0, 0] == 3.0
    np.testing.assert_allclose(to_numpy(ignores_zero(x, training=True)), [[3.0]])


def test_at_inference_a_zero_divides_as_float_division_sign_included():
    # rows: x0, x1, 1/x0, 1/x1; columns: 1/x0, x1/x0, 1/(x0·x1), x0/x1, x1
    kernel = [
        [0.0, 0.0, 0.0, 1.0, 0.0],
        [0.0, 1.0, 0.0, 0.0, 1.0],
        [1.0, 1.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 1.0, 0.0],
    ]
    layer = hand_set(kernel)
    zeros = [0.0, -0.0]
    x = np.array([*itertools.product(zeros, [3.0, -3.0, *zeros]), [2.0, -0.0]])
    x = x.astype("float32")
    a, b = x[:, 0].astype("float64"), x[:, 1].astype("float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.stack([1.0 / a, b / a, 1.0 / (a * b), a / b, b], axis=1)
    numbers = ~np.isnan(expected)
    for dtype in ("float32", "float64"):
        y = to_numpy(hand_set(kernel, dtype=dtype)(x.astype(dtype)))
        np.testing.assert_array_equal(y, expected)  # ±inf, NaN where 0/0
        assert np.array_equal(np.signbit(y[numbers]), np.signbit(expected[numbers]))
    in_training = to_numpy(layer(x, training=True))
    assert np.isfinite(in_training[:, :3]).all()
    assert np.array_equal(np.signbit(in_training[:, 0]), np.signbit(a))


def test_forward_pass_clips_the_kernel():
    x = np.random.default_rng(2).uniform(0.5, 3.0, (16, 2)).astype("float32")
    outside = hand_set([[2.0], [-0.5], [0.0], [1.0]])
    inside = hand_set([[1.0], [0.0], [0.0], [1.0]])
    np.testing.assert_array_equal(to_numpy(outside(x)), to_numpy(inside(x)))


def test_effective_weights_split_the_kernel_and_clip_it():
    layer = hand_set([[1.5, 0.0], [0.2, 1.0], [-0.3, 0.4], [1.0, 0.9]])
    weights = effective_weights(layer)
    assert sorted(weights) == ["kernel", "reciprocal_kernel"]
    np.testing.assert_allclose(weights["kernel"], [[1.0, 0.0], [0.2, 1.0]])
    np.testing.assert_allclose(weights["reciprocal_kernel"], [[0.0, 0.4], [1.0, 0.9]])


@pytest.mark.float64
def test_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    kernel = rng.uniform(0.1, 0.9, (6, 2))
    x = rng.uniform(-3.0, 3.0, (8, 3))
    x[np.abs(x) < 0.3] = 0.7  # away from the kink of |x| and from 1/0
    upstream = rng.normal(size=(8, 2))
    layer = hand_set(kernel, dtype="float64")
    (grad,) = gradients(
        lambda: keras.ops.sum(keras.ops.multiply(layer(x, training=True), upstream)),
        [layer.kernel],
    )

    def loss(w):
        magnitude = np.abs(x)
        z = np.concatenate([magnitude, 1.0 / (magnitude + FLOAT32_EPSILON)], axis=1)
        product = np.prod(w[None] * z[:, :, None] + 1.0 - w[None], axis=1)
        sign = np.cos((np.pi * (x < 0)) @ (w[:3] + w[3:]))
        return np.sum(product * sign * upstream)

    numeric = np.zeros_like(kernel)
    step = 1e-6
    for index in np.ndindex(*kernel.shape):
        up, down = kernel.copy(), kernel.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (loss(up) - loss(down)) / (2 * step)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_learns_division_of_negative_inputs():
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(1)
    x = rng.uniform(-2.0, -1.0, (512, 2)).astype("float32")
    t = x[:, :1] / x[:, 1:]
    model = keras.Sequential(
        [keras.Input((2,)), NMRU(1, kernel_regularizer=regularizers.Sparsity(0.1))]
    )
    model.compile(keras.optimizers.Adam(0.05, global_clipnorm=1.0), "mse")
    # Seed 1 reaches the bounds below within 6 epochs on TensorFlow, 4 on JAX,
    # 3 on PyTorch (2-core CPU), and the exact weights by epoch 10.
    model.fit(x, t, batch_size=64, epochs=15, verbose=0)
    kernel = effective_weights(model.layers[0])
    np.testing.assert_allclose(kernel["kernel"], [[1.0], [0.0]], atol=0.05)
    np.testing.assert_allclose(kernel["reciprocal_kernel"], [[0.0], [1.0]], atol=0.05)
    test = rng.uniform(-6.0, -2.0, (64, 2)).astype("float32")
    prediction = model.predict(test, verbose=0)
    np.testing.assert_allclose(prediction[:, 0], test[:, 0] / test[:, 1], rtol=0.05)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"units": 0}, "units=0"),
        ({"epsilon": 0.0}, "epsilon=0.0"),
        ({"epsilon": -1e-7}, "epsilon=-1e-07"),
        ({"dtype": "int32"}, "dtype='int32'"),
    ],
)
def test_bad_arguments_are_named_in_one_line(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        NMRU(**{"units": 1, **kwargs})
    message = str(info.value)
    assert fragment in message and "\n" not in message


def _round_trip_model():
    inputs = keras.Input((3,))
    return keras.Model(inputs, NMRU(2, name="nmru")(inputs))


def _round_trip_inputs():
    return np.random.default_rng(9).uniform(-2.0, 2.0, (4, 3)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    loaded = check_keras_round_trip(
        _round_trip_model(), _round_trip_inputs(), tmp_path, export=True
    )
    assert type(loaded.get_layer("nmru")) is NMRU
