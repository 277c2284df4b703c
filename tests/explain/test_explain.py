"""Tests for keras_nalu.explain: reading expressions out of hand-set models."""

import dataclasses
import sys
import warnings

import keras
import numpy as np
import pytest

from keras_nalu.explain import (
    Explanation,
    UnsupportedLayerError,
    compare_with_task,
    explain,
)
from keras_nalu.layers import (
    DMU,
    MCFC,
    NAC,
    NALU,
    NAU,
    NMRU,
    NMU,
    NPU,
    NSR,
    MCFCMul,
    NACMul,
    Piecewise,
    RealNPU,
)
from tests.helpers import mixed_subtraction, set_nac

sympy = pytest.importorskip("sympy")

INPUT_SIZE = 100
SUBSETS = ((13, 38), (26, 51))
PRODUCT = "sum(x[13:38]) * sum(x[26:51])"


@dataclasses.dataclass(frozen=True)
class ArithmeticTask:
    operation: str
    input_size: int = INPUT_SIZE
    subsets: tuple = SUBSETS


def subset_kernel(input_size, *subsets, sign=1.0):
    """An NAU kernel whose column j sums the inputs of subsets[j]."""
    kernel = np.zeros((input_size, len(subsets)), "float32")
    for column, (start, end) in enumerate(subsets):
        kernel[start:end, column] = sign
    return kernel


def nau_nmu(nau_kernel, nmu_kernel):
    model = keras.Sequential(
        [
            keras.Input((nau_kernel.shape[0],)),
            NAU(nau_kernel.shape[1], name="nau"),
            NMU(1, name="nmu"),
        ]
    )
    model.get_layer("nau").kernel.assign(nau_kernel)
    model.get_layer("nmu").kernel.assign(np.asarray(nmu_kernel, "float32"))
    return model


def model_numbers_match_expression(model, explanation, low=1.0, high=2.0):
    """The printed strings, parsed, give the model's outputs on random inputs."""
    size = len(explanation.input_names)
    x = np.random.default_rng(0).uniform(low, high, (16, size)).astype("float32")
    predicted = keras.ops.convert_to_numpy(model(x))
    symbols = [sympy.Symbol(name) for name in explanation.input_names]
    local = {"x": symbols, "sum": sum, **{str(s): s for s in symbols}}
    for column, text in enumerate(explanation.outputs):
        expression = sympy.parse_expr(text, local_dict=local)
        function = sympy.lambdify(symbols, expression, "numpy")
        expected = function(*x.T.astype("float64")) * np.ones(len(x))
        np.testing.assert_allclose(predicted[:, column], expected, rtol=1e-4)


@pytest.fixture
def product_solution():
    return nau_nmu(subset_kernel(INPUT_SIZE, *SUBSETS), [[1.0], [1.0]])


def test_solved_product_reads_as_product_of_subset_sums(product_solution):
    explanation = explain(product_solution)

    assert str(explanation) == f"y = {PRODUCT}"
    assert explanation.outputs == [PRODUCT]
    assert explanation.layers == [
        "nau: h0 = sum(x[13:38]); h1 = sum(x[26:51])",
        "nmu: y = h0 * h1",
    ]
    assert explanation.discrete
    assert explanation.deviations == []
    assert explanation.max_deviation == pytest.approx(0.0, abs=1e-7)
    model_numbers_match_expression(product_solution, explanation)


def test_solved_product_is_exact_and_equivalent_to_target(product_solution):
    explanation = explain(product_solution)
    written_out = "({}) * ({})".format(
        " + ".join(f"x{i}" for i in range(13, 38)),
        " + ".join(f"x{i}" for i in range(26, 51)),
    )

    comparison = compare_with_task(product_solution, ArithmeticTask("mul"))

    assert comparison.verdict == "exact"
    assert str(comparison).startswith("exact: the model computes " + PRODUCT)
    assert explanation.equivalent_to(written_out)
    assert not explanation.equivalent_to(written_out + " + x0")
    assert explanation.sympy()[0].expand() == sympy.parse_expr(written_out).expand()


