"""The gated NAU/NMU of Madsen & Johansen (2020), App. C.5: a sigmoid gate over NAU and
NMU."""

import keras
import numpy as np
import pytest

from keras_nalu import regularizers
from keras_nalu.evaluation.sparsity import effective_weights, sparsity_error
from keras_nalu.explain import UnsupportedLayerError, explain
from keras_nalu.keras_utils import iter_layers
from keras_nalu.layers import NAU, NMU, GatedNAUNMU
from keras_nalu.regularizers import find_scheduled_regularizers
from tests.backend import FLOAT_DTYPES, to_numpy
from tests.layers import contract
from tests.layers.contract import (
    check_keras_round_trip,
    run_layer_test,
)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_layer_contract():
    run_layer_test(
        GatedNAUNMU,
        reference=contract.gated_nau_nmu,
        expected_num_trainable_weights=3,
        expected_num_losses=2,
        expected_num_schedules=2,  # the NAU's and the NMU's sparsity
    )
    layer = GatedNAUNMU(2)
    layer.build((None, 3))
    assert isinstance(layer.nau, NAU) and isinstance(layer.nmu, NMU)
    assert sorted(w.name for w in layer.weights) == ["gate", "kernel", "kernel"]


def test_sublayers_keep_their_paper_defaults():
    layer = GatedNAUNMU(1)
    nau_reg, nmu_reg = layer.nau.kernel_regularizer, layer.nmu.kernel_regularizer
    assert (nau_reg.strength, nau_reg.start, nau_reg.domain) == (0.01, 5000, "signed")
    assert (nmu_reg.strength, nmu_reg.start, nmu_reg.domain) == (
        10.0,
        1_000_000,
        "unsigned",
    )
    none = GatedNAUNMU(1, nau_kernel_regularizer=None, nmu_kernel_regularizer=None)
    none(np.ones((1, 2), "float32"))
    assert none.losses == []


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_numerics_match_numpy(dtype):
    rng = np.random.default_rng(4)
    gate = rng.normal(size=(3, 2))
    nau_kernel = np.array([[1.0, -0.5], [0.3, 1.0], [-1.0, 0.0]])
    nmu_kernel = np.array([[1.0, 0.2], [1.0, 0.9], [0.0, 0.5]])
    x = rng.uniform(-2.0, 2.0, (5, 3))
    layer = GatedNAUNMU(2, dtype=dtype)
    layer.build((None, 3))
    _ = layer.gate.assign(gate)
    _ = layer.nau.kernel.assign(nau_kernel)
    _ = layer.nmu.kernel.assign(nmu_kernel)
    g = sigmoid(x @ gate)
    addition = x @ nau_kernel
    multiplication = np.prod(x[:, :, None] * nmu_kernel + (1.0 - nmu_kernel), axis=1)
    expected = g * addition + (1.0 - g) * multiplication
    y = layer(x.astype(dtype))
    assert keras.backend.standardize_dtype(y.dtype) == dtype
    np.testing.assert_allclose(
        to_numpy(y), expected, rtol=1e-5 if dtype == "float32" else 1e-12
    )
    np.testing.assert_allclose(
        to_numpy(layer.gate_values(x.astype(dtype))), g, rtol=1e-5
    )


def test_saturated_gate_selects_one_unit_exactly():
    layer = GatedNAUNMU(1)
    layer.build((None, 2))
    _ = layer.nau.kernel.assign([[1.0], [1.0]])
    _ = layer.nmu.kernel.assign([[1.0], [1.0]])
    x = np.array([[3.0, 4.0]], "float32")
    _ = layer.gate.assign([[50.0], [50.0]])
    np.testing.assert_allclose(to_numpy(layer(x)), [[7.0]])
    _ = layer.gate.assign([[-50.0], [-50.0]])
    np.testing.assert_allclose(to_numpy(layer(x)), [[12.0]])


def test_a_saturated_gate_shuts_out_a_path_that_overflows():
    """σ(x·G) is exactly 1 (or 0) in float32: the output is the open path's,
    as σ(x·G)·a + (1 - σ(x·G))·m is, not 0·inf = NaN of the shut path."""
    layer = GatedNAUNMU(1)
    layer.build((None, 2))
    _ = layer.nau.kernel.assign([[1.0], [1.0]])
    _ = layer.nmu.kernel.assign([[1.0], [1.0]])
    x = np.array([[1e20, 1e20]], "float32")  # the NMU's 1e40 overflows
    _ = layer.gate.assign([[1.0], [1.0]])
    np.testing.assert_allclose(to_numpy(layer(x)), [[2e20]], rtol=1e-6)
    _ = layer.gate.assign([[0.0], [0.0]])  # half open: the output overflows
    assert to_numpy(layer(x))[0, 0] == np.inf
    _ = layer.nmu.kernel.assign([[1.0], [0.0]])
    big = np.array([[3e38, 3e38]], "float32")  # the NAU's 6e38 overflows
    _ = layer.gate.assign([[-1.0], [-1.0]])
    np.testing.assert_allclose(to_numpy(layer(big)), [[3e38]], rtol=1e-6)


def test_callbacks_and_sparsity_error_see_the_sublayers():
    model = keras.Sequential([keras.Input((2,)), GatedNAUNMU(1)])
    layer = model.layers[0]
    found = list(iter_layers(model))
    assert layer.nau in found and layer.nmu in found
    schedules = find_scheduled_regularizers(model)
    assert {r.domain for r in schedules} == {"signed", "unsigned"}
    _ = layer.nau.kernel.assign([[1.0], [0.0]])
    _ = layer.nmu.kernel.assign([[1.0], [0.4]])
    _ = layer.gate.assign([[0.3], [0.3]])  # gates are not counted
    weights = effective_weights(layer)
    assert sorted(weights) == ["nau_kernel", "nmu_kernel"]
    assert sparsity_error(model) == pytest.approx(0.4)


def test_explain_rejects_it_clearly():
    model = keras.Sequential([keras.Input((2,)), GatedNAUNMU(1)])
    with pytest.raises(UnsupportedLayerError, match="GatedNAUNMU"):
        explain(model)


def test_units_is_validated():
    with pytest.raises(ValueError, match="units=0"):
        GatedNAUNMU(0)


def _round_trip_model():
    return keras.Sequential(
        [
            keras.Input((3,)),
            GatedNAUNMU(
                2,
                nau_kernel_regularizer=regularizers.Sparsity(1.0, domain="signed"),
                name="gated",
            ),
        ]
    )


def _round_trip_inputs():
    return np.random.default_rng(5).uniform(1.0, 2.0, (4, 3)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    loaded = check_keras_round_trip(
        _round_trip_model(), _round_trip_inputs(), tmp_path, export=True
    )
    assert loaded.get_layer("gated").nau.kernel_regularizer.strength == 1.0
