"""Range: parsing, formatting, validation and stateless sampling."""

import json
import math

import numpy as np
import pytest
import tensorflow as tf

from keras_nalu.tasks import Range

UNION = ((-6.0, -2.0), (2.0, 6.0))

# The interpolation -> extrapolation ranges of Madsen & Johansen, Fig. 3.
FIGURE_3_RANGES = [
    "U[-2,-1]",
    "U[-6,-2]",
    "U[-2,2]",
    "U[-6,-2] ∪ U[2,6]",
    "U[0,1]",
    "U[1,5]",
    "U[0.1,0.2]",
    "U[0.2,2]",
    "U[1.1,1.2]",
    "U[1.2,6]",
    "U[1,2]",
    "U[2,6]",
    "U[10,20]",
    "U[20,40]",
]


@pytest.mark.parametrize(
    "value, parts",
    [
        ((1, 2), ((1.0, 2.0),)),
        ([1.5, 2.5], ((1.5, 2.5),)),
        (np.array([1.0, 2.0]), ((1.0, 2.0),)),
        ([(-6, -2), (2, 6)], UNION),
        ([[-6.0, -2.0], [2.0, 6.0]], UNION),
        ("1,2", ((1.0, 2.0),)),
        ("U[1,2]", ((1.0, 2.0),)),
        ("U[1, 2]", ((1.0, 2.0),)),
        ("[1e-1, 2E-1]", ((0.1, 0.2),)),
        ("[-6,-2]u[2,6]", UNION),
        ("U[-6,-2] ∪ U[2,6]", UNION),
        ("U[-6, -2] U U[2, 6]", UNION),
        ("-6,-2;2,6", UNION),
        (" -6 , -2 ; 2 , 6 ", UNION),
        ("[2,6]u[-6,-2]", UNION),  # parts are sorted
        (Range(UNION), UNION),
    ],
)
def test_parse_spellings(value, parts):
    assert Range.parse(value).parts == parts


@pytest.mark.parametrize(
    "parts, text",
    [
        (((1.0, 2.0),), "U[1, 2]"),
        (UNION, "U[-6, -2] ∪ U[2, 6]"),
        (((0.1, 0.2),), "U[0.1, 0.2]"),
        (((1.1, 1.2), (1.5, 2.0)), "U[1.1, 1.2] ∪ U[1.5, 2]"),
    ],
)
def test_str_and_config_round_trip(parts, text):
    value_range = Range(parts)
    assert str(value_range) == text
    assert Range.parse(text) == value_range
    config = json.loads(json.dumps(value_range.to_config()))
    assert config == [list(part) for part in parts]
    assert Range.parse(config) == value_range


def test_lower_upper_width():
    value_range = Range.parse("U[-6,-2] ∪ U[2,6]")
    assert (value_range.lower, value_range.upper, value_range.width) == (-6, 6, 8)


def test_equal_ranges_hash_equal():
    assert hash(Range.parse("1,2")) == hash(Range.parse("U[1, 2]"))


@pytest.mark.parametrize(
    "value, shown",
    [
        ("U[2,1]", "interpolation_range=U[2, 1]"),
        ("U[1,1]", "interpolation_range=U[1, 1]"),
        ((1, math.inf), "interpolation_range=U[1, inf]"),
        ("U[nan,1]", "interpolation_range=U[nan, 1]"),
        ([], "interpolation_range=[]"),
        ("", "interpolation_range=''"),
        ("[1,3]u[2,4]", "interpolation_range=U[1, 3] ∪ U[2, 4]"),
        ("U[1,2] x U[3,4]", "interpolation_range='U[1,2] x U[3,4]'"),
        ("one,two", "interpolation_range='one,two'"),
        ("1,2,3", "interpolation_range='1,2,3'"),
        ([(1, 2, 3)], "interpolation_range=[(1, 2, 3)]"),
        (["1,2"], "interpolation_range=['1,2']"),
        (5, "interpolation_range=5"),
        (None, "interpolation_range=None"),
    ],
)
def test_invalid_ranges_name_parameter_and_value(value, shown):
    with pytest.raises(ValueError) as info:
        Range.parse(value, name="interpolation_range")
    assert shown in str(info.value)


def test_default_name_and_direct_construction_validate():
    with pytest.raises(ValueError, match=r"range=U\[2, 1\]"):
        Range.parse("U[2, 1]")
    with pytest.raises(ValueError, match=r"parts=U\[3, 0\]"):
        Range(((3.0, 0.0),))


def test_touching_parts_are_allowed():
    assert Range.parse("[0,1]u[1,2]").parts == ((0.0, 1.0), (1.0, 2.0))


def test_contains_closed_and_gap():
    value_range = Range.parse("U[-6,-2] ∪ U[2,6]")
    x = np.array([-6.5, -6.0, -4.0, -2.0, -1.9, 0.0, 1.9, 2.0, 4.0, 6.0, 6.1])
    expected = [False, True, True, True, False, False, False, True, True, True, False]
    np.testing.assert_array_equal(value_range.contains(x), expected)
    assert value_range.contains(tf.constant([[3.0]])).shape == (1, 1)
    assert value_range.contains(3).dtype == bool