def test_mirrored_solution_is_exact():
    # Both hidden sums negated: (-a)·(-b) = a·b, the NMU's other solution.
    model = nau_nmu(subset_kernel(INPUT_SIZE, *SUBSETS, sign=-1.0), [[1.0], [1.0]])

    explanation = explain(model)

    assert explanation.layers[0] == "nau: h0 = -sum(x[13:38]); h1 = -sum(x[26:51])"
    assert explanation.outputs == [PRODUCT]
    assert compare_with_task(explanation, ArithmeticTask("mul")).verdict == "exact"
    model_numbers_match_expression(model, explanation)


def test_one_negated_factor_is_exact_up_to_sign():
    kernel = subset_kernel(INPUT_SIZE, *SUBSETS)
    kernel[:, 1] *= -1.0

    explanation = explain(nau_nmu(kernel, [[1.0], [1.0]]))
    comparison = compare_with_task(explanation, ArithmeticTask("mul"))

    assert explanation.outputs == [f"-{PRODUCT}"]
    assert comparison.verdict == "exact up to sign"


def test_extra_input_is_a_wrong_subset_naming_it():
    kernel = subset_kernel(INPUT_SIZE, *SUBSETS)
    kernel[51, 1] = 1.0

    comparison = compare_with_task(
        nau_nmu(kernel, [[1.0], [1.0]]), ArithmeticTask("mul")
    )

    assert comparison.verdict == "wrong subset"
    assert "factor 2 (sum(x[26:52])) has extra input x51" in comparison.detail
    assert "factor 1" not in comparison.detail


def test_missing_input_is_a_wrong_subset_naming_it():
    kernel = subset_kernel(INPUT_SIZE, *SUBSETS)
    kernel[13, 0] = 0.0

    comparison = compare_with_task(
        nau_nmu(kernel, [[1.0], [1.0]]), ArithmeticTask("mul")
    )

    assert comparison.verdict == "wrong subset"
    assert "factor 1 (sum(x[14:38])) has missing input x13" in comparison.detail


def test_half_selected_nmu_weight_is_no_formula():
    # y = a·(0.5·b + 0.5): rounded to a·b, off by half of it.
    model = nau_nmu(subset_kernel(INPUT_SIZE, *SUBSETS), [[1.0], [0.5]])

    explanation = explain(model)
    comparison = compare_with_task(explanation, ArithmeticTask("mul"))

    assert not explanation.discrete
    assert explanation.max_deviation == pytest.approx(0.5)
    assert explanation.deviations == [("nmu", (1, 0), 0.5)]
    assert explanation.outputs == [PRODUCT]  # the rounded reading
    assert not explanation.matches_model
    assert explanation.differences[0] > 0.4
    text = str(explanation)
    assert text.startswith("no formula: the weights, rounded to their discrete ")
    assert "more than the tolerance 0.01" in text
    assert "1,000 inputs from U[1, 2] and 1,000 from U[2, 6]" in text
    assert text.endswith("; max deviation 0.5 at nmu[1,0]")
    assert PRODUCT not in text
    assert comparison.verdict == "no formula"
    assert "the nearest reading would be exact" in comparison.detail
    assert "the rounded weights read " + PRODUCT in comparison.detail


def test_weights_off_but_within_tolerance_of_the_predictions_are_approximate():
    # One weight of a 25-input sum at 0.995: off by 0.005 and so by at most
    # 0.005·6/25 of the prediction.
    kernel = subset_kernel(INPUT_SIZE, *SUBSETS)
    kernel[13, 0] = 0.995
    model = nau_nmu(kernel, [[1.0], [1.0]])

    explanation = explain(model, tolerance=0.002)

    assert explanation.matches_model
    assert not explanation.discrete
    assert 0 < explanation.differences[0] <= 0.002
    assert str(explanation).startswith(
        f"y = {PRODUCT}  [approximate: max deviation 0.005 at nau[13,0]; within "
    )
    verdict = compare_with_task(explanation, ArithmeticTask("mul")).verdict
    assert verdict == "not discrete"


