"""Uniform input ranges, single or unions of parts, sampled with stateless ops."""

from __future__ import annotations

import dataclasses
import math
import numbers
import re

import numpy as np
import tensorflow as tf

# "U[1, 2]", "[1,2]", "(1, 2)": one bracketed pair of bounds.
_BRACKETED_PART = re.compile(r"[\[(]([^\[\]()]*)[\])]")
# What may separate bracketed parts: the "U" prefixes and the union signs.
_UNION_FILLER = re.compile(r"[\sUu∪|+]*")


class OverlappingRangesWarning(UserWarning):
    """An extrapolation range that shares values with the interpolation range.

    Test inputs drawn from the training range do not test extrapolation, so
    the "extrapolation" verdict of such a task means little.
    """


def stateless_seed(seed) -> tf.Tensor:
    """The shape-[2] int64 seed of TensorFlow's stateless random ops.

    Args:
        seed: an integer `s` (read as the pair `(s, 0)`) or a pair of integers
            (tuple, list, NumPy array or tensor of shape `[2]`).

    Returns:
        An int64 tensor of shape `[2]`.
    """
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return tf.constant([int(seed), 0], dtype=tf.int64)
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
    if seed.shape.rank is not None and seed.shape != (2,):
        raise ValueError(
            f"A stateless seed is an integer or a pair of integers. "
            f"Received: seed with shape {seed.shape}"
        )
    return seed


def _format_number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _format_parts(parts) -> str:
    return " ∪ ".join(
        f"U[{_format_number(lo)}, {_format_number(hi)}]" for lo, hi in parts
    )


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _unparseable(name: str, value) -> ValueError:
    return ValueError(
        "Range expects a range such as 'U[1, 2]', '[-6, -2] ∪ [2, 6]', '1,2', "
        f"'-6,-2;2,6', (lo, hi) or [(lo, hi), ...]. Received: {name}={value!r}"
    )


def _parse_pair(text: str, name: str, value) -> tuple[float, float]:
    bounds = text.split(",")
    if len(bounds) != 2:
        raise _unparseable(name, value)
    try:
        return float(bounds[0]), float(bounds[1])
    except ValueError:
        raise _unparseable(name, value) from None


def _parts_from_string(text: str, name: str) -> list[tuple[float, float]]:
    stripped = text.strip()
    if ";" in stripped:
        return [_parse_pair(piece, name, text) for piece in stripped.split(";")]
    bracketed = _BRACKETED_PART.findall(stripped)
    if bracketed:
        filler = _BRACKETED_PART.sub(" ", stripped)
        if not _UNION_FILLER.fullmatch(filler):
            raise _unparseable(name, text)
        return [_parse_pair(piece, name, text) for piece in bracketed]
    return [_parse_pair(stripped, name, text)]


def _parts_from_sequence(value, name: str) -> list[tuple[float, float]]:
    items = list(value)
    if len(items) == 2 and all(_is_number(item) for item in items):
        return [(float(items[0]), float(items[1]))]
    parts = []
    for item in items:
        if isinstance(item, str | bytes) or not hasattr(item, "__len__"):
            raise _unparseable(name, value)
        if len(item) != 2 or not all(_is_number(bound) for bound in item):
            raise _unparseable(name, value)
        parts.append((float(item[0]), float(item[1])))
    return parts


def _check_parts(parts, name: str) -> tuple[tuple[float, float], ...]:
    """Validates and normalizes parts: floats, sorted by lower bound."""
    if not parts:
        raise ValueError(
            f"Range expects at least one part (lower, upper). "
            f"Received: {name}={parts!r}"
        )
    parts = tuple(sorted((float(lo), float(hi)) for lo, hi in parts))
    shown = _format_parts(parts)
    if not all(math.isfinite(bound) for part in parts for bound in part):
        raise ValueError(f"Range expects finite bounds. Received: {name}={shown}")
    if any(lo >= hi for lo, hi in parts):
        raise ValueError(
            f"Range expects lower < upper in every part. Received: {name}={shown}"
        )
    # Parts that merely touch (hi == next lo) are accepted: they share one point.
    if any(left[1] > right[0] for left, right in zip(parts, parts[1:])):
        raise ValueError(
            f"Range expects non-overlapping parts. Received: {name}={shown}"
        )
    return parts


