"""Initial weight statistics of the units (Madsen & Johansen 2020, §2.6, App. B.1.2,
B.2)."""

import math

import keras
import numpy as np
import pytest

from keras_nalu import initializers
from keras_nalu.layers import NAC, NALU, NAU, NMU
from tests.backend import to_numpy


def draw(initializer, shape, repeats=1):
    """`repeats` draws of `shape`, as one float64 array."""
    values = [
        keras.ops.convert_to_numpy(initializer(shape, dtype="float32"))
        for _ in range(repeats)
    ]
    return np.concatenate([v.ravel() for v in values]).astype("float64")


def assert_uniform(values, low, high):
    """Inside [low, high], reaching both ends, with U[low, high]'s moments."""
    # float32 draws: the bounds as float32 (JAX's draws may equal them).
    assert values.min() >= np.float32(low) and values.max() <= np.float32(high)
    width = high - low
    assert values.min() < low + 1e-3 * width and values.max() > high - 1e-3 * width
    standard_error = width / math.sqrt(12 * values.size)
    assert abs(values.mean() - (low + high) / 2) < 5 * standard_error
    np.testing.assert_allclose(values.var(), width**2 / 12, rtol=0.01)


def nau_limit(fan_in, fan_out):
    return min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / (fan_in + fan_out)))


def test_nau_uniform_large_kernel():
    r = nau_limit(1000, 1000)
    assert r == pytest.approx(math.sqrt(3.0 / 1000))  # Glorot's limit, under ½
    values = draw(initializers.NAUUniform(seed=1), (1000, 1000))
    assert_uniform(values, -r, r)
    np.testing.assert_allclose(values.var(), 2.0 / 2000, rtol=0.01)


def test_nau_uniform_small_kernel_is_capped_at_one_half():
    # I + O = 4: Glorot's limit √3·√(2/4) ≈ 1.22 would exceed ½. A stack of
    # 50 000 such kernels, (replicas, I, O), gives the statistics.
    assert nau_limit(2, 2) == 0.5 < math.sqrt(3.0) * math.sqrt(2.0 / 4)
    assert_uniform(draw(initializers.NAUUniform(seed=2), (50_000, 2, 2)), -0.5, 0.5)


def test_nau_layer_draws_from_nau_uniform():
    keras.utils.set_random_seed(3)
    layer = NAU(300)
    layer.build((None, 700))
    r = nau_limit(700, 300)
    assert_uniform(to_numpy(layer.kernel).ravel().astype("float64"), -r, r)


def test_nmu_uniform_moments():
    values = draw(initializers.NMUUniform(seed=4), (1000, 1000))
    assert_uniform(values, 0.25, 0.75)
    assert abs(values.mean() - 0.5) < 1e-3
    # The reference code's variance 1/48, not the paper text's ¼ (Madsen & Johansen
    # 2020, App. B.2).
    np.testing.assert_allclose(values.var(), 1.0 / 48, rtol=0.01)
    keras.utils.set_random_seed(5)
    layer = NMU(200)
    layer.build((None, 300))
    assert_uniform(to_numpy(layer.kernel).ravel().astype("float64"), 0.25, 0.75)


def test_nac_weight_variance_formula_matches_monte_carlo():
    # Madsen & Johansen (2020), eq. 38 against a direct simulation of tanh(Ŵ)·σ(M̂).
    rng = np.random.default_rng(6)
    for r in (0.3, 1.0, 2.5):
        w_hat, m_hat = rng.uniform(-r, r, (2, 2_000_000))
        simulated = np.var(np.tanh(w_hat) / (1.0 + np.exp(-m_hat)))
        expected = initializers.nac_weight_variance(r)
        np.testing.assert_allclose(simulated, expected, rtol=5e-3)


@pytest.mark.parametrize(
    "fan_in, fan_out, fan_sum", [(1000, 1000, 2000), (10, 2, 12), (2, 2, 5), (1, 1, 5)]
)
def test_nac_uniform_limit_solves_for_glorot_variance(fan_in, fan_out, fan_sum):
    # Below I + O = 5 the target would pass 0.4 (Var[W] < ½ always): use 5.
    r = initializers.nac_uniform_limit(fan_in, fan_out)
    assert initializers.nac_weight_variance(r) == pytest.approx(2.0 / fan_sum)


def nac_kernel(layer):
    return keras.ops.convert_to_numpy(layer.kernel).ravel().astype("float64")