def test_tolerance_decides_what_counts_as_discrete():
    model = nau_nmu(subset_kernel(INPUT_SIZE, *SUBSETS), [[1.0], [0.995]])

    assert explain(model, tolerance=0.01).discrete
    strict = explain(model, tolerance=0.001)
    assert not strict.discrete
    assert strict.max_deviation == pytest.approx(0.005, abs=1e-6)


def test_nau_nau_reads_a_minus_b():
    model = keras.Sequential(
        [keras.Input((5,)), NAU(2, name="nau_in"), NAU(1, name="nau_out")]
    )
    model.get_layer("nau_in").kernel.assign(subset_kernel(5, (0, 3), (2, 5)))
    model.get_layer("nau_out").kernel.assign([[1.0], [-1.0]])
    task = ArithmeticTask("sub", input_size=5, subsets=((0, 3), (2, 5)))

    explanation = explain(model)

    # A linear chain reads as its effective coefficients: x2 is in both
    # subsets and cancels.
    assert str(explanation) == "y = x0 + x1 - x3 - x4"
    assert explanation.layers[1] == "nau_out: y = h0 - h1"
    assert compare_with_task(explanation, task).verdict == "exact"
    added = compare_with_task(explanation, dataclasses.replace(task, operation="add"))
    assert added.verdict == "wrong subset"
    assert "coefficient -1 instead of +1 on x3, x4" in added.detail
    model_numbers_match_expression(model, explanation)


@pytest.mark.parametrize("tolerance", [0.01, 0.49])
def test_hidden_units_that_mix_the_inputs_read_as_what_they_compute(tolerance):
    model = mixed_subtraction()
    task = ArithmeticTask("sub", input_size=10, subsets=((6, 8), (7, 9)))

    explanation = explain(model, tolerance=tolerance)

    model_numbers_match_expression(model, explanation)
    assert str(explanation) == "y = x6 - x8"
    assert explanation.discrete and explanation.matches_model
    assert explanation.max_deviation < 1e-6
    assert compare_with_task(explanation, task).verdict == "exact"
    # Each layer alone, in its own inputs, still shows its weights.
    assert explanation.layers[1] == "output: y = h0 + h1"
    if tolerance == 0.01:
        assert explanation.layers[0] == (
            "hidden: h0 = x6; h1 = x6 - x8  [6 weight(s) off, worst 0.5 at hidden[6,0]]"
        )


def test_nac_then_nac_mul_reads_a_division():
    model = keras.Sequential(
        [keras.Input((4,)), NAC(2, name="nac"), NACMul(1, name="nac_mul")]
    )
    set_nac(model.get_layer("nac"), [[1, 0], [1, 0], [0, 1], [0, 1]])
    set_nac(model.get_layer("nac_mul"), [[1], [-1]])
    task = ArithmeticTask("div", input_size=4, subsets=((0, 2), (2, 4)))

    explanation = explain(model)

    assert str(explanation) == "y = (x0 + x1) / (x2 + x3)"
    assert explanation.layers == [
        "nac: h0 = x0 + x1; h1 = x2 + x3",
        "nac_mul: y = h0 / h1",
    ]
    assert explanation.discrete
    assert compare_with_task(explanation, task).verdict == "exact"
    multiply = compare_with_task(
        explanation, dataclasses.replace(task, operation="mul")
    )
    assert multiply.verdict == "wrong operation"
    model_numbers_match_expression(model, explanation)