@dataclasses.dataclass(frozen=True)
class Range:
    """A uniform range or a union of uniform ranges, e.g. U[-6,-2] ∪ U[2,6].

    A sample from `U[l₁, h₁] ∪ … ∪ U[lₙ, hₙ]` picks, for each element
    independently, part `j` with probability `(hⱼ − lⱼ) / Σᵢ (hᵢ − lᵢ)` (its
    share of the total width) and then draws uniformly within that part, so the
    union is sampled with a uniform density. Parts are kept sorted by their
    lower bound, must be non-empty (`lower < upper`), finite and must not
    overlap (touching at one point is allowed).

    Build one with `Range.parse`, which accepts every usual spelling and names
    the offending parameter in its error messages.

    Args:
        parts: the `(lower, upper)` bounds of every part.

    Example:

    >>> from keras_nalu.tasks import Range
    >>> r = Range.parse("U[-6,-2] ∪ U[2,6]")
    >>> str(r), r.lower, r.upper
    ('U[-6, -2] ∪ U[2, 6]', -6.0, 6.0)
    >>> bool(r.contains(r.sample((1000,), seed=(1, 2)).numpy()).all())
    True

    Reference: Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020, §4.1
    and Fig. 3 (the union range U[-6,-2] ∪ U[2,6]).
    """

    parts: tuple[tuple[float, float], ...]

    def __post_init__(self):
        object.__setattr__(self, "parts", _check_parts(self.parts, "parts"))

    @classmethod
    def parse(cls, value, name: str = "range") -> Range:
        """Reads a range from any of its usual spellings.

        Accepted: a `Range`; a pair `(lo, hi)`; a sequence of pairs
        `[(lo, hi), (lo, hi)]` (what `to_config` returns); strings `"1,2"`,
        `"U[1,2]"`, `"[-6,-2]u[2,6]"`, `"U[-6,-2] ∪ U[2,6]"`, `"-6,-2;2,6"`.

        Args:
            value: the range to read.
            name: the parameter the value was given for; error messages name
                it, e.g. `"interpolation_range"`.

        Returns:
            The `Range`.

        Raises:
            ValueError: if `value` cannot be read, has no part, an empty or
                inverted part (`lower >= upper`), a non-finite bound or
                overlapping parts.

        Example:

        >>> from keras_nalu.tasks import Range
        >>> Range.parse("-6,-2;2,6") == Range.parse([(-6, -2), (2, 6)])
        True
        """
        if isinstance(value, Range):
            return value
        if isinstance(value, bytes):
            value = value.decode()
        if isinstance(value, str):
            parts = _parts_from_string(value, name)
        elif isinstance(value, np.ndarray | list | tuple):
            parts = _parts_from_sequence(value, name)
        else:
            raise _unparseable(name, value)
        return cls(_check_parts(parts, name))

    @property
    def lower(self) -> float:
        """The smallest value of the range: the minimum of the lower bounds."""
        return min(lo for lo, _ in self.parts)

    @property
    def upper(self) -> float:
        """The largest value of the range: the maximum of the upper bounds."""
        return max(hi for _, hi in self.parts)

    @property
    def width(self) -> float:
        """The total width of the parts (the measure of the union)."""
        return sum(hi - lo for lo, hi in self.parts)

    def sample(self, shape, seed, dtype="float32") -> tf.Tensor:
        """Draws a tensor of independent samples with stateless random ops.

        For a union, each element picks a part at random with probability
        proportional to the part's width, then is uniform within it. The same
        `(shape, seed, dtype)` always gives the same tensor.

        Args:
            shape: output shape (list, tuple or 1-D int tensor).
            seed: an integer or a shape-`[2]` integer pair (tuple or tensor),
                as for `tf.random.stateless_uniform`.
            dtype: a floating dtype; default float32.

        Returns:
            A tensor of `shape` and `dtype` whose every element lies in the
            range.
        """
        dtype = tf.as_dtype(dtype)
        seed = stateless_seed(seed)
        lows = tf.constant([lo for lo, _ in self.parts], dtype=dtype)
        highs = tf.constant([hi for _, hi in self.parts], dtype=dtype)
        if len(self.parts) == 1:
            values = tf.random.stateless_uniform(
                shape, seed, minval=lows[0], maxval=highs[0], dtype=dtype
            )
            return tf.clip_by_value(values, lows[0], highs[0])
        # One uniform draw over the total width, mapped piecewise onto the
        # parts: the part is chosen with probability proportional to its width.
        widths = [hi - lo for lo, hi in self.parts]
        ends = np.cumsum(widths)
        starts = tf.constant(ends - widths, dtype=dtype)
        position = tf.random.stateless_uniform(
            shape, seed, minval=0.0, maxval=float(ends[-1]), dtype=dtype
        )
        boundaries = tf.constant(ends[:-1], dtype=dtype)
        part = tf.reduce_sum(
            tf.cast(position[..., tf.newaxis] >= boundaries, tf.int32), axis=-1
        )
        values = tf.gather(lows, part) + (position - tf.gather(starts, part))
        # Rounding must not carry a value into a gap.
        return tf.clip_by_value(values, tf.gather(lows, part), tf.gather(highs, part))

    def contains(self, x) -> np.ndarray:
        """Elementwise membership in the closed parts, computed in NumPy.

        Bounds are compared in the dtype of `x`, so a float32 sample of
        `U[0.1, 0.2]` is judged against float32(0.1) and float32(0.2).

        Args:
            x: array-like (NumPy array, tensor, number).

        Returns:
            A boolean NumPy array of the shape of `x`.
        """
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float64)
        inside = np.zeros(x.shape, dtype=bool)
        for lo, hi in self.parts:
            inside |= (x >= x.dtype.type(lo)) & (x <= x.dtype.type(hi))
        return inside

    def overlap(self, other: Range) -> tuple[tuple[float, float], ...]:
        """The intervals of positive width that `self` and `other` share.

        Ranges that only touch (`U[1,2]` and `U[2,6]` share the point 2) do
        not overlap: the result is empty.

        Args:
            other: another `Range` (or any spelling `Range.parse` reads).

        Returns:
            The shared `(lower, upper)` intervals, sorted; empty if none.

        Example:

        >>> from keras_nalu.tasks import Range
        >>> Range.parse("U[1,3]").overlap(Range.parse("U[2,6]"))
        ((2.0, 3.0),)
        >>> Range.parse("U[1,2]").overlap(Range.parse("U[2,6]"))
        ()
        """
        other = Range.parse(other, name="other")
        shared = []
        for lo, hi in self.parts:
            for other_lo, other_hi in other.parts:
                lower, upper = max(lo, other_lo), min(hi, other_hi)
                if lower < upper:
                    shared.append((lower, upper))
        return tuple(sorted(shared))

    def to_config(self) -> list[list[float]]:
        """The parts as a JSON-native list of `[lower, upper]` lists.

        `Range.parse` reads it back.
        """
        return [[lo, hi] for lo, hi in self.parts]

    def __str__(self) -> str:
        return _format_parts(self.parts)
