"""NAU: y = x · clip(W, -1, 1) (Madsen & Johansen 2020, §2.2, eq. 5-7)."""

import keras
import numpy as np
import pytest

from keras_nalu import constraints, initializers, regularizers
from keras_nalu.layers import NAU
from tests.backend import gradients, to_numpy
from tests.layers import contract
from tests.layers.contract import run_layer_test

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
        NAU,
        kwargs,
        reference=contract.nau,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_losses,
        expected_num_schedules=num_losses,
        input_range=(-2.0, 2.0),
        float64_functions=False,
    )


def test_defaults_are_the_papers():
    layer = NAU(3)
    assert isinstance(layer.kernel_initializer, initializers.NAUUniform)
    assert isinstance(layer.kernel_constraint, constraints.Clip)
    assert (layer.kernel_constraint.min_value, layer.kernel_constraint.max_value) == (
        -1.0,
        1.0,
    )
    reg = layer.kernel_regularizer
    assert isinstance(reg, regularizers.Sparsity)
    # Table 4 of Madsen & Johansen (2020): λ = 0.01 ramped over steps 5·10³ → 5·10⁴.
    assert (reg.strength, reg.start, reg.end) == (0.01, 5_000, 50_000)
    assert (reg.shape, reg.domain, reg.mode) == ("linear", "signed", "linear")


def hand_set(kernel, **kwargs):
    kernel = np.asarray(kernel, "float32")
    layer = NAU(kernel.shape[1], **kwargs)
    layer.build((None, kernel.shape[0]))
    layer.kernel.assign(kernel)
    return layer


@pytest.mark.parametrize("low, high", [(1.0, 2.0), (-6.0, 6.0), (-1e3, 1e3)])
def test_hand_set_weights_add_and_subtract_exactly(low, high):
    x = np.random.default_rng(0).uniform(low, high, (256, 2)).astype("float32")
    a, b = x[:, 0], x[:, 1]
    y = to_numpy(hand_set([[1.0, 1.0], [-1.0, 1.0]])(x))
    np.testing.assert_array_equal(y[:, 0], a - b)  # one float32 rounding
    np.testing.assert_array_equal(y[:, 1], a + b)


def test_hand_set_weights_select_and_ignore_inputs():
    x = np.random.default_rng(1).uniform(-5.0, 5.0, (64, 4)).astype("float32")
    y = to_numpy(hand_set([[0.0], [1.0], [0.0], [-1.0]])(x))
    np.testing.assert_array_equal(y[:, 0], x[:, 1] - x[:, 3])


def test_forward_pass_clips_the_kernel():
    x = np.random.default_rng(2).uniform(-3.0, 3.0, (32, 2)).astype("float32")
    outside = hand_set([[1.7], [-3.0]])
    inside = hand_set([[1.0], [-1.0]])
    np.testing.assert_array_equal(to_numpy(outside(x)), to_numpy(inside(x)))
    # Without the clamp (the ablation) the raw kernel is used.
    raw = hand_set([[1.7], [-3.0]], kernel_constraint=None)
    np.testing.assert_allclose(
        to_numpy(raw(x))[:, 0], 1.7 * x[:, 0] - 3.0 * x[:, 1], rtol=1e-5
    )


def kernel_after_a_large_step(layer_cls, target, **kwargs):
    """One SGD step (learning rate 100) towards a far-away target."""
    keras.utils.set_random_seed(0)
    layer = layer_cls(3, kernel_regularizer=None, **kwargs)
    model = keras.Sequential([keras.Input((4,)), layer])
    model.compile(keras.optimizers.SGD(learning_rate=100.0), "mse")
    x = np.random.default_rng(0).uniform(2.0, 3.0, (16, 4)).astype("float32")
    y = np.full((16, 3), target, "float32")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    return to_numpy(layer.kernel)


@pytest.mark.parametrize("target", [1e3, -1e3])
def test_weights_stay_in_box_after_a_step_that_leaves_it(target):
    # Unclamped, the step takes every weight far out of [-1, 1] ...
    unclamped = kernel_after_a_large_step(NAU, target, kernel_constraint=None)
    assert np.all(np.sign(unclamped) * np.sign(target) > 0)
    assert np.all(np.abs(unclamped) > 100.0)
    # ... the constraint puts each back on the nearest bound.
    kernel = kernel_after_a_large_step(NAU, target)
    np.testing.assert_array_equal(kernel, np.full_like(kernel, np.sign(target)))


@pytest.mark.float64
def test_gradients_are_those_of_a_linear_map():
    rng = np.random.default_rng(3)
    layer = NAU(3, dtype="float64")
    layer.build((None, 4))
    x = rng.uniform(-2, 2, (6, 4))
    upstream = rng.normal(size=(6, 3))
    grad_w, grad_x = gradients(
        lambda x: keras.ops.sum(keras.ops.multiply(layer(x), upstream)),
        [layer.kernel],
        [x],
    )
    np.testing.assert_allclose(grad_w, x.T @ upstream, rtol=1e-12)
    np.testing.assert_allclose(grad_x, upstream @ to_numpy(layer.kernel).T, rtol=1e-12)


@pytest.mark.parametrize("value", [0.0, 1e3, -1e3, 1e-30])
def test_outputs_are_finite_for_finite_inputs(value):
    x = np.full((2, 5), value, "float32")
    x[1, ::2] = -value
    y = NAU(4)(x)
    assert np.all(np.isfinite(to_numpy(y)))


@pytest.mark.parametrize("units", [0, -1, 2.5, "3", True, None])
def test_invalid_units_raise(units):
    with pytest.raises(ValueError, match=rf"units.*Received: units={units!r}"):
        NAU(units)


def test_rank_1_input_raises():
    with pytest.raises(ValueError, match="min_ndim=2, found ndim=1"):
        NAU(2)(np.ones(3, "float32"))
    with pytest.raises(ValueError, match=r"NAU expects inputs of rank >= 2"):
        NAU(2).build((3,))


def test_wrong_input_size_after_build_raises():
    layer = NAU(2)
    layer(np.ones((1, 3), "float32"))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have"):
        layer(np.ones((1, 4), "float32"))


def test_unknown_regularizer_name_raises():
    with pytest.raises(ValueError, match="sparsityy"):
        NAU(2, kernel_regularizer="sparsityy")