def test_nac_sum_and_nmu_square():
    model = keras.Sequential([keras.Input((4,)), NAC(1, name="nac")])
    set_nac(model.get_layer("nac"), [[1], [1], [1], [-1]])
    squared = keras.Sequential(
        [keras.Input((4,)), NAU(2, name="nau"), NMU(1, name="nmu")]
    )
    squared.get_layer("nau").kernel.assign(subset_kernel(4, (0, 3), (0, 3)))
    squared.get_layer("nmu").kernel.assign([[1.0], [1.0]])
    task = ArithmeticTask("squared", input_size=4, subsets=((0, 3), (1, 3)))

    assert explain(model).outputs == ["sum(x[0:3]) - x3"]
    assert explain(squared).outputs == ["sum(x[0:3])**2"]
    assert compare_with_task(squared, task).verdict == "exact"
    model_numbers_match_expression(squared, explain(squared))


def nalu_model(gate_bias):
    model = keras.Sequential(
        [keras.Input((3,)), NALU(2, use_gate_bias=True, name="nalu")]
    )
    layer = model.get_layer("nalu")
    set_nac(layer, [[1, 1], [1, 0], [0, -1]])
    layer.gate.assign(np.zeros((3, 2), "float32"))
    layer.gate_bias.assign(np.asarray(gate_bias, "float32"))
    return model


def test_saturated_nalu_reads_as_its_selected_paths():
    model = nalu_model([20.0, -20.0])

    explanation = explain(model)

    assert explanation.outputs == ["x0 + x1", "x0 / x2"]
    assert str(explanation) == "y0 = x0 + x1\ny1 = x0 / x2"
    assert explanation.discrete
    assert "gate → additive" in explanation.layers[0]
    assert "gate → multiplicative" in explanation.layers[0]
    model_numbers_match_expression(model, explanation)


def test_free_nalu_gate_is_written_out_and_approximate():
    model = nalu_model([0.0, -20.0])

    explanation = explain(model)

    assert explanation.outputs == ["g0*(x0 + x1) + (1 - g0)*(x0 * x1)", "x0 / x2"]
    assert not explanation.discrete
    assert explanation.deviations == []
    assert "gate g0 of nalu (unit 0) is not saturated" in str(explanation)


def test_weights_that_are_not_finite_are_named_not_a_finite_one():
    model = keras.Sequential(
        [keras.Input((3,)), NAU(2, name="nau"), NMU(1, name="nmu")], name="m"
    )
    model.get_layer("nau").kernel.assign([[1.0, 0.0], [0.81, 1.0], [0.0, 1.0]])
    model.get_layer("nmu").kernel.assign([[np.nan], [np.inf]])

    explanation = explain(model)

    assert str(explanation) == (
        "no formula: 2 weights are not finite: m/nmu/kernel[0,0] = nan, "
        "m/nmu/kernel[1,0] = inf"
    )
    assert explanation.non_finite == [
        ("m/nmu/kernel", (0, 0), pytest.approx(np.nan, nan_ok=True)),
        ("m/nmu/kernel", (1, 0), np.inf),
    ]
    assert np.isnan(explanation.max_deviation) and not explanation.discrete
    assert not explanation.matches_model


