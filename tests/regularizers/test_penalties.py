"""The penalties: sparsity, out-of-bounds, L1, |W| = 1, -W², their sum, their
strength variable and config (Madsen & Johansen 2020, §2.2, §2.7)."""

import keras
import numpy as np
import pytest

from keras_nalu import regularizers
from keras_nalu.regularizers import OutOfBounds, Sparsity
from tests.backend import gradients, requires_tensorflow, to_numpy


def value(regularizer, weights):
    return float(regularizer(np.asarray(weights, "float32")))


@pytest.mark.parametrize("strength", [1.0, 0.01, 10.0])
def test_unsigned_sparsity_is_half_strength_at_one_half(strength):
    reg = Sparsity(strength, domain="unsigned")
    assert value(reg, np.full((4, 3), 0.5)) == pytest.approx(0.5 * strength)


@pytest.mark.parametrize("shape", ["linear", "squared"])
def test_sparsity_is_zero_at_discrete_weights(shape):
    unsigned = Sparsity(3.0, shape=shape, domain="unsigned")
    assert value(unsigned, [[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]) == 0.0
    signed = Sparsity(3.0, shape=shape, domain="signed")
    assert value(signed, [[-1.0, 0.0], [1.0, -1.0], [0.0, 1.0]]) == 0.0


def test_linear_sparsity_values():
    w = np.random.default_rng(0).uniform(-1.0, 1.0, (6, 5))
    # Madsen & Johansen (2020), eq. 6
    signed = np.mean(np.minimum(np.abs(w), 1.0 - np.abs(w)))
    assert value(Sparsity(2.0), w) == pytest.approx(2.0 * signed, rel=1e-6)
    u = np.abs(w)
    unsigned = np.mean(np.minimum(u, 1.0 - u))  # eq. 11
    assert value(Sparsity(2.0, domain="unsigned"), u) == pytest.approx(
        2.0 * unsigned, rel=1e-6
    )
    # Hand-computed: |W| = 0.25 and 0.9 are 0.25 and 0.1 from {-1, 0, 1}.
    assert value(Sparsity(1.0), [[0.25, -0.9]]) == pytest.approx(0.175)
    assert value(Sparsity(1.0, domain="unsigned"), [[0.25, 0.9]]) == pytest.approx(
        0.175
    )


def test_squared_sparsity_values():
    w = np.random.default_rng(1).uniform(-1.0, 1.0, (6, 5))
    signed = np.mean(w**2 * (1.0 - np.abs(w)) ** 2)
    reg = Sparsity(0.5, shape="squared")
    assert value(reg, w) == pytest.approx(0.5 * signed, rel=1e-5)
    u = np.abs(w)
    unsigned = np.mean(u**2 * (1.0 - u) ** 2)
    reg = Sparsity(0.5, shape="squared", domain="unsigned")
    assert value(reg, u) == pytest.approx(0.5 * unsigned, rel=1e-5)
    # W = ½: ¼·¼ = 1/16.
    assert value(Sparsity(1.0, shape="squared"), [[0.5, -0.5]]) == pytest.approx(1 / 16)


def test_sparsity_stays_non_negative_outside_the_box():
    # The "no clamp" ablation: weights can leave [-1, 1] / [0, 1].
    w = [[1.5, -2.0], [-0.3, 3.0]]
    assert value(Sparsity(1.0), w) == pytest.approx((0.5 + 1.0 + 0.3 + 2.0) / 4)
    assert value(Sparsity(1.0, domain="unsigned"), w) >= 0.0
    assert value(Sparsity(1.0, shape="squared", domain="unsigned"), w) >= 0.0


def test_out_of_bounds_values():
    assert value(OutOfBounds(), [[1.5], [-0.5]]) == pytest.approx(0.25)
    assert value(OutOfBounds(), [[1.0, -1.0], [0.3, 0.0]]) == 0.0
    assert value(OutOfBounds(2.0), [[-3.0, 1.5]]) == pytest.approx(2.0 * 2.5 / 2)
    box = OutOfBounds(1.0, min_value=0.0, max_value=1.0)
    assert value(box, [[-0.5, 1.25, 0.5, 1.0]]) == pytest.approx(0.75 / 4)
    # The reference code's R_oob = mean(relu(|W| - 1)) for the default box.
    w = np.random.default_rng(2).uniform(-3.0, 3.0, (7, 4))
    expected = np.mean(np.maximum(np.abs(w) - 1.0, 0.0))
    assert value(OutOfBounds(), w) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    "dtype", [pytest.param("float64", marks=pytest.mark.float64), "float16"]
)
def test_penalty_has_the_weights_dtype(dtype):
    penalty = Sparsity(1.0)(np.full((2, 2), 0.5, dtype))
    assert keras.backend.standardize_dtype(penalty.dtype) == dtype


