"""NSR: sign and zero bits of a learned difference (Faber & Wattenhofer 2023)."""

import keras
import numpy as np
import pytest

from keras_nalu.evaluation.sparsity import effective_weights
from keras_nalu.layers import NSR
from tests.backend import (
    FLOAT_DTYPES_FUNCTIONS,
    gradients,
    steps_per_execution,
    to_numpy,
)
from tests.layers import contract
from tests.layers.contract import check_keras_round_trip, run_layer_test

VARIANTS = {
    # kwargs; five trainable weights (V₁, V₂, W±, W0, b), no losses. R = 3
    # runs every path R = 1 runs (the defaults: test_defaults_are_the_authors).
    "redundant_and_scaled": {"redundancy": 3, "scale": 0.5},
}


@pytest.mark.parametrize("kwargs", list(VARIANTS.values()), ids=list(VARIANTS))
def test_layer_contract(kwargs):
    run_layer_test(
        NSR,
        kwargs,
        reference=contract.nsr,
        expected_num_trainable_weights=5,
        expected_num_losses=0,
        input_range=(-3.0, 3.0),
    )


def test_defaults_are_the_authors():
    layer = NSR(2)
    layer.build((None, 3))
    assert (layer.redundancy, layer.scale) == (1, 1.0)
    assert isinstance(layer.operand_initializer, keras.initializers.GlorotNormal)
    assert isinstance(layer.bit_initializer, keras.initializers.GlorotNormal)
    assert isinstance(layer.bias_initializer, keras.initializers.Zeros)
    shapes = [tuple(w.shape) for w in layer.weights]
    assert shapes == [(3, 2), (3, 2), (1, 2), (1, 2), (2,)]


def comparator(sign, zero, bias, dtype="float32", scale=10.0):
    """An NSR comparing x0 with x1 by hand-set bit weights."""
    layer = NSR(1, scale=scale, dtype=dtype)
    layer.build((None, 2))
    layer.operand_1.assign([[30.0], [0.0]])
    layer.operand_2.assign([[0.0], [30.0]])
    layer.sign_kernel.assign([[sign]])
    layer.zero_kernel.assign([[zero]])
    layer.bias.assign([bias])
    return layer


# (W±, W0, b) of each comparison with λ = 10 on integers: S, Z ∈ {-1, 0, 1}.
COMPARISONS = {
    "gt": ((10.0, 0.0, -5.0), np.greater),
    "lt": ((-10.0, 0.0, -5.0), np.less),
    "geq": ((10.0, 0.0, 5.0), np.greater_equal),
    "leq": ((-10.0, 0.0, 5.0), np.less_equal),
    "eq": ((0.0, 10.0, 0.0), np.equal),
    "ne": ((0.0, -10.0, 0.0), np.not_equal),
}


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_each_comparison_holds_far_outside_small_numbers(name):
    weights, truth = COMPARISONS[name]
    layer = comparator(*weights)
    for base in (1.0, 1e3, 1e6):
        a = base * np.arange(1, 10, dtype="float64")
        pairs = np.array([(x, x + d) for x in a for d in (-2, -1, 0, 1, 2)])
        y = to_numpy(layer(pairs.astype("float32")))[:, 0]
        expected = truth(pairs[:, 0], pairs[:, 1]).astype("float64")
        np.testing.assert_allclose(y, expected, atol=0.01, err_msg=f"{name} {base}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES_FUNCTIONS)
def test_gradients_are_the_formulas(dtype):
    rng = np.random.default_rng(7)
    layer = NSR(2, redundancy=2, scale=0.7, dtype=dtype)
    layer.build((None, 3))
    for variable in layer.trainable_weights:
        variable.assign(rng.normal(size=variable.shape))
    x = rng.uniform(-2.0, 2.0, (6, 3)).astype(dtype)
    upstream = rng.normal(size=(6, 2)).astype(dtype)
    got = gradients(
        lambda: keras.ops.sum(keras.ops.multiply(layer(x), upstream)),
        layer.trainable_weights,
    )

    # dL/dz = upstream·y(1 - y); z = b + Σ W±S + Σ W0 Z, S = tanh(λd),
    # Z = 1 - 2S², d = x·p₁ - x·p₂, p = softmax(V) over the inputs.
    x64 = x.astype("float64")
    p1, p2 = (
        contract._softmax_over_inputs(contract.weight(layer, name))
        for name in ("operand_1", "operand_2")
    )
    difference = (x64 @ p1 - x64 @ p2).reshape(6, 2, 2)  # (batch, unit, r)
    sign = np.tanh(0.7 * difference)
    zero = 1.0 - 2.0 * sign**2
    y = contract.nsr(layer, x64)
    dz = upstream * y * (1.0 - y)  # (batch, unit)
    w_sign, w_zero = (
        contract.weight(layer, n).T for n in ("sign_kernel", "zero_kernel")
    )
    dd = dz[..., None] * (
        w_sign * 0.7 * (1.0 - sign**2) + w_zero * (-4.0 * sign) * 0.7 * (1.0 - sign**2)
    )
    dd = dd.reshape(6, 4)  # column u·R + r

    def by_operand(p, o):
        # ∂d/∂V[i, c] = ±p[i, c]·(x_i - o_c)
        return np.einsum("bc,ic,bic->ic", dd, p, x64[:, :, None] - o[:, None, :])

    expected = [
        by_operand(p1, x64 @ p1),
        -by_operand(p2, x64 @ p2),
        np.einsum("bu,bur->ru", dz, sign),
        np.einsum("bu,bur->ru", dz, zero),
        dz.sum(0),
    ]
    tolerance = 1e-10 if dtype == "float64" else 1e-4
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)


