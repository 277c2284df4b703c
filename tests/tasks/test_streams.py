"""Random numbers without TensorFlow: its Philox in NumPy, and the fast streams."""

import importlib.util

import numpy as np
import pytest
from scipy import stats

from keras_nalu.tasks import ArithmeticTask, Range
from keras_nalu.tasks._philox import philox_uniform
from keras_nalu.tasks.ranges import place_uniform
from keras_nalu.tasks.streams import counter_uniform, stream_key

HAS_TF = importlib.util.find_spec("tensorflow") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None
RANGES = ["U[1,2]", "U[0.1,0.2]", "U[-6,-2] ∪ U[2,6]", "U[-3,-1] ∪ U[0,1] ∪ U[2,7]"]


@pytest.mark.skipif(not HAS_TF, reason="compares with TensorFlow")
@pytest.mark.parametrize("seed", [(0, 0), (43_953_907, 0), (5, 3), (2**40 + 7, -1)])
@pytest.mark.parametrize("size", [1, 5, 1001])
def test_philox_uniform_is_tensorflows_stateless_uniform(seed, size):
    import tensorflow as tf

    expected = tf.random.stateless_uniform([size], seed, minval=-2.0, maxval=6.0)
    np.testing.assert_array_equal(
        philox_uniform((size,), seed, -2.0, 6.0), expected.numpy()
    )


@pytest.mark.skipif(not HAS_TF, reason="compares with TensorFlow")
@pytest.mark.parametrize("text", RANGES)
def test_numpy_samples_are_the_tensorflow_samples(text):
    value_range = Range.parse(text)
    for seed in [(0, 0), (8_689_336, 0)]:
        expected = value_range.sample((300, 7), seed).numpy()
        np.testing.assert_array_equal(
            value_range.sample_numpy((300, 7), seed), expected
        )


@pytest.mark.parametrize("text", RANGES)
def test_a_padded_table_places_as_the_range_does(text):
    value_range = Range.parse(text)
    unit = philox_uniform((2000,), 3)
    placed = value_range.place(unit)
    np.testing.assert_array_equal(
        place_uniform(unit, *value_range.table(num_parts=4)), placed
    )
    assert value_range.contains(placed).all()
    with pytest.raises(ValueError, match="num_parts"):
        Range.parse("U[-6,-2] ∪ U[2,6]").table(num_parts=1)


def test_a_union_is_sampled_in_proportion_to_its_parts():
    # U[-3,-1] ∪ U[0,1] ∪ U[2,7]: widths 2, 1, 5 of 8.
    x = Range.parse(RANGES[3]).sample_numpy((80_000,), 11)
    shares = [np.mean(x < -0.5), np.mean((x >= 0) & (x <= 1)), np.mean(x >= 2)]
    np.testing.assert_allclose(shares, [2 / 8, 1 / 8, 5 / 8], atol=0.01)


def test_the_fixed_sets_need_no_tensorflow_and_sum_in_float64():
    task = ArithmeticTask("mul", seed=3)
    x, t = task.validation_data()
    assert x.dtype == np.float32 and t.dtype == np.float32
    a, b = (x[:, s:e].astype(np.float64).sum(axis=1) for s, e in task.subsets)
    np.testing.assert_array_equal(t[:, 0], (a * b).astype(np.float32))


@pytest.mark.skipif(not HAS_TF, reason="compares with TensorFlow")
def test_the_fixed_inputs_are_the_tensorflow_draws():
    import tensorflow as tf

    task = ArithmeticTask("add", seed=0)
    x, _ = task.test_data()
    expected = task.extrapolation_range.sample(
        x.shape, tf.constant([task.test_seed, 0], tf.int64)
    )
    np.testing.assert_array_equal(x, expected.numpy())


def _stream(seed, batches, shape=(64, 100)):
    key = stream_key(seed, 1)
    return np.stack([counter_uniform(key, b, shape) for b in range(batches)])


def test_streams_are_uniform():
    u = _stream(0, 20).ravel()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    # Every used bit is fair: the 23 mantissa bits of u.
    bits = (u * 2**23).astype(np.int64)
    ones = [np.mean((bits >> k) & 1) for k in range(23)]
    np.testing.assert_allclose(ones, 0.5, atol=0.005)


@pytest.mark.parametrize(
    "first, second",
    [
        ((0, 0), (1, 0)),  # neighbouring seeds, same batch
        ((0, 0), (0, 1)),  # neighbouring batches
        ((7, 3), (7, 3)),  # neighbouring elements (shifted below)
    ],
)
def test_neighbouring_streams_are_uncorrelated(first, second):
    key_a, key_b = stream_key(first[0], 1), stream_key(second[0], 1)
    a = counter_uniform(key_a, first[1], (100_000,))
    b = counter_uniform(key_b, second[1], (100_000,))
    if first == second:
        a, b = a[:-1], b[1:]
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.015
    assert not np.array_equal(a, b)


def test_a_batch_is_a_function_of_key_batch_and_element_only():
    key = stream_key(5, 1)
    whole = counter_uniform(key, 9, (128, 100))
    np.testing.assert_array_equal(
        counter_uniform(key, 9, (128 * 100,)).reshape(128, 100), whole
    )
    assert not np.array_equal(counter_uniform(stream_key(5, 2), 9, (128, 100)), whole)


@pytest.mark.skipif(not HAS_JAX, reason="compares NumPy with JAX")
def test_numpy_and_jax_draw_the_same_numbers():
    import jax
    import jax.numpy as jnp

    key = stream_key(12, 1)
    draw = jax.jit(lambda b: counter_uniform(key, b, (32, 10), xp=jnp))
    np.testing.assert_array_equal(
        np.asarray(draw(4)), counter_uniform(key, 4, (32, 10))
    )
    value_range = Range.parse(RANGES[2])
    table = [jnp.asarray(a) for a in value_range.table(3)]
    unit = counter_uniform(key, 4, (32, 10))
    np.testing.assert_array_equal(
        np.asarray(jax.jit(lambda u: place_uniform(u, *table, xp=jnp))(unit)),
        value_range.place(unit),
    )