def test_a_linear_chain_that_is_not_finite_is_named_without_numpy_warnings():
    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(2, use_bias=False, name="hidden"),
            keras.layers.Dense(1, use_bias=False, name="output"),
        ],
        name="linear",
    )
    model.get_layer("hidden").kernel.assign(np.full((3, 2), np.nan, "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # NaN cast to integers
        explanation = explain(model)
    assert str(explanation).startswith(
        "no formula: 6 weights are not finite: linear/hidden/kernel[0,0] = nan, "
    )
    assert str(explanation).endswith("and 3 more")


def test_a_nalu_gate_that_is_not_finite_is_named_not_called_free():
    model = nalu_model([np.nan, -20.0])
    explanation = explain(model)
    assert "not saturated" not in str(explanation)
    assert str(explanation).count("1 weight is not finite: ") == 2
    assert "nalu/gate_bias[0] = nan" in str(explanation)


def test_nalu_gate_is_judged_on_sample_inputs():
    model = nalu_model([0.0, -20.0])
    model.get_layer("nalu").gate.assign([[10.0, 0.0], [10.0, 0.0], [0.0, 0.0]])
    sample = np.random.default_rng(1).uniform(1.0, 2.0, (64, 3))

    # By default, on inputs drawn from U[1, 2] and U[2, 6]: g = σ(10·(x0 + x1)).
    assert explain(model).outputs == ["x0 + x1", "x0 / x2"]
    explanation = explain(model, sample_inputs=sample)

    assert explanation.outputs == ["x0 + x1", "x0 / x2"]
    assert explanation.discrete
    assert explanation.sample == "64 sample inputs"
    negative = explain(model, sample_inputs=-sample)
    assert negative.outputs[0] == "x0 * x1"


def test_magnitudes_multiplied_on_negative_inputs_are_no_formula():
    # NAC• computes |x0|·|x1|·|x2|: the formula x0 * x1 * x2 on positive
    # inputs, and not on negative ones.
    model = keras.Sequential([keras.Input((3,)), NACMul(1, name="nac_mul")])
    set_nac(model.get_layer("nac_mul"), [[1], [1], [1]])

    assert str(explain(model)) == "y = x0 * x1 * x2"
    negative = explain(model, input_ranges=["U[-2, -1]"])

    assert negative.outputs == ["x0 * x1 * x2"] and negative.discrete
    assert str(negative) == (
        "no formula: the weights, rounded to their discrete values, give an "
        "expression that differs from the model's predictions by up to 2 "
        "(relative), more than the tolerance 0.01, on 1,000 inputs from "
        "U[-2, -1]"
    )


def test_functional_model_with_input_names():
    inputs = keras.Input((4,))
    hidden = NAU(2, name="nau")(inputs)
    model = keras.Model(inputs, NMU(1, name="nmu")(hidden))
    model.get_layer("nau").kernel.assign([[1, 0], [1, 0], [0, 1], [0, -1.0]])
    model.get_layer("nmu").kernel.assign([[1.0], [1.0]])

    assert str(explain(model)) == "y = (x0 + x1) * (x2 - x3)"
    named = explain(model, input_names=["a", "b", "c", "d"])
    assert named.outputs == ["(a + b) * (c - d)"]
    assert named.equivalent_to("a*c - a*d + b*c - b*d")


def test_linear_dense_without_bias_is_read_like_an_nau():
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(1, use_bias=False, name="linear")]
    )
    model.get_layer("linear").kernel.assign([[1.0], [-1.0], [0.3]])

    explanation = explain(model)

    assert explanation.outputs == ["x0 - x1"]
    assert explanation.deviations == [("linear", (2, 0), pytest.approx(0.3))]


@pytest.mark.parametrize(
    "layer, shape, class_name",
    [
        (keras.layers.Dense(2, activation="relu", name="hidden_relu"), (3,), "Dense"),
        (keras.layers.Dense(2, name="biased"), (3,), "Dense"),
        (keras.layers.Conv1D(2, 1, name="conv"), (3, 1), "Conv1D"),
    ],
)
def test_unsupported_layer_raises_naming_it(layer, shape, class_name):
    model = keras.Sequential([keras.Input(shape), layer])
    if layer.name == "biased":
        layer.bias.assign([0.5, 0.0])

    with pytest.raises(UnsupportedLayerError, match=f"'{layer.name}'.*{class_name}"):
        explain(model)
    assert issubclass(UnsupportedLayerError, ValueError)


def test_unsupported_layer_after_a_unit_is_named():
    model = keras.Sequential(
        [keras.Input((3,)), NAU(2, name="nau"), keras.layers.ReLU(name="relu")]
    )

    with pytest.raises(ValueError, match="'relu' \\(ReLU\\)"):
        explain(model)


