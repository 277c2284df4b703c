"""NMU: y_o = ∏_i (W_io·x_i + 1 - W_io), W in [0, 1] (Madsen & Johansen 2020, §2.5,
App. A.3)."""

import keras
import numpy as np
import pytest

from keras_nalu import constraints, initializers, regularizers
from keras_nalu.layers import NMU
from keras_nalu.layers.nmu import draw_noise
from tests.backend import BACKEND, gradients, to_numpy
from tests.layers import contract
from tests.layers.contract import check_keras_round_trip, run_layer_test

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
        NMU,
        kwargs,
        reference=contract.nmu,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_losses,
        expected_num_schedules=num_losses,
        input_range=(-2.0, 2.0),
        float64_functions=False,
    )


def test_defaults_are_the_papers():
    layer = NMU(3)
    assert isinstance(layer.kernel_initializer, initializers.NMUUniform)
    assert isinstance(layer.kernel_constraint, constraints.Clip)
    box = (layer.kernel_constraint.min_value, layer.kernel_constraint.max_value)
    assert box == (0.0, 1.0)
    reg = layer.kernel_regularizer
    assert isinstance(reg, regularizers.Sparsity)
    # Table 4 of Madsen & Johansen (2020): λ = 10 ramped over steps 10⁶ → 2·10⁶.
    assert (reg.strength, reg.start, reg.end) == (10.0, 1_000_000, 2_000_000)
    assert (reg.shape, reg.domain, reg.mode) == ("linear", "unsigned", "linear")


def hand_set(kernel, **kwargs):
    kernel = np.asarray(kernel, kwargs.get("dtype", "float32"))
    layer = NMU(kernel.shape[1], **kwargs)
    layer.build((None, kernel.shape[0]))
    layer.kernel.assign(kernel)
    return layer


@pytest.mark.parametrize("low, high", [(1.0, 2.0), (-6.0, 6.0), (-1e3, 1e3)])
def test_hand_set_weights_multiply_and_select_exactly(low, high):
    x = np.random.default_rng(0).uniform(low, high, (256, 2)).astype("float32")
    a, b = x[:, 0], x[:, 1]
    assert (a < 0).any() or low > 0
    y = to_numpy(hand_set([[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0]])(x))
    np.testing.assert_array_equal(y[:, 0], a * b)  # one float32 rounding
    np.testing.assert_array_equal(y[:, 1], a)  # W = 0 is the identity factor
    np.testing.assert_array_equal(y[:, 2], b)
    np.testing.assert_array_equal(y[:, 3], np.ones_like(a))


@pytest.mark.float64
def test_hand_set_weights_square_and_cube():
    x = np.random.default_rng(1).uniform(-3.0, 3.0, (64, 3)).astype("float64")
    y = to_numpy(hand_set([[1.0], [1.0], [1.0]], dtype="float64")(x))
    np.testing.assert_allclose(y[:, 0], x[:, 0] * x[:, 1] * x[:, 2], rtol=1e-14)


def test_forward_pass_clips_the_kernel():
    x = np.random.default_rng(2).uniform(-3.0, 3.0, (32, 3)).astype("float32")
    outside = hand_set([[2.0], [-0.5], [1.0]])
    inside = hand_set([[1.0], [0.0], [1.0]])
    np.testing.assert_array_equal(to_numpy(outside(x)), to_numpy(inside(x)))
    np.testing.assert_array_equal(to_numpy(outside(x))[:, 0], x[:, 0] * x[:, 2])
    # Without the clamp (the ablation) the raw kernel is used.
    raw = hand_set([[2.0], [-0.5], [1.0]], kernel_constraint=None)
    expected = (2.0 * x[:, 0] - 1.0) * (-0.5 * x[:, 1] + 1.5) * x[:, 2]
    np.testing.assert_allclose(to_numpy(raw(x))[:, 0], expected, rtol=1e-5)


