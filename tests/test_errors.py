"""`ArgumentError`: a refused argument's name and value as data, one message."""

import pytest

from keras_nalu._validation import check_positive_int, parse_ranges
from keras_nalu.errors import ArgumentError, ArgumentWarning, Verbatim, literal


def test_the_owners_message_and_the_callers_words_come_from_the_fields():
    error = ArgumentError("NMU", "units", 0, requirement="be an integer >= 1")
    assert isinstance(error, ValueError)
    assert (error.owner, error.argument, error.value) == ("NMU", "units", 0)
    assert str(error) == "NMU expects units to be an integer >= 1. Received: units=0"
    assert error.in_words({"units": "--units"}) == (
        "--units must be an integer >= 1. Received: --units 0"
    )
    # an argument the caller gave no word for keeps its name
    assert error.in_words({}) == "units must be an integer >= 1. Received: units=0"


@pytest.mark.parametrize(
    "shape, owners, callers",
    [
        (
            {"expectation": "at least one seed"},
            "sweep expects at least one seed. Received: seeds=[]",
            "expected: at least one seed. Received: --seeds []",
        ),
        (
            {"problem": "{seeds} and {chunk_size} disagree"},
            "sweep: seeds and chunk_size disagree. Received: seeds=[]",
            "--seeds and --chunk-size disagree. Received: --seeds []",
        ),
        (
            {"requirement": "hold a seed", "context": {"operation": "root"}},
            "sweep with operation='root' expects seeds to hold a seed. Received: "
            "seeds=[]",
            "a run with --operation 'root' expects --seeds to hold a seed. "
            "Received: --seeds []",
        ),
        (
            {"problem": "{seeds=} is too short.", "received": {}},
            "sweep: seeds=[] is too short.",
            "--seeds [] is too short.",
        ),
    ],
)
def test_each_shape_of_message(shape, owners, callers):
    error = ArgumentError("sweep", "seeds", [], **shape)
    flags = {
        "seeds": "--seeds",
        "chunk_size": "--chunk-size",
        "operation": "--operation",
    }
    assert (str(error), error.in_words(flags)) == (owners, callers)


def test_verbatim_values_and_literal_braces():
    error = ArgumentError(
        "Range",
        "interpolation_range",
        Verbatim("U[1, 2]"),
        requirement="lie in " + literal("{0}"),
    )
    assert str(error) == (
        "Range expects interpolation_range to lie in {0}. "
        "Received: interpolation_range=U[1, 2]"
    )


def test_one_shape_is_given():
    with pytest.raises(TypeError, match="one of requirement"):
        ArgumentError("NMU", "units", 0)
    with pytest.raises(TypeError, match="one of requirement"):
        ArgumentError("NMU", "units", 0, requirement="a", problem="b")


def test_the_shared_checks_raise_it():
    with pytest.raises(ArgumentError) as raised:
        check_positive_int("NMU", "units", 0)
    assert raised.value.argument == "units" and raised.value.value == 0
    with pytest.raises(ArgumentError) as raised:
        parse_ranges("sweep", "seeds", "3-1")
    assert raised.value.in_words({"seeds": "--seeds"}) == (
        "the range '3-1' is empty. Received: --seeds '3-1'"
    )


def test_a_warning_about_an_argument_is_told_the_same_way():
    warning = ArgumentWarning(
        "ArithmeticTask",
        "extrapolation_range",
        Verbatim("U[2, 6]"),
        problem="can produce large targets on {extrapolation_range=}.",
        received={},
        context={"operation": "mul"},
    )
    assert isinstance(warning, UserWarning)
    assert str(warning) == (
        "ArithmeticTask with operation='mul' can produce large targets on "
        "extrapolation_range=U[2, 6]."
    )
    flags = {"operation": "--operation", "extrapolation_range": "--extrapolation-range"}
    assert warning.in_words(flags) == (
        "a run with --operation 'mul' can produce large targets on "
        "--extrapolation-range U[2, 6]."
    )
