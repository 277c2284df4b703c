"""The Clip constraint: the NAU's [-1, 1] and NMU's [0, 1] boxes."""

import keras
import numpy as np
import pytest

from keras_nalu import constraints
from keras_nalu.constraints import Clip
from keras_nalu.layers import NAU, NMU
from tests.backend import to_numpy


@pytest.mark.parametrize("low, high", [(-1.0, 1.0), (0.0, 1.0), (0.5, 0.5)])
def test_clips_elementwise(low, high):
    w = np.random.default_rng(0).uniform(-3.0, 3.0, (5, 4)).astype("float32")
    clipped = keras.ops.convert_to_numpy(Clip(low, high)(w))
    np.testing.assert_array_equal(clipped, np.clip(w, low, high))


def test_defaults_are_the_nau_box():
    clip = Clip()
    assert (clip.min_value, clip.max_value) == (-1.0, 1.0)


def test_config_round_trip():
    clip = Clip(0, 1)
    config = clip.get_config()
    assert config == {"min_value": 0.0, "max_value": 1.0}
    revived = keras.constraints.deserialize(keras.constraints.serialize(clip))
    assert type(revived) is Clip
    assert revived.get_config() == config


@pytest.mark.parametrize(
    "layer_cls, box", [(NAU, (-1.0, 1.0)), (NMU, (0.0, 1.0))], ids=["NAU", "NMU"]
)
def test_units_resolve_clip_to_their_box(layer_cls, box):
    constraint = layer_cls(2, kernel_constraint="clip").kernel_constraint
    assert isinstance(constraint, constraints.Clip)
    assert (constraint.min_value, constraint.max_value) == box
    assert layer_cls(2, kernel_constraint=None).kernel_constraint is None
    custom = layer_cls(2, kernel_constraint=Clip(-0.5, 0.5)).kernel_constraint
    assert (custom.min_value, custom.max_value) == (-0.5, 0.5)


def test_keras_applies_it_after_each_optimizer_step():
    keras.utils.set_random_seed(0)
    dense = keras.layers.Dense(3, kernel_constraint=Clip(-0.25, 0.75))
    model = keras.Sequential([keras.Input((4,)), dense])
    model.compile(keras.optimizers.SGD(50.0), "mse")
    x = np.random.default_rng(1).normal(size=(32, 4)).astype("float32")
    y = 100.0 * np.random.default_rng(2).normal(size=(32, 3)).astype("float32")
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    kernel = to_numpy(dense.kernel)
    assert kernel.min() == -0.25 and kernel.max() == 0.75


@pytest.mark.parametrize("low, high", [(1.0, -1.0), (0.5, 0.0)])
def test_min_above_max_raises(low, high):
    with pytest.raises(
        ValueError,
        match=rf"min_value <= max_value. Received: min_value={low!r}, "
        rf"max_value={high!r}",
    ):
        Clip(low, high)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"min_value": float("nan")}, "min_value"),
        ({"max_value": float("nan")}, "max_value"),
        ({"min_value": "0"}, "min_value"),
        ({"max_value": None}, "max_value"),
        ({"min_value": True}, "min_value"),
    ],
)
def test_non_numeric_bounds_raise(kwargs, name):
    value = kwargs[name]
    with pytest.raises(ValueError, match=rf"{name}.*Received: {name}={value!r}"):
        Clip(**kwargs)


def test_infinite_bounds_clip_one_side():
    clip = Clip(0.0, float("inf"))
    w = np.array([-2.0, 0.5, 1e30], "float32")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(clip(w)), [0, 0.5, w[2]])


def test_forward_clip_leaves_the_stored_weight_free_and_clips_the_forward_pass():
    from keras_nalu.layers import RealNPU

    constraint = RealNPU(1, gate_constraint="forward_clip").gate_constraint
    assert type(constraint) is constraints.ForwardClip
    assert (constraint.min_value, constraint.max_value) == (0.0, 1.0)
    revived = keras.constraints.deserialize(keras.constraints.serialize(constraint))
    assert type(revived) is constraints.ForwardClip

    def one_step(gate_constraint):
        # y = (1 + g₀)^½·(1 + g₁)^½ on x = 2, far below its target: g grows.
        layer = RealNPU(1, gate_constraint=gate_constraint)
        model = keras.Sequential([keras.Input((2,)), layer])
        layer.kernel.assign(np.full((2, 1), 0.5, "float32"))
        model.compile(keras.optimizers.SGD(100.0), "mse")
        x, t = np.full((8, 2), 2.0, "float32"), np.full((8, 1), 1e3, "float32")
        model.fit(x, t, epochs=1, verbose=0)
        return layer

    free = one_step("forward_clip")
    gate = to_numpy(free.gate)
    assert gate.min() > 1.0  # stored past the bound
    np.testing.assert_array_equal(to_numpy(free.gate_values()), [1.0, 1.0])
    np.testing.assert_array_equal(to_numpy(one_step("clip").gate), [1.0, 1.0])