@pytest.mark.float64
def test_a_float64_penalty_and_its_strength_are_float64():
    # The reference code's step in float64 (tests/sweeps/test_reference.py)
    # needs λ·R and its gradient to float64 precision: λ = 0.1 and 1/7 are
    # no float32 numbers.
    keras.config.set_floatx("float64")
    try:
        reg = Sparsity(1.0, domain="unsigned")
    finally:
        keras.config.set_floatx("float32")
    reg.assign_strength(0.1)
    assert keras.backend.standardize_dtype(reg.current_strength.dtype) == "float64"
    w = np.linspace(0.05, 0.95, 7).reshape(7, 1)
    variable = keras.Variable(w, dtype="float64")
    (grad,) = gradients(lambda: reg(variable), [variable])
    expected = 0.1 * np.mean(np.minimum(w, 1.0 - w))
    assert float(to_numpy(reg(w))) == pytest.approx(expected, rel=1e-15)
    np.testing.assert_allclose(grad, 0.1 / 7 * np.where(w <= 0.5, 1.0, -1.0), 1e-15)


def test_scheduled_strength_starts_at_its_step_0_value():
    assert float(to_numpy(Sparsity(10.0, start=5, end=10).current_strength)) == 0.0
    assert float(to_numpy(Sparsity(10.0).current_strength)) == 10.0
    assert value(Sparsity(10.0, start=5, end=10), np.full((2, 2), 0.5)) == 0.0


@requires_tensorflow
def test_strength_is_a_variable_a_traced_function_reads():
    # A float would be baked into the graph; the variable is read at each call.
    reg = Sparsity(1.0, domain="unsigned")
    import tensorflow as tf

    w = tf.constant(np.full((3, 3), 0.5, "float32"))
    for jit_compile in (False, True):
        penalty = tf.function(reg, jit_compile=jit_compile)
        reg.assign_strength(1.0)
        assert float(penalty(w)) == pytest.approx(0.5)
        reg.assign_strength(4.0)
        assert float(penalty(w)) == pytest.approx(2.0)
    assert not reg.current_strength.trainable


@pytest.mark.parametrize(
    "regularizer",
    [
        Sparsity(0.01, start=5_000, end=50_000),
        Sparsity(10.0, shape="squared", domain="unsigned", mode="exp", start=0, end=9),
        OutOfBounds(2.0, min_value=0.0, max_value=1.0),
        OutOfBounds(start=3, end=4),
    ],
)
def test_config_round_trip(regularizer):
    config = regularizer.get_config()
    clone = type(regularizer).from_config(config)
    assert clone.get_config() == config
    revived = keras.regularizers.deserialize(keras.regularizers.serialize(regularizer))
    assert type(revived) is type(regularizer)
    assert revived.get_config() == config
    w = np.random.default_rng(3).uniform(-2.0, 2.0, (4, 4))
    assert value(revived, w) == value(regularizer, w)


def test_paper_defaults():
    nau, nmu = regularizers.nau_sparsity(), regularizers.nmu_sparsity()
    assert (nau.strength, nau.start, nau.end, nau.domain) == (0.01, 5e3, 5e4, "signed")
    assert (nmu.strength, nmu.start, nmu.end, nmu.domain) == (10, 1e6, 2e6, "unsigned")
    assert regularizers.get("sparsity", regularizers.nmu_sparsity).domain == "unsigned"
    assert isinstance(regularizers.get("l2"), keras.regularizers.L2)
    assert regularizers.get(None) is None
    with pytest.raises(ValueError, match="'sparsity' names a unit's default"):
        regularizers.get("sparsity")


@pytest.mark.parametrize("cls", [Sparsity, OutOfBounds])
@pytest.mark.parametrize("strength", [-1.0, -1e-9, float("nan"), float("inf"), "1"])
def test_invalid_strength_raises(cls, strength):
    with pytest.raises(ValueError, match=rf"strength.*Received: strength={strength!r}"):
        cls(strength)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": "cubic"}, "shape.*Received: shape='cubic'"),
        ({"domain": "positive"}, "domain.*Received: domain='positive'"),
        ({"mode": "cosine", "start": 0, "end": 1}, "mode.*Received: mode='cosine'"),
        ({"start": 10, "end": 10}, "start < end. Received: start=10, end=10"),
        ({"start": 20, "end": 10}, "start < end. Received: start=20, end=10"),
        ({"start": 10}, "both start and end.*start=10, end=None"),
        ({"end": 10}, "both start and end.*start=None, end=10"),
        ({"start": -5, "end": 10}, "start.*Received: start=-5"),
    ],
)
def test_invalid_sparsity_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Sparsity(1.0, **kwargs)


def test_out_of_bounds_min_above_max_raises():
    with pytest.raises(
        ValueError, match=r"min_value <= max_value.*min_value=2.0, max_value=1.0"
    ):
        OutOfBounds(min_value=2.0, max_value=1.0)


# --- the new units' penalties: Heim's L1 growth, UnitMagnitude, NegativeL2, Sum ---


