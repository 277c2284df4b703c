"""NAC•σ and NAC•NMU: the NAC•'s other weight parametrizations (Madsen & Johansen 2020,
§4.1.3)."""

import keras
import numpy as np
import pytest

from keras_nalu import constraints, regularizers
from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.explain import explain
from keras_nalu.layers import NACMul
from keras_nalu.layers.nac_mul import log_space_product
from tests.backend import FLOAT_DTYPES, to_numpy
from tests.layers import contract
from tests.layers.contract import (
    check_keras_round_trip,
    run_layer_test,
)

PARAMETRIZATIONS = ("sigmoid", "nmu")


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@pytest.mark.parametrize(
    "parametrization, num_weights, num_losses",
    [("nac", 2, 0), ("sigmoid", 1, 0), ("nmu", 1, 1)],
)
def test_layer_contract(parametrization, num_weights, num_losses):
    run_layer_test(
        NACMul,
        {"parametrization": parametrization},
        reference=contract.nac_mul,
        expected_num_trainable_weights=num_weights,
        expected_num_losses=num_losses,
        expected_num_schedules=num_losses,  # NAC•NMU's sparsity
    )
    layer = NACMul(2, parametrization=parametrization)
    layer.build((None, 3))
    assert [w.name for w in layer.weights][0] == "w_hat"


def test_defaults_follow_each_parametrization():
    nac = NACMul(1)
    assert nac.get_config()["kernel_regularizer"] is None
    assert nac.kernel_constraint is None
    sigma = NACMul(1, parametrization="sigmoid")
    assert isinstance(sigma.kernel_initializer, keras.initializers.GlorotNormal)
    assert sigma.kernel_regularizer is None and sigma.kernel_constraint is None
    nmu = NACMul(1, parametrization="nmu")
    assert isinstance(nmu.kernel_constraint, constraints.Clip)
    assert (nmu.kernel_constraint.min_value, nmu.kernel_constraint.max_value) == (
        0.0,
        1.0,
    )
    reg = nmu.kernel_regularizer
    assert isinstance(reg, regularizers.Sparsity)
    assert (reg.strength, reg.start, reg.end, reg.domain) == (
        10.0,
        1_000_000,
        2_000_000,
        "unsigned",
    )
    nmu.build((None, 50))
    values = to_numpy(nmu.w_hat)
    assert 0.25 <= values.min() and values.max() <= 0.75  # NMU init U[0.25, 0.75]
    explicit = NACMul(1, parametrization="nmu", kernel_regularizer=None)
    assert explicit.kernel_regularizer is None


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sigmoid_numerics_match_numpy(dtype):
    rng = np.random.default_rng(2)
    w_hat = rng.normal(size=(4, 3))
    x = rng.uniform(-3.0, 3.0, (6, 4))
    layer = NACMul(3, parametrization="sigmoid", dtype=dtype)
    layer.build((None, 4))
    _ = layer.w_hat.assign(w_hat)
    y = layer(x.astype(dtype))
    assert keras.backend.standardize_dtype(y.dtype) == dtype
    expected = np.exp(np.log(np.abs(x) + 1e-7) @ sigmoid(w_hat))
    np.testing.assert_allclose(
        to_numpy(y), expected, rtol=1e-5 if dtype == "float32" else 1e-12
    )
    # σ(Ŵ) ∈ (0, 1): products and roots, never division.
    assert np.all(to_numpy(layer.kernel) > 0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nmu_numerics_match_numpy_with_forward_clip(dtype):
    w_hat = np.array([[1.0, 0.3], [1.0, -0.5], [0.0, 1.7]])
    x = np.array([[2.0, 3.0, 5.0], [-1.5, 4.0, 0.5]])
    layer = NACMul(2, parametrization="nmu", dtype=dtype)
    layer.build((None, 3))
    _ = layer.w_hat.assign(w_hat)  # outside the box: clipped in the forward pass
    kernel = np.clip(w_hat, 0.0, 1.0)
    np.testing.assert_allclose(to_numpy(layer.kernel), kernel)
    y = to_numpy(layer(x.astype(dtype)))
    expected = np.exp(np.log(np.abs(x) + 1e-7) @ kernel)
    np.testing.assert_allclose(y, expected, rtol=1e-5 if dtype == "float32" else 1e-12)
    np.testing.assert_allclose(y[:, 0], [6.0, 6.0], rtol=1e-5)  # |x0·x1|
    # the Clip constraint projects Ŵ after each step
    projected = layer.kernel_constraint(layer.w_hat)
    np.testing.assert_allclose(to_numpy(projected), kernel)


def test_one_product_implementation():
    x = np.array([[2.0, 3.0]], "float32")
    kernel = np.array([[1.0], [1.0]], "float32")
    np.testing.assert_allclose(log_space_product(x, kernel, 1e-7), [[6.0]], rtol=1e-5)


@pytest.mark.parametrize("parametrization", PARAMETRIZATIONS)
def test_effective_weights_and_explain_read_w(parametrization):
    model = keras.Sequential(
        [keras.Input((3,)), NACMul(1, parametrization=parametrization)]
    )
    layer = model.layers[0]
    w_hat = (
        [[20.0], [20.0], [-20.0]] if parametrization == "sigmoid" else [[1], [1], [0]]
    )
    _ = layer.w_hat.assign(np.array(w_hat, "float32"))
    np.testing.assert_allclose(
        effective_weights(layer)["kernel"], [[1.0], [1.0], [0.0]], atol=1e-6
    )
    assert str(explain(model)).startswith("y = x0 * x1")


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"parametrization": "softmax"}, "parametrization"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"units": 0}, "units"),
    ],
)
def test_constructor_validation_names_the_argument(kwargs, name):
    kwargs = {"units": 1, **kwargs}
    with pytest.raises(ValueError, match=f"{name}="):
        NACMul(**kwargs)


def test_sparsity_needs_the_nmu_parametrization():
    with pytest.raises(ValueError, match="sparsity"):
        NACMul(1, parametrization="sigmoid", kernel_regularizer="sparsity")


def _variants_model():
    inputs = keras.Input((3,))
    outputs = [NACMul(2, parametrization=p, name=p)(inputs) for p in PARAMETRIZATIONS]
    return keras.Model(inputs, keras.layers.Concatenate()(outputs))


def _round_trip_model():
    return _variants_model()


def _round_trip_inputs():
    return np.random.default_rng(3).uniform(1.0, 2.0, (4, 3)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    loaded = check_keras_round_trip(
        _round_trip_model(), _round_trip_inputs(), tmp_path, export=True
    )
    assert loaded.get_layer("nmu").parametrization == "nmu"
    assert isinstance(loaded.get_layer("nmu").kernel_regularizer, regularizers.Sparsity)
