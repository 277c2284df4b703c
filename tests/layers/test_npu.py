"""The Neural Power Unit and RealNPU (Heim et al. 2020)."""

import itertools

import keras
import numpy as np
import pytest

from keras_nalu import constraints, regularizers
from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.explain import UnsupportedLayerError, explain
from keras_nalu.layers import NPU, RealNPU
from tests.backend import FLOAT_DTYPES_FUNCTIONS, to_numpy
from tests.layers import contract
from tests.layers.contract import (
    check_keras_round_trip,
    run_layer_test,
)

UNITS = {"NPU": NPU, "RealNPU": RealNPU}


def numpy_npu(x, gate, real, imaginary=None, eps=1e-7):
    r = gate * (np.abs(x) + eps) + (1.0 - gate)
    k = gate * np.pi * (x < 0)
    if imaginary is None:
        imaginary = np.zeros_like(real)
    magnitude = np.exp(np.log(r) @ real - k @ imaginary)
    return magnitude * np.cos(k @ real + np.log(r) @ imaginary)


@pytest.mark.parametrize("name, num_weights", [("NPU", 3), ("RealNPU", 2)])
def test_layer_contract(name, num_weights):
    cls = UNITS[name]
    run_layer_test(
        cls,
        reference=contract.npu,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=0,
        input_range=(-2.0, 2.0),
    )
    run_layer_test(
        cls,
        {"kernel_regularizer": regularizers.L1(0.1, start=0, end=10)},
        reference=contract.npu,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_weights - 1,  # Re (and Im)
        expected_num_schedules=1,
        run_training_check=False,
        run_mixed_precision_check=False,
    )
    layer = cls(2)
    layer.build((None, 3))
    assert tuple(layer.gate.shape) == (3,)  # one relevance gate per input


def test_paper_initialization():
    layer = NPU(4)
    layer.build((None, 6))
    np.testing.assert_array_equal(to_numpy(layer.imaginary_kernel), 0.0)
    np.testing.assert_array_equal(to_numpy(layer.gate), 0.5)
    limit = np.sqrt(6.0 / (6 + 4))  # Glorot-uniform on Re
    assert np.abs(to_numpy(layer.kernel)).max() <= limit
    assert isinstance(layer.gate_constraint, constraints.Clip)
    assert "imaginary_initializer" not in RealNPU(1).get_config()


@pytest.mark.parametrize("name", list(UNITS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES_FUNCTIONS)
def test_numerics_match_numpy(name, dtype):
    rng = np.random.default_rng(8)
    real = rng.normal(size=(3, 2))
    imaginary = rng.normal(0.0, 0.3, (3, 2)) if name == "NPU" else None
    gate = np.array([0.9, 0.2, 1.4])  # 1.4 is clipped to 1 in the forward pass
    x = rng.uniform(-3.0, 3.0, (5, 3))
    layer = UNITS[name](2, dtype=dtype)
    layer.build((None, 3))
    _ = layer.kernel.assign(real)
    if imaginary is not None:
        _ = layer.imaginary_kernel.assign(imaginary)
    _ = layer.gate.assign(gate)
    y = layer(x.astype(dtype))
    assert keras.backend.standardize_dtype(y.dtype) == dtype
    expected = numpy_npu(x, np.clip(gate, 0.0, 1.0), real, imaginary)
    np.testing.assert_allclose(
        to_numpy(y), expected, rtol=1e-5 if dtype == "float32" else 1e-12
    )


@pytest.mark.parametrize("name", list(UNITS))
def test_exact_products_and_quotients_of_any_sign(name):
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))
    x = (signs * [2.0, 3.0, 5.0]).astype("float32")
    x = np.concatenate([x, np.zeros((len(x), 1), "float32")], axis=1)  # ignored 0
    layer = UNITS[name](2)
    layer.build((None, 4))
    _ = layer.kernel.assign([[1.0, 1.0], [1.0, -1.0], [1.0, 0.0], [0.0, 0.0]])
    _ = layer.gate.assign([1.0, 1.0, 1.0, 0.0])
    y = to_numpy(layer(x))
    np.testing.assert_allclose(y[:, 0], x[:, 0] * x[:, 1] * x[:, 2], rtol=1e-5)
    np.testing.assert_allclose(y[:, 1], x[:, 0] / x[:, 1], rtol=1e-5)


def test_l1_regularizer_follows_its_schedule():
    reg = regularizers.L1(0.5, start=0, end=10)
    w = np.array([[1.0], [-3.0]], "float32")
    assert float(reg.penalty(w)) == pytest.approx(2.0)
    assert float(reg(w)) == 0.0
    assert reg.strength_at(5) == pytest.approx(0.25)
    reg.assign_strength(reg.strength_at(10))
    assert float(reg(w)) == pytest.approx(1.0)
    assert (
        regularizers.L1.from_config(reg.get_config()).get_config() == reg.get_config()
    )


