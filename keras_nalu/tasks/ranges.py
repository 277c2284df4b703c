"""Uniform input ranges, single or unions of parts, sampled with stateless ops."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from keras_nalu._optional import import_tensorflow
from keras_nalu._validation import is_integer, is_real
from keras_nalu.errors import ArgumentError, Verbatim
from keras_nalu.tasks._philox import philox_uniform

# "U[1, 2]", "[1,2]", "(1, 2)": one bracketed pair of bounds.
_BRACKETED_PART = re.compile(r"[\[(]([^\[\]()]*)[\])]")
# What may separate bracketed parts: the "U" prefixes and the union signs.
_UNION_FILLER = re.compile(r"[\sUu∪|+]*")


class OverlappingRangesWarning(UserWarning):
    """An extrapolation range that shares values with the interpolation range.

    Test inputs drawn from the training range do not test extrapolation, so
    the "extrapolation" verdict of such a task means little.
    """


def stateless_seed(seed):
    """The shape-[2] int64 seed of TensorFlow's stateless random ops.

    Args:
        seed: an integer `s` (read as the pair `(s, 0)`) or a pair of integers
            (tuple, list, NumPy array or tensor of shape `[2]`).

    Returns:
        An int64 tensor of shape `[2]`.
    """
    tf = import_tensorflow("stateless_seed")
    if is_integer(seed):
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


def _unparseable(name: str, value) -> ValueError:
    return ArgumentError(
        "Range",
        name,
        value,
        requirement="be a range such as 'U[1, 2]', '[-6, -2] ∪ [2, 6]', '1,2', "
        "'-6,-2;2,6', (lo, hi) or [(lo, hi), ...]",
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
    if len(items) == 2 and all(is_real(item) for item in items):
        return [(float(items[0]), float(items[1]))]
    parts = []
    for item in items:
        if isinstance(item, str | bytes) or not hasattr(item, "__len__"):
            raise _unparseable(name, value)
        if len(item) != 2 or not all(is_real(bound) for bound in item):
            raise _unparseable(name, value)
        parts.append((float(item[0]), float(item[1])))
    return parts


def _check_parts(parts, name: str) -> tuple[tuple[float, float], ...]:
    """Validates and normalizes parts: floats, sorted by lower bound."""
    if not parts:
        raise ArgumentError(
            "Range", name, parts, requirement="have at least one part (lower, upper)"
        )
    parts = tuple(sorted((float(lo), float(hi)) for lo, hi in parts))
    shown = Verbatim(_format_parts(parts))
    if not all(math.isfinite(bound) for part in parts for bound in part):
        raise ArgumentError("Range", name, shown, requirement="have finite bounds")
    if any(lo >= hi for lo, hi in parts):
        raise ArgumentError(
            "Range", name, shown, requirement="have lower < upper in every part"
        )
    # Parts that merely touch (hi == next lo) are accepted: they share one point.
    if any(left[1] > right[0] for left, right in zip(parts, parts[1:])):
        raise ArgumentError(
            "Range", name, shown, requirement="have parts that do not overlap"
        )
    return parts


#: A float32 draw in [0, 1) is a multiple of 2⁻²³, so a part U[l, h] is drawn
#: on a grid of cells (h − l)·2⁻²³ wide.
_CELL = 2.0**-23


def place_uniform(unit, scale, lows, highs, starts, boundaries, xp=np):
    """Maps numbers uniform in [0, 1) onto a range given as `Range.table`.

    For one part `U[l, h]` the value is `l + unit·(h − l)`; for a union, the
    position `unit · width` is laid along the parts one after the other, so
    each part is hit with probability proportional to its width. Written once
    for NumPy and JAX (`xp`), also for per-run tables under `jax.vmap`.

    Args:
        unit: float32 numbers in [0, 1).
        scale, lows, highs, starts, boundaries: the range's `table()`.
        xp: the array module, NumPy or `jax.numpy`.

    Returns:
        Values inside the range, of the shape of `unit`; never exactly 0 (see
        `Range`).
    """
    position = unit * scale
    values = lows[..., 0] + (position - starts[..., 0])
    low, high = lows[..., 0], highs[..., 0]
    # Part j starts at boundaries[j - 1]; a select per part, not a gather,
    # which is cheaper in a compiled step and the same arithmetic.
    for j in range(1, lows.shape[-1]):
        inside = position >= boundaries[..., j - 1]
        values = xp.where(inside, lows[..., j] + (position - starts[..., j]), values)
        low = xp.where(inside, lows[..., j], low)
        high = xp.where(inside, highs[..., j], high)
    # Rounding must not carry a value into a gap.
    return _never_zero(xp, xp.clip(values, low, high), low, high)


def _never_zero(xp, values, low, high):
    """0 becomes ±(h − l)·2⁻²³, the next grid point inside the part (`Range`).

    `xp` is NumPy, `jax.numpy` or TensorFlow (each has `where`).
    """
    cell = (high - low) * _CELL
    return xp.where(values == 0, xp.where(high > 0, cell, -cell), values)


@dataclasses.dataclass(frozen=True)
class Range:
    """A uniform range or a union of uniform ranges, e.g. U[-6,-2] ∪ U[2,6].

    A sample from `U[l₁, h₁] ∪ … ∪ U[lₙ, hₙ]` picks, for each element
    independently, part `j` with probability `(hⱼ − lⱼ) / Σᵢ (hᵢ − lᵢ)` (its
    share of the total width) and then draws uniformly within that part, so the
    union is sampled with a uniform density. Parts are kept sorted by their
    lower bound, must be non-empty (`lower < upper`), finite and must not
    overlap (touching at one point is allowed).

    A draw is never exactly 0: float32 draws lie on a grid, and on a range
    holding 0 the grid point 0 would come once in 2²³ draws, a divisor of 0
    and an infinite target on the division task (about one batch in
    6·10⁴ on U[-2, 2] with batches of 128). A 0 becomes the next grid point
    inside the part, ±(h − l)·2⁻²³. The papers draw in float64 (NumPy), where
    0 has probability 0.

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

    def table(self, num_parts: int | None = None) -> tuple[np.ndarray, ...]:
        """The range as float32 arrays for `place_uniform`, padded to `num_parts`.

        Returns `(scale, lows, highs, starts, boundaries)`: numbers uniform in
        [0, 1) times `scale` are positions along the parts laid end to end;
        part j covers positions from `starts[j]`, and `boundaries` are the
        positions where a part ends (+inf for padding). Ranges with fewer parts
        are padded with empty parts that no position reaches, so runs on
        different ranges can draw in one vectorized call.

        Args:
            num_parts: the number of parts to pad to; default, this range's.
        """
        count = len(self.parts) if num_parts is None else num_parts
        if count < len(self.parts):
            raise ValueError(
                f"Range.table expects num_parts >= {len(self.parts)}. "
                f"Received: num_parts={num_parts!r}"
            )
        lows = np.array([lo for lo, _ in self.parts], np.float32)
        highs = np.array([hi for _, hi in self.parts], np.float32)
        if len(self.parts) == 1:
            # TensorFlow's stateless_uniform(minval, maxval): the float32 width.
            scale = highs[0] - lows[0]
            starts = np.zeros(1, np.float32)
            boundaries = np.zeros(0, np.float32)
        else:
            widths = [hi - lo for lo, hi in self.parts]
            ends = np.cumsum(widths)
            scale = np.float32(ends[-1])
            starts = (ends - widths).astype(np.float32)
            boundaries = ends[:-1].astype(np.float32)
        pad = count - len(self.parts)
        return (
            np.float32(scale),
            np.concatenate([lows, np.full(pad, highs[-1], np.float32)]),
            np.concatenate([highs, np.full(pad, highs[-1], np.float32)]),
            np.concatenate([starts, np.full(pad, np.inf, np.float32)]),
            np.concatenate([boundaries, np.full(pad, np.inf, np.float32)]),
        )

    def place(self, unit, xp=np):
        """Maps numbers uniform in [0, 1) onto the range, uniformly.

        `place_uniform` with this range's `table`: the arithmetic `sample`
        does in TensorFlow, so `place(philox_uniform(shape, seed))` equals
        `sample(shape, seed)` bit for bit.

        Args:
            unit: float32 array of numbers in [0, 1).
            xp: the array module of `unit` (NumPy, or `jax.numpy`).

        Returns:
            An array of the shape and dtype of `unit` inside the range.
        """
        return place_uniform(unit, *self.table(), xp=xp)

    def sample_numpy(self, shape, seed) -> np.ndarray:
        """`sample` computed in NumPy: the same float32 values, without TensorFlow.

        Args:
            shape: output shape.
            seed: an integer or a pair of integers.

        Returns:
            A float32 NumPy array equal to `sample(shape, seed).numpy()`.

        Example:

        >>> from keras_nalu.tasks import Range
        >>> x = Range.parse("U[-6,-2] ∪ U[2,6]").sample_numpy((4,), seed=1)
        >>> [round(float(v), 2) for v in x]
        [5.03, -2.32, 2.8, -2.86]
        """
        return self.place(philox_uniform(shape, seed))

    def sample(self, shape, seed, dtype="float32"):
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
        tf = import_tensorflow("Range.sample")
        dtype = tf.as_dtype(dtype)
        seed = stateless_seed(seed)
        lows = tf.constant([lo for lo, _ in self.parts], dtype=dtype)
        highs = tf.constant([hi for _, hi in self.parts], dtype=dtype)
        if len(self.parts) == 1:
            values = tf.random.stateless_uniform(
                shape, seed, minval=lows[0], maxval=highs[0], dtype=dtype
            )
            values = tf.clip_by_value(values, lows[0], highs[0])
            return _never_zero(tf, values, lows[0], highs[0])
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
        low, high = tf.gather(lows, part), tf.gather(highs, part)
        return _never_zero(tf, tf.clip_by_value(values, low, high), low, high)

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