def kernel_after_a_large_step(target, **kwargs):
    """One SGD step (learning rate 100) towards a far-away target."""
    keras.utils.set_random_seed(0)
    layer = NMU(3, kernel_regularizer=None, **kwargs)
    model = keras.Sequential([keras.Input((4,)), layer])
    model.compile(keras.optimizers.SGD(learning_rate=100.0), "mse")
    x = np.random.default_rng(0).uniform(2.0, 3.0, (16, 4)).astype("float32")
    y = np.full((16, 3), target, "float32")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    return to_numpy(layer.kernel)


@pytest.mark.parametrize("target", [1e3, -1e3])
def test_weights_stay_in_box_after_a_step_that_leaves_it(target):
    # All inputs > 1: a large target raises every weight, a negative one
    # lowers it; unclamped, the step lands far outside [0, 1] ...
    unclamped = kernel_after_a_large_step(target, kernel_constraint=None)
    assert np.all(unclamped > 10.0) if target > 0 else np.all(unclamped < -10.0)
    # ... the constraint puts each weight back on the nearest bound.
    kernel = kernel_after_a_large_step(target)
    np.testing.assert_array_equal(kernel, np.full_like(kernel, target > 0))


def nmu_gradients_eq_26_27(x, kernel, upstream):
    """dL/dW and dL/dx of L = Σ upstream·z by Madsen & Johansen (2020), eq. 26 and
    27."""
    factors = kernel[None] * x[:, :, None] + 1.0 - kernel[None]  # (B, I, O)
    z = np.prod(factors, axis=1)  # (B, O)
    shared = upstream[:, None, :] * z[:, None, :] / factors  # ∂L/∂z · z / factor
    grad_w = np.sum(shared * (x[:, :, None] - 1.0), axis=0)  # eq. 26
    grad_x = np.sum(shared * kernel[None], axis=2)  # eq. 27
    return grad_w, grad_x


def kernel_and_input_gradients(layer, x, upstream):
    return gradients(
        lambda x: keras.ops.sum(keras.ops.multiply(layer(x), upstream)),
        [layer.kernel],
        [x],
    )


@pytest.mark.float64
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_match_seed_001_eq_26_27(seed):
    rng = np.random.default_rng(seed)
    kernel = rng.uniform(0.05, 0.95, (5, 3))
    x = rng.uniform(-3.0, 3.0, (64, 5))
    # Eq. 26-27 divide by each factor; keep the rows where none is near 0.
    factors = kernel[None] * x[:, :, None] + 1.0 - kernel[None]
    x = x[np.all(np.abs(factors) > 0.05, axis=(1, 2))][:16]
    assert len(x) == 16
    upstream = rng.normal(size=(16, 3))
    layer = hand_set(kernel, dtype="float64")
    grad_w, grad_x = kernel_and_input_gradients(layer, x, upstream)
    expected_w, expected_x = nmu_gradients_eq_26_27(x, kernel, upstream)
    np.testing.assert_allclose(grad_w, expected_w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grad_x, expected_x, rtol=1e-9, atol=1e-12)


@pytest.mark.float64
def test_gradients_are_exact_when_a_factor_is_zero():
    # W = 0.5, x = -1 makes the factor W·x + 1 - W zero: eq. 26-27 would divide
    # by it; the true gradient is the product of the other factors.
    kernel = np.array([[0.5], [0.8], [0.3]])
    x = np.array([[-1.0, 2.0, 3.0]])
    layer = hand_set(kernel, dtype="float64")
    grad_w, grad_x = kernel_and_input_gradients(layer, x, np.ones((1, 1)))
    others = np.array([0.8 * 2.0 + 0.2, 0.3 * 3.0 + 0.7])
    assert np.all(np.isfinite(grad_w)) and np.all(np.isfinite(grad_x))
    np.testing.assert_allclose(grad_w[0, 0], (x[0, 0] - 1.0) * others.prod())
    np.testing.assert_allclose(grad_x[0, 0], 0.5 * others.prod())
    np.testing.assert_allclose(grad_w[1:, 0], 0.0, atol=1e-15)
    np.testing.assert_allclose(grad_x[0, 1:], 0.0, atol=1e-15)