@pytest.mark.parametrize("text", FIGURE_3_RANGES)
def test_samples_lie_in_range(text):
    value_range = Range.parse(text)
    x = value_range.sample((2000, 7), seed=(3, 4))
    assert x.dtype == tf.float32 and x.shape == (2000, 7)
    assert value_range.contains(x.numpy()).all()
    # Uniform: covers both ends of the range.
    span = value_range.upper - value_range.lower
    assert x.numpy().min() < value_range.lower + 0.01 * span
    assert x.numpy().max() > value_range.upper - 0.01 * span


def test_union_uses_every_part_in_proportion_to_width():
    value_range = Range.parse("U[-6,-2] ∪ U[2,6]")
    x = value_range.sample((20_000,), seed=(0, 1)).numpy()
    assert value_range.contains(x).all()
    assert not ((x > -2) & (x < 2)).any()
    assert 0.47 < (x < 0).mean() < 0.53
    # Widths 1 and 3: a quarter of the samples fall in the first part.
    uneven = Range.parse("[0,1]u[2,5]")
    y = uneven.sample((20_000,), seed=(0, 2)).numpy()
    assert uneven.contains(y).all()
    assert 0.23 < (y <= 1).mean() < 0.27
    # Uniform within a part.
    assert 0.47 < ((y > 2) & (y < 3.5)).mean() / (y >= 2).mean() < 0.53


def test_three_parts():
    value_range = Range.parse("[-3,-2]u[0,1]u[5,6]")
    x = value_range.sample((6000,), seed=9).numpy()
    assert value_range.contains(x).all()
    counts = [((x >= lo) & (x <= hi)).mean() for lo, hi in value_range.parts]
    np.testing.assert_allclose(counts, [1 / 3] * 3, atol=0.03)


@pytest.mark.parametrize("text", ["U[1,2]", "U[-6,-2] ∪ U[2,6]"])
def test_sample_is_stateless(text):
    value_range = Range.parse(text)
    first = value_range.sample((50,), seed=(1, 2)).numpy()
    np.testing.assert_array_equal(
        first, value_range.sample((50,), seed=tf.constant([1, 2])).numpy()
    )
    assert not np.array_equal(first, value_range.sample((50,), seed=(1, 3)).numpy())
    # An integer seed s means (s, 0).
    np.testing.assert_array_equal(
        value_range.sample((5,), seed=7).numpy(),
        value_range.sample((5,), seed=(7, 0)).numpy(),
    )


def test_sample_in_graph_and_float64():
    value_range = Range.parse("U[-6,-2] ∪ U[2,6]")

    @tf.function
    def draw(seed):
        return value_range.sample((4, 3), seed)

    x = draw(tf.constant([5, 6], tf.int64))
    np.testing.assert_array_equal(x.numpy(), value_range.sample((4, 3), (5, 6)))
    y = value_range.sample((10,), seed=1, dtype="float64")
    assert y.dtype == tf.float64 and value_range.contains(y.numpy()).all()


def test_float32_bounds_of_inexact_decimals():
    value_range = Range.parse("U[0.1,0.2]")
    x = value_range.sample((50_000,), seed=(2, 2)).numpy()
    assert value_range.contains(x).all()


def test_bad_seed_shape():
    with pytest.raises(ValueError, match="seed"):
        Range.parse("1,2").sample((3,), seed=(1, 2, 3))


@pytest.mark.parametrize(
    "text, unit, cell",
    [
        ("U[-2,2]", 0.5, 4 * 2.0**-23),  # 0 inside the range
        ("U[0,1]", 0.0, 2.0**-23),  # 0 at its lower bound
        ("U[-2,-1] ∪ U[0,1]", 0.5, 2.0**-23),  # at the lower bound of a part
    ],
)
def test_a_draw_is_never_exactly_zero(text, unit, cell):
    # The unit that lands on 0 lands on the next grid point inside the part.
    value_range = Range.parse(text)
    placed = value_range.place(np.array([unit], np.float32))
    assert placed[0] == np.float32(cell) and value_range.contains(placed).all()
    # Seed (20, 0) draws the unit 0.5 at element 818,766: TensorFlow's draw
    # and NumPy's agree there too, and neither holds a 0.
    from keras_nalu.tasks._philox import philox_uniform

    shape, seed = (1 << 20,), (20, 0)
    assert philox_uniform(shape, seed)[818_766] == np.float32(0.5)
    numpy_draw = value_range.sample_numpy(shape, seed)
    np.testing.assert_array_equal(numpy_draw, value_range.sample(shape, seed).numpy())
    assert not (numpy_draw == 0).any() and value_range.contains(numpy_draw).all()
