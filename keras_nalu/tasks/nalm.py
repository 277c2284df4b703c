"""The single-module task of the NALM benchmark: one unit, nine range pairs.

A unit maps 2 (or 10) inputs straight to the output t = a ∘ b, where a and b
are two of the inputs (subsets of one input each, no overlap); with 10
inputs the other 8 are distractors. Each of the nine interpolation ranges is
paired with its extrapolation range (Mistry et al.'s benchmark, and their
division and robust-NMU papers).
"""

from __future__ import annotations

import math

from keras_nalu._validation import check_positive_int
from keras_nalu.tasks.arithmetic import ArithmeticTask

#: The nine (interpolation range, extrapolation range) pairs, in the papers' order.
NALM_RANGES = (
    ("U[-20,-10]", "U[-40,-20]"),
    ("U[-2,-1]", "U[-6,-2]"),
    ("U[-1.2,-1.1]", "U[-6.1,-1.2]"),
    ("U[-0.2,-0.1]", "U[-2,-0.2]"),
    ("U[-2,2]", "U[-6,-2] ∪ U[2,6]"),
    ("U[0.1,0.2]", "U[0.2,2]"),
    ("U[1,2]", "U[2,6]"),
    ("U[1.1,1.2]", "U[1.2,6]"),
    ("U[10,20]", "U[20,40]"),
)

#: The input sizes of the benchmark: no distractor, and 8 distractors.
NALM_INPUT_SIZES = (2, 10)


def single_module_geometry(input_size: int) -> dict:
    """The task fields that make two one-input subsets out of `input_size` inputs.

    Example:

    >>> single_module_geometry(10)
    {'input_size': 10, 'subset_ratio': 0.1, 'overlap_ratio': 0.0, 'num_subsets': 2}
    """
    input_size = check_positive_int("single_module_geometry", "input_size", input_size)
    if input_size < 2:
        raise ValueError(
            "single_module_geometry expects input_size >= 2 (two operands). "
            f"Received: input_size={input_size!r}"
        )
    ratio = 1.0 / input_size
    if math.floor(ratio * input_size) != 1:  # float rounding below one input
        ratio = math.nextafter(ratio, 1.0)
    return {
        "input_size": input_size,
        "subset_ratio": ratio,
        "overlap_ratio": 0.0,
        "num_subsets": 2,
    }


def single_module_task(
    operation: str = "add",
    input_size: int = 2,
    interpolation_range=NALM_RANGES[6][0],
    extrapolation_range=NALM_RANGES[6][1],
    seed: int = 0,
    **overrides,
) -> ArithmeticTask:
    """The single-module task: t = a ∘ b for two of `input_size` inputs.

    Args:
        operation: "add", "sub", "mul" or "div" (any `ArithmeticTask`
            operation is accepted).
        input_size: 2 (a and b alone) or more (the rest are distractors; the
            seed places a and b, next to each other).
        interpolation_range, extrapolation_range: one of `NALM_RANGES`, or
            any ranges.
        seed: the experiment seed.
        **overrides: any other `ArithmeticTask` field (`batch_size`,
            `allow_zero_divisor`, ...).

    Returns:
        The `ArithmeticTask`; judge runs on it with
        `keras_nalu.evaluation.single_module_threshold`.

    Example:

    >>> from keras_nalu.tasks.nalm import single_module_task
    >>> task = single_module_task("div", input_size=10, seed=3)
    >>> task.subsets
    ((7, 8), (8, 9))

    Reference: Mistry, Farrahi & Hare, "A Primer for Neural Arithmetic Logic
    Modules" (2022), the single-module task; "Learning Division with Neural
    Arithmetic Logic Modules" (2021; 10 inputs).
    """
    return ArithmeticTask(
        operation=operation,
        interpolation_range=interpolation_range,
        extrapolation_range=extrapolation_range,
        seed=seed,
        **single_module_geometry(input_size),
        **overrides,
    )


__all__ = [
    "NALM_INPUT_SIZES",
    "NALM_RANGES",
    "single_module_geometry",
    "single_module_task",
]