def test_learns_greater_than_on_digits_and_extrapolates():
    keras.utils.set_random_seed(0)
    digits = np.array([(i, j) for i in range(1, 10) for j in range(1, 10)], "float32")
    target = (digits[:, :1] > digits[:, 1:]).astype("float32")
    model = keras.Sequential([keras.Input((2,)), NSR(1)])
    model.compile(
        keras.optimizers.Adam(0.1), "mae", steps_per_execution=steps_per_execution(50)
    )
    # 300 full-batch steps in one epoch
    x, t = np.tile(digits, (300, 1)), np.tile(target, (300, 1))
    model.fit(x, t, batch_size=81, epochs=1, shuffle=False, verbose=0)
    far = 1e6 + np.array([(i, j) for i in range(5) for j in range(5)], "float32")
    y = model.predict(far, verbose=0)[:, 0]
    np.testing.assert_allclose(y, (far[:, 0] > far[:, 1]), atol=0.1)


def test_effective_weights_are_the_soft_selections():
    layer = NSR(2, redundancy=2)
    layer.build((None, 3))
    weights = effective_weights(layer)
    assert sorted(weights) == ["operand_1", "operand_2"]
    for value in weights.values():
        assert value.shape == (3, 4)
        np.testing.assert_allclose(value.sum(axis=0), np.ones(4), rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"units": 0}, "units=0"),
        ({"redundancy": 0}, "redundancy=0"),
        ({"redundancy": 1.5}, "redundancy=1.5"),
        ({"scale": 0.0}, "scale=0.0"),
        ({"scale": -1.0}, "scale=-1.0"),
        ({"dtype": "int32"}, "dtype='int32'"),
    ],
)
def test_bad_arguments_are_named_in_one_line(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        NSR(**{"units": 1, **kwargs})
    message = str(info.value)
    assert fragment in message and "\n" not in message


def _model():
    keras.utils.set_random_seed(4)
    inputs = keras.Input((3,))
    return keras.Model(inputs, NSR(2, redundancy=2, name="nsr")(inputs))


def _inputs():
    return np.random.default_rng(9).uniform(-2.0, 2.0, (4, 3)).astype("float32")


def test_keras_round_trip(tmp_path):
    loaded = check_keras_round_trip(_model(), _inputs(), tmp_path)
    assert loaded.get_layer("nsr").redundancy == 2
