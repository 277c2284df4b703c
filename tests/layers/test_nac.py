"""NAC+: y = x · W, W = tanh(Ŵ) ⊙ σ(M̂) (Trask et al. 2018, eq. 1)."""

import keras
import numpy as np
import pytest

from keras_nalu import initializers
from keras_nalu.layers import NAC
from tests.backend import float64_functions, to_numpy
from tests.layers import contract
from tests.layers.contract import run_layer_test

VARIANTS = {
    # kwargs, trainable weights, losses once built
    "default": ({}, 2, 0),
    "l2_regularized": ({"kernel_regularizer": "l2"}, 2, 2),
}


@pytest.mark.parametrize(
    "kwargs, num_weights, num_losses", list(VARIANTS.values()), ids=list(VARIANTS)
)
def test_layer_contract(kwargs, num_weights, num_losses):
    run_layer_test(
        NAC,
        kwargs,
        reference=contract.nac,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_losses,
        input_range=(-2.0, 2.0),
    )


def hand_set(w_hat, m_hat, **kwargs):
    w_hat = np.asarray(w_hat, kwargs.get("dtype", "float32"))
    layer = NAC(w_hat.shape[1], **kwargs)
    layer.build((None, w_hat.shape[0]))
    layer.w_hat.assign(w_hat)
    layer.m_hat.assign(np.asarray(m_hat, w_hat.dtype))
    return layer


@float64_functions
def test_kernel_is_tanh_times_sigmoid():
    rng = np.random.default_rng(0)
    layer = hand_set(rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), dtype="float64")
    np.testing.assert_allclose(layer.kernel, contract.nac_weight(layer), rtol=1e-14)


@pytest.mark.parametrize("low, high", [(1.0, 2.0), (-6.0, 6.0)])
def test_saturated_weights_add_and_subtract(low, high):
    # tanh(20)·σ(20) is 1 in float32 (1 - 2e-9 exactly), so W = [[1, 1], [1, -1]].
    big = 20.0
    layer = hand_set([[big, big], [big, -big]], np.full((2, 2), big))
    x = np.random.default_rng(1).uniform(low, high, (256, 2)).astype("float32")
    y = to_numpy(layer(x))
    np.testing.assert_allclose(y[:, 0], x[:, 0] + x[:, 1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y[:, 1], x[:, 0] - x[:, 1], rtol=1e-6, atol=1e-6)
    # A negative M̂ switches an input off.
    layer.m_hat.assign([[big, big], [-big, -big]])
    np.testing.assert_allclose(to_numpy(layer(x))[:, 0], x[:, 0], rtol=1e-6, atol=1e-6)


def test_initial_kernel_has_glorot_variance():
    keras.utils.set_random_seed(0)
    layer = NAC(500)
    layer.build((None, 500))
    kernel = keras.ops.convert_to_numpy(layer.kernel)
    assert abs(kernel.mean()) < 5e-3
    np.testing.assert_allclose(kernel.var(), 2.0 / 1000, rtol=0.03)
    assert isinstance(layer.kernel_initializer, initializers.NACUniform)


@pytest.mark.parametrize(
    "initializer",
    [
        "nac_uniform",
        initializers.NACUniform(seed=7),
        keras.initializers.RandomUniform(-1.0, 1.0, seed=7),
        initializers.NACUniform(seed=keras.random.SeedGenerator(7)),
    ],
    ids=["unseeded", "int_seed", "keras_int_seed", "seed_generator"],
)
def test_w_hat_and_m_hat_are_independent_draws(initializer):
    layer = NAC(4, kernel_initializer=initializer)
    layer.build((None, 6))
    w_hat, m_hat = to_numpy(layer.w_hat), to_numpy(layer.m_hat)
    assert not np.any(np.isclose(w_hat, m_hat)), (w_hat, m_hat)


def test_an_integer_seed_makes_the_draw_reproducible():
    def draw():
        layer = NAC(4, kernel_initializer=initializers.NACUniform(seed=7))
        layer.build((None, 6))
        return to_numpy(layer.w_hat), to_numpy(layer.m_hat)

    for first, second in zip(draw(), draw()):
        np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("units", [0, -1, 2.5, "3", True, None])
def test_invalid_units_raise(units):
    with pytest.raises(ValueError, match=rf"units.*Received: units={units!r}"):
        NAC(units)


def test_rank_1_input_raises():
    with pytest.raises(ValueError, match="min_ndim=2, found ndim=1"):
        NAC(2)(np.ones(3, "float32"))
    with pytest.raises(ValueError, match=r"NAC expects inputs of rank >= 2"):
        NAC(2).build((3,))