def test_branching_functional_model_is_rejected():
    inputs = keras.Input((3,))
    left, right = NAU(1, name="left")(inputs), NAU(1, name="right")(inputs)
    model = keras.Model(inputs, keras.layers.Add(name="add")([left, right]))

    with pytest.raises(ValueError, match="not a chain: layer 'right'"):
        explain(model)


def test_sympy_missing_names_the_extra(product_solution, monkeypatch):
    explanation = explain(product_solution)
    monkeypatch.setitem(sys.modules, "sympy", None)

    with pytest.raises(ImportError, match=r"keras-arithmetic-units\[symbolic\]"):
        explanation.sympy()
    with pytest.raises(ImportError, match="symbolic"):
        compare_with_task(explanation, ArithmeticTask("mul"))


def test_explanation_is_a_plain_dataclass(product_solution):
    explanation = explain(product_solution)

    assert isinstance(explanation, Explanation)
    assert dataclasses.asdict(explanation)["outputs"] == [PRODUCT]


def test_linear_chain_merges_hidden_rows_into_effective_coefficients():
    # The hidden rows split the inputs arbitrarily (as a trained NAU does);
    # the readout is the one linear form they compute together.
    model = keras.Sequential(
        [keras.Input((12,)), NAU(2, name="nau_in"), NAU(1, name="nau_out")]
    )
    kernel = np.zeros((12, 2), "float32")
    kernel[[0, 2, 4, 5, 6], 0] = 1.0  # first subset [0, 8), overlap [4, 8)
    kernel[[1, 3, 7], 1] = 1.0
    kernel[4:12, 1] += 1.0  # second subset [4, 12)
    model.get_layer("nau_in").kernel.assign(np.clip(kernel, -1, 1))
    model.get_layer("nau_out").kernel.assign([[1.0], [1.0]])
    # Inputs 4, 5, 6 are in both rows (coefficient 2); x7's two entries in
    # row 1 clip to one weight of 1.
    expected = "y = sum(x[0:4]) + 2*sum(x[4:7]) + sum(x[7:12])"
    assert str(explain(model)) == expected


def single_unit(layer, input_size):
    return keras.Sequential([keras.Input((input_size,)), layer])


def test_nmru_reads_a_signed_division():
    layer = NMRU(2, name="nmru")
    model = single_unit(layer, 3)
    # rows x0, x1, x2, then 1/x0, 1/x1, 1/x2: columns x0 / x2 and x1·x2 / x0
    layer.kernel.assign(
        np.array([[1, 0], [0, 1], [0, 1], [0, 1], [0, 0], [1, 0]], "float32")
    )
    task = ArithmeticTask("div", input_size=3, subsets=((0, 1), (2, 3)))

    explanation = explain(model)

    assert explanation.outputs == ["x0 / x2", "x1 * x2 / x0"]
    assert explanation.discrete
    model_numbers_match_expression(model, explanation, low=-2.0, high=-1.0)
    divide = single_unit(NMRU(1, name="divide"), 3)
    divide.get_layer("divide").kernel.assign(
        np.array([[1], [0], [0], [0], [0], [1]], "float32")
    )
    assert compare_with_task(explain(divide), task).verdict == "exact"


def test_nmru_half_selected_reciprocal_is_not_discrete():
    layer = NMRU(1, name="nmru")
    model = single_unit(layer, 2)
    layer.kernel.assign(np.array([[1], [0], [0], [0.4]], "float32"))

    explanation = explain(model)

    assert explanation.outputs == ["x0"]
    assert not explanation.discrete
    assert explanation.deviations == [
        ("nmru.reciprocal_kernel", (1, 0), pytest.approx(0.4))
    ]


