"""The operations of the arithmetic tasks: + − × ÷ z² √z on the subset sums."""

from __future__ import annotations

import functools
import operator
import sys

OPERATIONS = ("add", "sub", "mul", "div", "squared", "root")
"""The operations of the arithmetic task: + − × ÷ z² √z (z² and √z use `a`)."""


def apply_operation(operation: str, sums):
    """`t = op(a₀, a₁, …)` on the subset sums.

    add: a₀ + a₁ + …; sub: a₀ − a₁ − …; mul: a₀·a₁·…; div: a₀ / a₁ / …;
    squared: a₀²; root: √a₀ (the last two use only the first subset). Works on
    tensors (in eager or graph mode) and on NumPy arrays alike, returning the
    same kind.

    Args:
        operation: one of `OPERATIONS`.
        sums: list of tensors or arrays `a_j` of equal shape.

    Returns:
        The target, of the shape of each `a_j`.

    Example:

    >>> from keras_nalu.tasks.operations import apply_operation
    >>> apply_operation("div", [6.0, 2.0, 3.0])
    1.0
    """
    first, rest = sums[0], sums[1:]
    if operation == "add":
        return functools.reduce(operator.add, rest, first)
    if operation == "sub":
        return functools.reduce(operator.sub, rest, first)
    if operation == "mul":
        return functools.reduce(operator.mul, rest, first)
    if operation == "div":
        return functools.reduce(operator.truediv, rest, first)
    if operation == "squared":
        return first * first
    if operation == "root":
        if is_tf_tensor(first):
            return sys.modules["tensorflow"].sqrt(first)
        return first**0.5
    raise ValueError(
        f"apply_operation expects operation to be one of {list(OPERATIONS)}. "
        f"Received: operation={operation!r}"
    )


def is_tf_tensor(x) -> bool:
    """Whether `x` is a TensorFlow tensor (never, if TensorFlow is not loaded)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and tf.is_tensor(x)