def test_mixed_float16_multiplies_in_float32(mixed_float16):
    # 300 · 300 overflows float16 (max 65504) before the last factor brings the
    # product back to 90: only a float32 product gets it right.
    with np.errstate(over="ignore"):
        assert np.isinf(np.float16(300.0) * np.float16(300.0))
    layer = hand_set([[1.0], [1.0], [1.0]])
    x = np.array([[300.0, 300.0, 0.001]], "float32")
    y = layer(x)
    assert keras.backend.standardize_dtype(y.dtype) == "float16"
    expected = 300.0 * 300.0 * float(np.float16(0.001))
    np.testing.assert_allclose(np.float64(to_numpy(y)[0, 0]), expected, rtol=1e-3)


@pytest.mark.parametrize("value", [0.0, 1e3, -1e3, 1e-30])
def test_outputs_are_finite_for_finite_inputs(value):
    x = np.full((2, 4), value, "float32")
    x[1, ::2] = -value
    y = NMU(3)(x)  # at most 1e3⁴: in float32 range
    assert np.all(np.isfinite(to_numpy(y)))


@pytest.mark.parametrize("units", [0, -1, 2.5, "3", True, None])
def test_invalid_units_raise(units):
    with pytest.raises(ValueError, match=rf"units.*Received: units={units!r}"):
        NMU(units)


def test_rank_1_input_raises():
    with pytest.raises(ValueError, match="min_ndim=2, found ndim=1"):
        NMU(2)(np.ones(3, "float32"))
    with pytest.raises(ValueError, match=r"NMU expects inputs of rank >= 2"):
        NMU(2).build((3,))


# --- the stochastic NMU (sNMU, Mistry et al. 2022) ------------------------------


@pytest.mark.parametrize("noise", [(1.0, 5.0), "batch"])
def test_snmu_layer_contract(noise):
    run_layer_test(
        NMU,
        {"noise": noise, "seed": 3},
        reference=contract.nmu,  # at inference the sNMU is the NMU
        expected_num_trainable_weights=1,
        expected_num_losses=1,
        expected_num_schedules=1,
        expected_num_seed_generators=1,
        input_range=(-2.0, 2.0),
        float64_functions=False,
    )


def snmu_pair(kernel, noise=(1.0, 5.0), seed=7):
    """An sNMU and a plain NMU with the same kernel."""
    return hand_set(kernel, noise=noise, seed=seed), hand_set(kernel)


def test_snmu_equals_the_nmu_at_evaluation():
    kernel = np.random.default_rng(3).uniform(0.0, 1.0, (4, 3))
    snmu, nmu = snmu_pair(kernel)
    x = np.random.default_rng(4).uniform(-3.0, 3.0, (32, 4)).astype("float32")
    expected = to_numpy(nmu(x))
    np.testing.assert_array_equal(to_numpy(snmu(x)), expected)
    np.testing.assert_array_equal(to_numpy(snmu(x, training=False)), expected)
    # predict compiles both alike (XLA may round differently from eager ops).
    model = keras.Sequential([keras.Input((4,)), snmu])
    plain = keras.Sequential([keras.Input((4,)), nmu])
    np.testing.assert_array_equal(
        model.predict(x, verbose=0), plain.predict(x, verbose=0)
    )
    # Training noise moves a non-discrete kernel's output ...
    assert not np.allclose(to_numpy(snmu(x, training=True)), expected)


