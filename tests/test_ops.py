"""keras_nalu._ops: the subgradients the units use, the same on every backend."""

import keras
import numpy as np
import pytest

from keras_nalu import _ops
from tests.backend import gradients, to_numpy

POINTS = np.array([-1.5, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0], "float32")


def values_and_gradients(fn, *arguments):
    variables = [keras.Variable(a) for a in arguments]
    value = to_numpy(fn(*variables))
    return value, gradients(lambda: keras.ops.sum(fn(*variables)), variables)


def test_clip_passes_the_gradient_on_its_bounds():
    value, (grad,) = values_and_gradients(lambda w: _ops.clip(w, -1.0, 1.0), POINTS)
    np.testing.assert_array_equal(value, np.clip(POINTS, -1.0, 1.0))
    np.testing.assert_array_equal(grad, [0, 1, 1, 1, 1, 1, 0])


def test_absolute_has_gradient_zero_at_zero():
    value, (grad,) = values_and_gradients(_ops.absolute, POINTS)
    np.testing.assert_array_equal(value, np.abs(POINTS))
    np.testing.assert_array_equal(grad, np.sign(POINTS))


def test_minimum_gives_a_tie_to_its_first_argument():
    other = np.array([0.0, -1.0, 0.0, 0.0, 0.5, 2.0, 1.0], "float32")
    value, (grad_x, grad_y) = values_and_gradients(_ops.minimum, POINTS, other)
    np.testing.assert_array_equal(value, np.minimum(POINTS, other))
    np.testing.assert_array_equal(grad_x, POINTS <= other)
    np.testing.assert_array_equal(grad_y, POINTS > other)


@pytest.mark.float64
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_mean_of_float64_is_a_float64_mean(axis):
    # 1/3 and 1/5 are no float32 numbers: a float32 mean, or a float32
    # gradient (1/count), would be off by ~1e-8.
    x = np.arange(15.0).reshape(3, 5) / 3.0
    value, (grad,) = values_and_gradients(lambda w: _ops.mean(w, axis=axis), x)
    np.testing.assert_allclose(value, np.mean(x, axis=axis), rtol=1e-15)
    count = x.size / np.mean(x, axis=axis).size
    np.testing.assert_allclose(grad, np.full_like(x, 1.0 / count), rtol=1e-15)


def test_mean_of_float32_is_keras_mean():
    x = np.random.default_rng(0).uniform(-1, 1, (4, 7)).astype("float32")
    for axis in (None, 0, 1):
        expected = to_numpy(keras.ops.mean(x, axis=axis))
        np.testing.assert_array_equal(to_numpy(_ops.mean(x, axis=axis)), expected)
