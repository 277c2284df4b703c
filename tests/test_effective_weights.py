"""`ArithmeticLayer.effective_weights`: the W each unit computes with.

Each case sets the stored weights by hand and compares the answer with the
unit's own formula written in NumPy, and with what the forward pass does.
"""

import keras
import numpy as np
import pytest

from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.layers import (
    NAC,
    NALU,
    NAU,
    NMU,
    NPU,
    GatedNAUNMU,
    NACMul,
    RealNPU,
    iNALU,
)

RAW = np.array([[1.5], [-0.4], [0.3]], "float32")
W_HAT = np.array([[2.0], [-3.0], [0.5]], "float32")
M_HAT = np.array([[1.0], [4.0], [-2.0]], "float32")


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def nac(w_hat, m_hat):
    return np.tanh(w_hat) * sigmoid(m_hat)


def built(layer, input_dim=3):
    layer.build((None, input_dim))
    return layer


def numpy_weights(layer):
    return {
        name: keras.ops.convert_to_numpy(value)
        for name, value in layer.effective_weights().items()
    }


def assign_nac(layer, prefix=""):
    getattr(layer, f"{prefix}w_hat").assign(W_HAT)
    getattr(layer, f"{prefix}m_hat").assign(M_HAT)


def test_nau_clips_to_the_signed_box_unless_unconstrained():
    layer = built(NAU(1))
    layer.kernel.assign(RAW)
    np.testing.assert_allclose(numpy_weights(layer)["kernel"], np.clip(RAW, -1, 1))
    free = built(NAU(1, kernel_constraint=None))
    free.kernel.assign(RAW)
    np.testing.assert_allclose(numpy_weights(free)["kernel"], RAW)


def test_nmu_clips_to_the_unit_box():
    layer = built(NMU(1))
    layer.kernel.assign(RAW)
    np.testing.assert_allclose(numpy_weights(layer)["kernel"], np.clip(RAW, 0, 1))


def test_nac_is_tanh_times_sigmoid():
    layer = built(NAC(1))
    assign_nac(layer)
    np.testing.assert_allclose(
        numpy_weights(layer)["kernel"], nac(W_HAT, M_HAT), rtol=1e-6
    )


@pytest.mark.parametrize(
    "parametrization, formula",
    [
        ("nac", lambda: nac(W_HAT, M_HAT)),
        ("sigmoid", lambda: sigmoid(W_HAT)),
        ("nmu", lambda: np.clip(W_HAT, 0, 1)),
    ],
)
def test_nac_mul_parametrizations(parametrization, formula):
    layer = built(NACMul(1, parametrization=parametrization))
    layer.w_hat.assign(W_HAT)
    if parametrization == "nac":
        layer.m_hat.assign(M_HAT)
    weights = numpy_weights(layer)
    assert sorted(weights) == ["kernel"]
    np.testing.assert_allclose(weights["kernel"], formula(), rtol=1e-6)
    # The forward pass multiplies with exactly these weights.
    x = np.array([[2.0, 3.0, 5.0]], "float32")
    expected = np.exp(np.log(np.abs(x) + layer.epsilon) @ weights["kernel"])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(x)), expected, 1e-5)


@pytest.mark.parametrize("separate", [False, True])
def test_nalu_gives_both_paths(separate):
    layer = built(NALU(1, separate_weights=separate))
    assign_nac(layer)
    if separate:
        layer.mul_w_hat.assign(-W_HAT)
        layer.mul_m_hat.assign(M_HAT)
    weights = numpy_weights(layer)
    assert sorted(weights) == ["kernel", "mul_kernel"]
    np.testing.assert_allclose(weights["kernel"], nac(W_HAT, M_HAT), rtol=1e-6)
    mul = nac(-W_HAT, M_HAT) if separate else nac(W_HAT, M_HAT)
    np.testing.assert_allclose(weights["mul_kernel"], mul, rtol=1e-6)


def test_inalu_gives_both_paths_and_not_the_gate():
    layer = built(iNALU(1))
    assign_nac(layer)
    layer.mul_w_hat.assign(M_HAT)
    layer.mul_m_hat.assign(W_HAT)
    weights = numpy_weights(layer)
    assert sorted(weights) == ["kernel", "mul_kernel"]
    np.testing.assert_allclose(weights["kernel"], nac(W_HAT, M_HAT), rtol=1e-6)
    np.testing.assert_allclose(weights["mul_kernel"], nac(M_HAT, W_HAT), rtol=1e-6)


def test_gated_nau_nmu_gives_both_units_clipped():
    layer = built(GatedNAUNMU(1))
    layer.nau.kernel.assign(RAW)
    layer.nmu.kernel.assign(RAW)
    weights = numpy_weights(layer)
    assert sorted(weights) == ["nau_kernel", "nmu_kernel"]
    np.testing.assert_allclose(weights["nau_kernel"], np.clip(RAW, -1, 1))
    np.testing.assert_allclose(weights["nmu_kernel"], np.clip(RAW, 0, 1))


@pytest.mark.parametrize("cls, names", [(NPU, 2), (RealNPU, 1)])
def test_npu_gives_its_exponents_not_the_gate(cls, names):
    layer = built(cls(1))
    layer.kernel.assign(RAW)
    weights = numpy_weights(layer)
    assert sorted(weights) == ["imaginary_kernel", "kernel"][2 - names :]
    np.testing.assert_allclose(weights["kernel"], RAW)


def test_sparsity_reader_converts_and_covers_dense():
    layer = built(NMU(1))
    layer.kernel.assign(RAW)
    weights = effective_weights(layer)
    assert isinstance(weights["kernel"], np.ndarray)
    np.testing.assert_allclose(weights["kernel"], np.clip(RAW, 0, 1))
    dense = keras.layers.Dense(1, use_bias=False)
    dense.build((None, 3))
    dense.kernel.assign(RAW)
    np.testing.assert_allclose(effective_weights(dense)["kernel"], RAW)
    assert effective_weights(keras.layers.ReLU()) == {}
