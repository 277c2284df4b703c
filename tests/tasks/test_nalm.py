"""The single-module task and the division check it needs (Mistry et al.)."""

import warnings

import pytest

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.presets import PRESETS
from keras_nalu.tasks import ArithmeticTask, Range
from keras_nalu.tasks.nalm import (
    NALM_INPUT_SIZES,
    NALM_RANGES,
    single_module_geometry,
    single_module_task,
)


def test_the_nine_range_pairs_are_the_papers():
    assert len(NALM_RANGES) == 9 and NALM_INPUT_SIZES == (2, 10)
    ranges = [(str(Range.parse(a)), str(Range.parse(b))) for a, b in NALM_RANGES]
    assert ranges[4] == ("U[-2, 2]", "U[-6, -2] ∪ U[2, 6]")
    assert ranges[6] == ("U[1, 2]", "U[2, 6]")
    for interpolation, extrapolation in NALM_RANGES:  # never share a value range
        assert not Range.parse(interpolation).overlap(Range.parse(extrapolation))


@pytest.mark.parametrize("input_size", [2, 3, 7, 10, 100])
def test_geometry_gives_two_adjacent_single_inputs(input_size):
    for seed in range(5):
        task = single_module_task("mul", input_size, seed=seed)
        (a0, a1), (b0, b1) = task.subsets
        assert (a1 - a0, b1 - b0, b0) == (1, 1, a1)
        assert 0 <= a0 and b1 <= input_size
    assert single_module_geometry(2)["subset_ratio"] == 0.5  # the papers' flags
    assert single_module_geometry(10)["subset_ratio"] == 0.1


def test_geometry_needs_two_inputs():
    with pytest.raises(ValueError, match="input_size=1"):
        single_module_geometry(1)


@pytest.mark.parametrize("operation", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("pair", range(9))
def test_every_cell_builds_without_warnings_except_division_around_zero(
    operation, pair
):
    interpolation, extrapolation = NALM_RANGES[pair]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if operation == "div" and pair == 4:  # U[-2, 2]: the divisor can be 0
            with pytest.raises(ValueError, match="allow_zero_divisor=True"):
                single_module_task(operation, 10, interpolation, extrapolation)
            task = single_module_task(
                operation, 10, interpolation, extrapolation, allow_zero_divisor=True
            )
        else:
            task = single_module_task(operation, 10, interpolation, extrapolation)
    assert task.input_size == 10


def test_one_input_divisors_may_come_from_a_union_around_zero():
    # The extrapolation range U[-6,-2] ∪ U[2,6] never holds 0: a divisor of one
    # input from it is fine; a sum of several can cancel to 0.
    single_module_task("div", 2, "U[1,2]", "U[-6,-2] ∪ U[2,6]")
    with pytest.raises(ValueError) as info:
        ArithmeticTask("div", extrapolation_range="U[-6,-2] ∪ U[2,6]")
    message = str(info.value)
    assert "extrapolation_range=U[-6, -2] ∪ U[2, 6]" in message
    assert "keep the divisor away from 0" in message and "\n" not in message


@pytest.mark.parametrize("interpolation", ["U[-2,2]", "U[0,1]", "U[-1,0]"])
def test_division_by_a_range_that_holds_zero_names_the_nmru(interpolation):
    with pytest.raises(ValueError) as info:
        single_module_task("div", 2, interpolation, "U[2,6]")
    message = str(info.value)
    assert f"interpolation_range={Range.parse(interpolation)}" in message
    assert "NMRU" in message and "\n" not in message
    # The presets whose output unit adds ε to the divisor say they may.
    safe = {name for name, preset in PRESETS.items() if preset.divides_near_zero}
    assert safe == {
        "npu",
        "real_npu",
        "single_dmu_add",
        "single_dmu_add_author",
        "single_dmu_sub",
        "single_dmu_sub_author",
        "single_nmru",
        "single_real_npu",
        "single_real_npu_div",
        "single_real_npu_modified",
    }
    task = single_module_task(
        "div", 2, interpolation, "U[2,6]", allow_zero_divisor=True
    )
    assert task.to_config()["allow_zero_divisor"] is True
    assert ArithmeticTask.from_config(task.to_config()) == task


def test_allow_zero_divisor_is_a_bool():
    with pytest.raises(ValueError, match="allow_zero_divisor='yes'"):
        ArithmeticTask(allow_zero_divisor="yes")


@pytest.mark.parametrize(
    "model, accepted",
    [("single_nmru", True), ("single_real_npu_modified", True), ("single_nmu", False)],
)
def test_experiment_config_divides_near_zero_only_with_a_safe_unit(model, accepted):
    fields = {
        "model": model,
        "operation": "div",
        **single_module_geometry(10),
        "interpolation_range": "U[-2,2]",
        "extrapolation_range": "U[-6,-2] ∪ U[2,6]",
    }
    if accepted:
        assert ExperimentConfig(**fields).task().allow_zero_divisor
    else:
        with pytest.raises(ValueError, match="allow_zero_divisor=True"):
            ExperimentConfig(**fields)
