"""Argument checks shared by the constructors: one message shape everywhere."""

import math
import numbers


def check_positive_int(owner: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            f"{owner} expects {name} to be an integer >= 1. Received: {name}={value!r}"
        )
    return int(value)


def check_non_negative(owner: str, name: str, value) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(
            f"{owner} expects {name} to be a finite number >= 0. "
            f"Received: {name}={value!r}"
        )
    return float(value)


def check_positive(owner: str, name: str, value) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(
            f"{owner} expects {name} to be a finite number > 0. "
            f"Received: {name}={value!r}"
        )
    return float(value)


def check_choice(owner: str, name: str, value, choices) -> str:
    if value not in choices:
        raise ValueError(
            f"{owner} expects {name} to be one of {sorted(choices)}. "
            f"Received: {name}={value!r}"
        )
    return value