def test_l1_sum_reduction_and_ramp_are_unchanged_by_default():
    w = np.array([[1.0, -3.0], [0.5, 0.0]], "float32")
    assert value(regularizers.L1(2.0), w) == pytest.approx(2.0 * 4.5 / 4)
    assert value(regularizers.L1(2.0, reduction="sum"), w) == pytest.approx(9.0)
    ramp = regularizers.L1(1.0, start=0, end=10)
    assert ramp.strength_at(5) == pytest.approx(0.5) and ramp.initial_strength is None


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"reduction": "max"}, "reduction='max'"),
        ({"initial_strength": 0.0}, "initial_strength=0.0"),
        ({"initial_strength": 2.0}, "initial_strength=2.0, strength=1.0"),
        ({"initial_strength": 0.1, "start": 0, "end": 5}, "not both"),
        ({"growth": 1.0}, "growth > 1. Received: growth=1.0"),
        ({"growth_every": 0}, "growth_every=0"),
    ],
)
def test_invalid_l1_arguments_are_named(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        regularizers.L1(1.0, **kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_unit_magnitude_is_zero_at_plus_and_minus_one():
    assert value(regularizers.UnitMagnitude(3.0), [[1.0, -1.0], [1.0, -1.0]]) == 0.0
    w = np.random.default_rng(4).uniform(-2.0, 2.0, (5, 3))
    expected = 0.5 * np.mean(np.abs(1.0 - np.abs(w)))
    assert value(regularizers.UnitMagnitude(0.5), w) == pytest.approx(expected, 1e-6)
    # 0 is not a target: it costs the most.
    assert value(regularizers.UnitMagnitude(), [[0.0]]) == 1.0


def test_negative_l2_rewards_large_weights():
    w = np.random.default_rng(5).normal(size=(4, 2))
    expected = -2.0 * np.mean(w**2)
    assert value(regularizers.NegativeL2(2.0), w) == pytest.approx(expected, 1e-6)
    assert value(regularizers.NegativeL2(2.0), 3 * w) < value(
        regularizers.NegativeL2(2.0), w
    )


def test_sum_adds_its_parts_and_exposes_them_to_the_schedule():
    l1 = regularizers.L1(1.0, start=0, end=10)
    ramp = regularizers.UnitMagnitude(2.0, start=0, end=10)
    total = regularizers.Sum([regularizers.Sum([ramp]), l1, "l2"])
    assert total.parts()[:2] == [ramp, l1] and len(total.parts()) == 3
    w = np.array([[0.5], [-2.0]], "float32")
    l1.assign_strength(1.0)
    ramp.assign_strength(2.0)
    expected = 1.25 + 2.0 * 0.75 + 0.01 * 4.25
    assert value(total, w) == pytest.approx(expected, rel=1e-6)
    layer = keras.layers.Dense(1, kernel_regularizer=total)
    layer.build((None, 2))
    held = regularizers.find_scheduled_regularizers(layer, sublayers=False)
    assert held == [ramp, l1]
    with pytest.raises(ValueError, match=r"regularizers=\[\]"):
        regularizers.Sum([])


def test_sum_serializes_with_its_parts():
    total = regularizers.Sum(
        [regularizers.L1(1e-7, initial_strength=1e-9, reduction="sum"), "l2"]
    )
    revived = keras.regularizers.deserialize(keras.regularizers.serialize(total))
    assert type(revived) is regularizers.Sum
    assert revived.get_config() == total.get_config()
    l1 = revived.parts()[0]
    assert (l1.initial_strength, l1.reduction) == (1e-9, "sum")


@pytest.mark.parametrize(
    "regularizer",
    [
        regularizers.L1(1e-5, initial_strength=1e-7, reduction="sum"),
        regularizers.UnitMagnitude(1.0, start=3, end=9),
        regularizers.NegativeL2(10.0, start=20_000, end=35_000),
    ],
)
def test_new_config_round_trips(regularizer):
    config = regularizer.get_config()
    revived = keras.regularizers.deserialize(keras.regularizers.serialize(regularizer))
    assert type(revived) is type(regularizer)
    assert revived.get_config() == config


def test_nmru_default_is_its_papers_ten_input_ramp():
    reg = regularizers.nmru_sparsity()
    assert (reg.strength, reg.start, reg.end, reg.domain) == (
        10.0,
        50_000,
        75_000,
        "unsigned",
    )


@pytest.mark.parametrize(
    "min_value, max_value, message",
    [
        (1.0, 0.0, "OutOfBounds expects min_value <= max_value"),
        (float("nan"), 1.0, "OutOfBounds expects min_value to be a number"),
        (-1.0, "1", "OutOfBounds expects max_value to be a number"),
    ],
)
def test_out_of_bounds_refuses_a_box_that_is_not_one(min_value, max_value, message):
    with pytest.raises(ValueError, match=message):
        OutOfBounds(min_value=min_value, max_value=max_value)