def test_real_npu_reads_exponents_its_gate_lets_through():
    layer = RealNPU(1, name="npu")
    model = single_unit(layer, 3)
    layer.kernel.assign(np.array([[1.0], [-1.0], [1.0]], "float32"))
    layer.gate.assign(np.array([1.0, 1.0, 0.0], "float32"))  # x2 gated off

    explanation = explain(model)

    assert explanation.outputs == ["x0 / x1"]
    assert explanation.discrete
    model_numbers_match_expression(model, explanation, low=-3.0, high=-1.0)
    layer.gate.assign(np.array([1.0, 0.7, 0.0], "float32"))
    assert explain(model).deviations == [("npu.gate", (1, 0), pytest.approx(0.7))]


def test_complex_npu_is_unsupported():
    with pytest.raises(UnsupportedLayerError, match="'npu'.*NPU.*complex"):
        explain(single_unit(NPU(1, name="npu"), 2))


def test_mcfc_reads_the_selected_sum():
    layer = MCFC(2, name="mcfc")
    model = single_unit(layer, 3)
    # each input sends its mass to one output; both gates saturated
    layer.junction.assign(
        np.array([[20.0, -20.0], [20.0, -20.0], [-20.0, 20.0]], "float32")
    )
    layer.gate_kernel.assign(np.array([[20.0, 20.0]], "float32"))

    explanation = explain(model)

    assert explanation.outputs == ["x0 + x1", "x2"]
    assert explanation.discrete
    model_numbers_match_expression(model, explanation)


def test_mcfc_mul_reads_a_product_and_flags_its_bias():
    layer = MCFCMul(1, name="mcfc_mul")
    model = single_unit(layer, 2)
    layer.gate_kernel.assign(np.array([[20.0]], "float32"))

    explanation = explain(model)

    assert explanation.outputs == ["x0 * x1"]
    assert explanation.discrete
    model_numbers_match_expression(model, explanation)
    layer.bias.assign(np.array([0.2], "float32"))  # y = e^0.2 · x0·x1
    assert explain(model).deviations == [("mcfc_mul.bias", (0, 0), pytest.approx(0.2))]


def dmu_model(initialization, gate_bias):
    layer = DMU(2, initialization=initialization, name="dmu")
    model = single_unit(layer, 2)
    layer.gate_kernel.assign(np.zeros((2, 4), "float32"))
    layer.gate_bias.assign(np.asarray(gate_bias, "float32"))  # linear, then log
    return model


def test_dmu_reads_the_domain_its_gate_picks():
    model = dmu_model("sub", [5.0, -5.0, -5.0, 5.0])

    explanation = explain(model)

    assert explanation.outputs == ["x0 - x1", "x0 / x1"]
    assert explanation.discrete
    assert "gate → linear" in explanation.layers[0]
    model_numbers_match_expression(model, explanation, low=-3.0, high=-1.0)
    assert explain(dmu_model("add", [-5.0, 5.0, 5.0, -5.0])).outputs == [
        "x0 * x1",
        "x0 + x1",
    ]


def test_dmu_gate_that_changes_with_the_inputs_is_written_out():
    model = dmu_model("add", [0.0, 0.0, 5.0, -5.0])
    # The first gate's logits follow LayerNorm(x): linear where x0 > x1.
    model.get_layer("dmu").gate_kernel.assign(
        np.array([[5.0, 0.0, -5.0, 0.0], [-5.0, 0.0, 5.0, 0.0]], "float32")
    )

    explanation = explain(model)

    assert explanation.outputs == ["g0*(x0 + x1) + (1 - g0)*(x0 * x1)", "x0 + x1"]
    assert not explanation.discrete
    assert "gate g0 of dmu (unit 0) mixes both" in str(explanation)


@pytest.mark.parametrize(
    "layer, reason",
    [
        (NSR(1, name="nsr"), "probability that a comparison"),
        (Piecewise(NSR(1), NAU(1), NAU(1), name="piecewise"), "switches between"),
    ],
)
def test_comparisons_are_not_read_and_say_why(layer, reason):
    with pytest.raises(UnsupportedLayerError, match=f"'{layer.name}'.*{reason}"):
        explain(single_unit(layer, 2))