def test_effective_weights_leave_out_the_gate_and_explain_rejects_it():
    model = keras.Sequential([keras.Input((2,)), NPU(1)])
    assert sorted(effective_weights(model.layers[0])) == ["imaginary_kernel", "kernel"]
    real = keras.Sequential([keras.Input((2,)), RealNPU(1)])
    assert sorted(effective_weights(real.layers[0])) == ["kernel"]
    with pytest.raises(UnsupportedLayerError, match="NPU"):
        explain(model)


@pytest.mark.parametrize("name", list(UNITS))
@pytest.mark.parametrize(
    "kwargs, argument",
    [({"units": 0}, "units"), ({"epsilon": 0.0}, "epsilon")],
)
def test_constructor_validation_names_the_argument(name, kwargs, argument):
    with pytest.raises(ValueError, match=f"{argument}="):
        UNITS[name](**{"units": 1, **kwargs})


def test_real_npu_takes_no_imaginary_weights():
    with pytest.raises(ValueError, match="imaginary_initializer="):
        RealNPU(1, imaginary_initializer="zeros")


def _round_trip_model():
    inputs = keras.Input((3,))
    outputs = keras.layers.Concatenate()(
        [
            NPU(2, kernel_regularizer=regularizers.L1(0.1), name="npu")(inputs),
            RealNPU(2, name="real_npu")(inputs),
        ]
    )
    return keras.Model(inputs, outputs)


def _round_trip_inputs():
    return np.random.default_rng(9).uniform(-2.0, 2.0, (4, 3)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    loaded = check_keras_round_trip(
        _round_trip_model(), _round_trip_inputs(), tmp_path, export=True
    )
    assert isinstance(loaded.get_layer("npu").kernel_regularizer, regularizers.L1)
    assert type(loaded.get_layer("real_npu")) is RealNPU


# --- the modified Real NPU (Mistry et al. 2021) ----------------------------------


def modified_kwargs():
    """The modified recipe on RealNPU: clip, NAU init, ramps plus Heim's L1."""
    l1 = regularizers.L1(1e-7, initial_strength=1e-9, reduction="sum")
    return {
        "kernel_initializer": "nau_uniform",
        "kernel_constraint": "clip",
        "kernel_regularizer": regularizers.Sum(
            [regularizers.UnitMagnitude(1.0, 0, 10), l1]
        ),
        "gate_regularizer": regularizers.Sum(
            [regularizers.Sparsity(1.0, 0, 10, domain="unsigned"), l1]
        ),
    }


def test_modified_real_npu_layer_contract():
    run_layer_test(
        RealNPU,
        modified_kwargs(),
        reference=contract.npu,
        expected_num_trainable_weights=2,
        expected_num_losses=2,  # Re and g, each a Sum
        expected_num_schedules=3,  # the two ramps and the shared L1
        input_range=(-2.0, 2.0),
    )


@pytest.mark.parametrize("name", list(UNITS))
def test_a_clip_constraint_clamps_the_exponents_in_the_forward_pass(name):
    x = np.random.default_rng(3).uniform(-3.0, 3.0, (16, 2)).astype("float32")

    def layer(kernel, **kwargs):
        unit = UNITS[name](1, **kwargs)
        unit.build((None, 2))
        _ = unit.kernel.assign(kernel)
        _ = unit.gate.assign([1.0, 1.0])
        return unit

    outside = layer([[1.7], [-2.5]], kernel_constraint="clip")
    inside = layer([[1.0], [-1.0]], kernel_constraint="clip")
    np.testing.assert_array_equal(to_numpy(outside(x)), to_numpy(inside(x)))
    np.testing.assert_allclose(to_numpy(inside(x))[:, 0], x[:, 0] / x[:, 1], rtol=1e-5)
    np.testing.assert_array_equal(effective_weights(outside)["kernel"], [[1], [-1]])
    free = layer([[1.7], [-2.5]])  # no constraint: the raw exponents
    np.testing.assert_array_equal(
        effective_weights(free)["kernel"], np.float32([[1.7], [-2.5]])
    )


def test_modified_real_npu_keras_round_trip(tmp_path):
    inputs = keras.Input((2,))
    outputs = RealNPU(1, name="modified", **modified_kwargs())(inputs)
    model = keras.Model(inputs, outputs)
    loaded = check_keras_round_trip(model, _round_trip_inputs()[:, :2], tmp_path)
    layer = loaded.get_layer("modified")
    parts = layer.kernel_regularizer.parts()
    assert [type(part).__name__ for part in parts] == ["UnitMagnitude", "L1"]
    assert parts[1].initial_strength == 1e-9
    assert isinstance(layer.kernel_constraint, constraints.Clip)