def test_snmu_training_is_exact_once_the_weights_are_discrete():
    snmu, nmu = snmu_pair([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    x = np.random.default_rng(5).uniform(-3.0, 3.0, (64, 3)).astype("float32")
    np.testing.assert_allclose(
        to_numpy(snmu(x, training=True)), to_numpy(nmu(x)), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("noise", [(1.0, 5.0), (0.5, 0.75), "batch"])
def test_snmu_training_divides_its_noise_out(noise):
    kernel = np.random.default_rng(6).uniform(0.1, 0.9, (3, 2))
    snmu, _ = snmu_pair(kernel, noise=noise, seed=11)
    x = np.random.default_rng(7).uniform(0.5, 3.0, (16, 3)).astype("float32")
    y = to_numpy(snmu(x, training=True))
    # The layer's first draw: the same seed gives the same noise.
    n = to_numpy(draw_noise(x, snmu.noise, keras.random.SeedGenerator(11)))
    if noise == "batch":
        upper = 1.0 + 1.0 / np.std(x, ddof=1)
        assert n.min() >= 1.0 and n.max() <= upper
        assert n.max() > 1.0 + 0.5 * (upper - 1.0)  # the draws span the range
    else:
        assert noise[0] <= n.min() and n.max() <= noise[1]

    def factors(v):
        return np.prod(kernel * v[:, :, None] + 1.0 - kernel, axis=1)

    expected = factors(x * n) / factors(n)
    np.testing.assert_allclose(y, expected, rtol=1e-5)
    assert not np.allclose(expected, factors(x), rtol=1e-3)  # the noise mattered


def test_snmu_noise_follows_its_seed_and_changes_every_step():
    kernel = np.full((3, 1), 0.5)
    x = np.ones((4, 3), "float32") * 2.0
    first, _ = snmu_pair(kernel, seed=1)
    again, _ = snmu_pair(kernel, seed=1)
    other, _ = snmu_pair(kernel, seed=2)
    y1 = to_numpy(first(x, training=True))
    np.testing.assert_array_equal(y1, to_numpy(again(x, training=True)))
    assert not np.array_equal(y1, to_numpy(other(x, training=True)))
    assert not np.array_equal(y1, to_numpy(first(x, training=True)))


@pytest.mark.parametrize(
    "noise",
    [(5.0, 1.0), (1.0, 1.0), (0.0, 5.0), (-1.0, 2.0), (1.0, np.inf), (1.0,), "U[1,5]"],
)
def test_bad_noise_ranges_are_named_in_one_line(noise):
    with pytest.raises(ValueError) as info:
        NMU(1, noise=noise)
    message = str(info.value)
    assert f"noise={noise!r}" in message and "0 < low < high" in message
    assert "\n" not in message


def test_bad_seed_is_named():
    with pytest.raises(ValueError, match="seed='1'"):
        NMU(1, noise=(1.0, 5.0), seed="1")


def test_plain_nmu_has_no_random_state():
    layer = NMU(2)
    layer.build((None, 3))
    assert layer.non_trainable_variables == [layer.kernel_regularizer.current_strength]
    assert not hasattr(layer, "seed_generator")
    assert layer.get_config()["noise"] is None


def _snmu_model():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,))
    snmu = NMU(2, noise=(1.0, 5.0), seed=5, name="snmu")
    model = keras.Model(inputs, snmu(inputs))
    model.compile(keras.optimizers.Adam(0.01), "mse")
    x = np.random.default_rng(0).uniform(1.0, 2.0, (32, 3)).astype("float32")
    model.fit(x, np.prod(x[:, :2], axis=1, keepdims=True).repeat(2, 1), verbose=0)
    return model


def test_snmu_round_trips_keep_the_noise_and_export_the_plain_nmu(tmp_path):
    model = _snmu_model()
    x = np.random.default_rng(1).uniform(-2.0, 2.0, (8, 3)).astype("float32")
    loaded = check_keras_round_trip(model, x, tmp_path, export=True)
    layer = loaded.get_layer("snmu")
    assert layer.noise == (1.0, 5.0) and layer.seed == 5
    if BACKEND != "tensorflow":
        return
    import tensorflow as tf

    plain = hand_set(to_numpy(model.get_layer("snmu").kernel))
    served = tf.saved_model.load(str(tmp_path / "saved_model"))
    for _ in range(2):  # no noise: the same answer every call
        np.testing.assert_allclose(
            served.serve(tf.constant(x)).numpy(), to_numpy(plain(x)), rtol=1e-6
        )


def test_explain_reads_a_trained_snmu_as_the_nmu():
    from keras_nalu.explain import explain

    layer = hand_set([[1.0], [0.0], [1.0]], noise="batch", seed=0)
    model = keras.Sequential([keras.Input((3,)), layer])
    assert str(explain(model)) == "y = x0 * x2"
