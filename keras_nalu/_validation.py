"""Argument checks and parsers shared by the package: one message shape everywhere.

Every check raises an `ArgumentError` (a `ValueError`) that names who asks
(`owner`), the argument and the value received, e.g. `"NMU expects units to
be an integer >= 1. Received: units=0"`, and returns the value in its plain
Python type.
"""

import math
import numbers
import re
from collections.abc import Iterable

from keras_nalu.errors import ArgumentError


def is_integer(value) -> bool:
    """An integer, not a bool (JSON and NumPy integers included)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    """A real number, not a bool (ints, floats, NumPy scalars)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_integer(owner: str, name: str, value, minimum: int) -> int:
    if not is_integer(value) or value < minimum:
        raise ArgumentError(
            owner, name, value, requirement=f"be an integer >= {minimum}"
        )
    return int(value)


def check_positive_int(owner: str, name: str, value) -> int:
    """`value` as an int, if it is an integer >= 1 (not a bool)."""
    return _check_integer(owner, name, value, 1)


MAX_STEPS = 2**31 - 1
"""The most optimizer steps one run may take: on JAX, Keras' optimizer and the
replica engine count steps in 32-bit integers, so a longer run cannot finish."""


def check_steps(owner: str, iterations: int, eval_every: int) -> None:
    """Refuses a budget beyond `MAX_STEPS` (counted in whole `eval_every` blocks).

    Example:

    >>> check_steps("run", 5_000_000, 1_000)  # the longest budget of the papers
    >>> check_steps("run", 10**30, 1_000)
    Traceback (most recent call last):
    ...
    keras_nalu.errors.ArgumentError: run expects iterations to be <= 2147483647 ...
    """
    per_block = min(eval_every, iterations)
    if -(-iterations // per_block) * per_block > MAX_STEPS:
        raise ArgumentError(
            owner,
            "iterations",
            iterations,
            requirement=f"be <= {MAX_STEPS} (2**31 - 1, counted in whole blocks "
            "of {eval_every} steps): JAX counts a run's steps in 32-bit integers, "
            "so a longer run cannot finish",
        )


def check_non_negative_int(owner: str, name: str, value) -> int:
    """`value` as an int, if it is an integer >= 0 (a seed, a step, a count)."""
    return _check_integer(owner, name, value, 0)


def _check_real(owner: str, name: str, value, bound: str, allow_zero: bool) -> float:
    valid = (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (value >= 0 if allow_zero else value > 0)
    )
    if not valid:
        raise ArgumentError(
            owner, name, value, requirement=f"be a finite number {bound}"
        )
    return float(value)


def check_non_negative(owner: str, name: str, value) -> float:
    """`value` as a float, if it is a finite real number >= 0."""
    return _check_real(owner, name, value, ">= 0", allow_zero=True)


def check_positive(owner: str, name: str, value) -> float:
    """`value` as a float, if it is a finite real number > 0."""
    return _check_real(owner, name, value, "> 0", allow_zero=False)


def check_bounds(owner: str, min_value, max_value) -> tuple[float, float]:
    """`(min_value, max_value)` as floats, if both are numbers (±inf too) in order.

    Example:

    >>> check_bounds("Clip", 0, 1)
    (0.0, 1.0)
    >>> check_bounds("Clip", 1, 0)
    Traceback (most recent call last):
    ...
    ValueError: Clip expects min_value <= max_value. Received: min_value=1, ...
    """
    for name, value in (("min_value", min_value), ("max_value", max_value)):
        if not is_real(value) or math.isnan(value):
            raise ValueError(
                f"{owner} expects {name} to be a number. Received: {name}={value!r}"
            )
    if min_value > max_value:
        raise ValueError(
            f"{owner} expects min_value <= max_value. "
            f"Received: min_value={min_value!r}, max_value={max_value!r}"
        )
    return float(min_value), float(max_value)


def check_choice(owner: str, name: str, value, choices) -> str:
    """`value`, if it is one of `choices`."""
    if value not in choices:
        raise ArgumentError(
            owner, name, value, requirement=f"be one of {sorted(choices)}"
        )
    return value


def check_seeds(owner: str, seeds: Iterable) -> list[int]:
    """`seeds` as a list of ints, if they are distinct integers >= 0, at least one.

    Example:

    >>> check_seeds("sweep", (3, 1))
    [3, 1]
    """
    try:
        seeds = list(seeds)
    except TypeError:
        raise ArgumentError(
            owner, "seeds", seeds, expectation="a list of seeds"
        ) from None
    if not seeds:
        raise ArgumentError(owner, "seeds", seeds, expectation="at least one seed")
    seen: set[int] = set()
    for seed in seeds:
        if not is_integer(seed) or seed < 0:
            raise ArgumentError(
                owner,
                "seeds",
                seeds,
                expectation="integer seeds >= 0",
                received={"seed": seed},
            )
        if seed in seen:
            raise ValueError(f"{owner} expects distinct seeds. Received: {seed} twice")
        seen.add(int(seed))
    return [int(seed) for seed in seeds]


_RANGE_PART = re.compile(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?")


def parse_ranges(
    owner: str,
    name: str,
    text: str,
    limit: int = 1_000_000,
    example: str = "0-99 or 0,3,7-9",
) -> list[int]:
    """The integers of `"0-2,7"`: ranges `a-b` (both ends in) and single values.

    The integers come in the order given, repeats kept; the callers decide
    whether a repeat is an error (seeds) or not (lengths).

    Args:
        owner: who asks, for the messages (`"sweep"`, `"mnist --seeds"`).
        name: the argument, for the messages (`"seeds"`, `"lengths"`).
        text: the list, e.g. `"0-99"` or `"1,10,100"`.
        limit: the most integers the list may name, so that a typo such as
            `0-1000000000` fails at once rather than fill the memory.
        example: a well-formed list, for the messages.

    Raises:
        ValueError: a part that is not `a` or `a-b` with `a <= b`, or more
            than `limit` integers.

    Example:

    >>> parse_ranges("sweep", "seeds", "0-2,10")
    [0, 1, 2, 10]
    """
    values: list[int] = []
    for part in str(text).split(","):
        match = _RANGE_PART.fullmatch(part)
        if not match:
            raise ArgumentError(owner, name, text, requirement=f"look like {example}")
        first, last = int(match[1]), int(match[2] or match[1])
        if last < first:
            raise ArgumentError(
                owner, name, text, problem=f"the range {part.strip()!r} is empty"
            )
        if len(values) + last - first >= limit:
            raise ArgumentError(
                owner, name, text, expectation=f"at most {limit:,} {name}"
            )
        values.extend(range(first, last + 1))
    return values