def test_nac_kernel_statistics_large():
    keras.utils.set_random_seed(7)
    layer = NAC(1000)
    layer.build((None, 1000))
    r = initializers.nac_uniform_limit(1000, 1000)
    for weight in (layer.w_hat, layer.m_hat):
        assert_uniform(to_numpy(weight).ravel().astype("float64"), -r, r)
    kernel = nac_kernel(layer)
    assert abs(kernel.mean()) < 5 * math.sqrt(kernel.var() / kernel.size)
    np.testing.assert_allclose(kernel.var(), 2.0 / 2000, rtol=0.02)
    # Ŵ and M̂ are independent draws: no correlation.
    correlation = np.corrcoef(
        to_numpy(layer.w_hat).ravel(), to_numpy(layer.m_hat).ravel()
    )
    assert abs(correlation[0, 1]) < 5e-3


def test_nac_kernel_statistics_small_fan_sum_uses_five():
    # I + O = 4 < 5: Var[W] = 2/5 (2/4 is out of reach: Var[W] < 1/2 for any r).
    # A stack of 50 000 (2, 2) kernels, (replicas, I, O), gives the statistics.
    initializer = initializers.NACUniform(seed=keras.random.SeedGenerator(8))
    w_hat, m_hat = (draw(initializer, (50_000, 2, 2)) for _ in range(2))
    r = initializers.nac_uniform_limit(2, 2)
    assert r == initializers.nac_uniform_limit(4, 1)
    assert_uniform(w_hat, -r, r)
    assert_uniform(m_hat, -r, r)
    kernel = np.tanh(w_hat) / (1.0 + np.exp(-m_hat))
    np.testing.assert_allclose(kernel.var(), 2.0 / 5, rtol=0.01)
    assert abs(kernel.mean()) < 5 * math.sqrt(0.4 / kernel.size)


@pytest.mark.parametrize("seed", [0, 1, 123])
def test_nac_w_hat_and_m_hat_differ_with_an_integer_seed(seed):
    layer = NAC(50, kernel_initializer=initializers.NACUniform(seed=seed))
    layer.build((None, 50))
    w_hat, m_hat = to_numpy(layer.w_hat), to_numpy(layer.m_hat)
    assert not np.any(np.isclose(w_hat, m_hat))
    # Same seed, same draws.
    again = NAC(50, kernel_initializer=initializers.NACUniform(seed=seed))
    again.build((None, 50))
    np.testing.assert_array_equal(to_numpy(again.w_hat), w_hat)
    np.testing.assert_array_equal(to_numpy(again.m_hat), m_hat)


def test_nalu_separate_paths_differ_with_an_integer_seed():
    layer = NALU(
        20, separate_weights=True, kernel_initializer=initializers.NACUniform(seed=9)
    )
    layer.build((None, 30))
    names = ["w_hat", "m_hat", "mul_w_hat", "mul_m_hat"]
    values = {name: to_numpy(getattr(layer, name)) for name in names}
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            assert not np.any(np.isclose(values[first], values[second])), (
                first,
                second,
            )


@pytest.mark.parametrize("cls", [initializers.NAUUniform, initializers.NMUUniform])
def test_integer_seed_is_reproducible_and_none_is_not(cls):
    np.testing.assert_array_equal(
        draw(cls(seed=11), (20, 30)), draw(cls(seed=11), (20, 30))
    )
    assert not np.array_equal(draw(cls(), (20, 30)), draw(cls(), (20, 30)))


@pytest.mark.parametrize(
    "initializer",
    [
        initializers.NACUniform(min_fan_sum=7, seed=3),
        initializers.NAUUniform(seed=4),
        initializers.NMUUniform(seed=None),
    ],
)
def test_config_round_trip(initializer):
    config = initializer.get_config()
    clone = type(initializer).from_config(config)
    assert clone.get_config() == config
    revived = keras.initializers.deserialize(keras.initializers.serialize(initializer))
    assert type(revived) is type(initializer)
    if config["seed"] is not None:
        np.testing.assert_array_equal(draw(revived, (5, 4)), draw(initializer, (5, 4)))


@pytest.mark.parametrize(
    "name, cls",
    [
        ("nac_uniform", initializers.NACUniform),
        ("nau_uniform", initializers.NAUUniform),
        ("nmu_uniform", initializers.NMUUniform),
    ],
)
def test_short_names(name, cls):
    assert isinstance(initializers.get(name), cls)
    assert isinstance(initializers.get("zeros"), keras.initializers.Zeros)


@pytest.mark.parametrize("cls", [initializers.NACUniform, initializers.NAUUniform])
def test_rank_1_shape_raises(cls):
    with pytest.raises(ValueError, match=r"rank >= 2.*Received: shape=\(5,\)"):
        cls(seed=1)((5,))


@pytest.mark.parametrize("min_fan_sum", [0, -1, 2.5, "5", True])
def test_invalid_min_fan_sum_raises(min_fan_sum):
    with pytest.raises(
        ValueError, match=rf"min_fan_sum.*Received: min_fan_sum={min_fan_sum!r}"
    ):
        initializers.NACUniform(min_fan_sum=min_fan_sum)
