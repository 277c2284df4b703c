"""The checks of a subset-sum task: its fields and its operation's domain."""

from __future__ import annotations

import functools
import math
import numbers
import warnings

from keras_nalu._validation import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
)
from keras_nalu.errors import ArgumentError, ArgumentWarning, Verbatim
from keras_nalu.tasks.operations import OPERATIONS
from keras_nalu.tasks.ranges import Range
from keras_nalu.tasks.sampling import SPLITS

# Beyond 2**24 float32 no longer holds every integer: targets this large carry
# rounding errors larger than the paper's success thresholds.
_FLOAT32_EXACT_LIMIT = 2.0**24

# float32's largest number, (2 - 2**-23)·2**127: the tasks' data are float32,
# so a target beyond it is inf.
_FLOAT32_MAX = (2.0 - 2.0**-23) * 2.0**127


def _check_ratio(owner: str, name: str, value, allow_zero: bool) -> float:
    valid = (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (0 <= value if allow_zero else 0 < value)
        and value <= 1
    )
    if not valid:
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ArgumentError(owner, name, value, expectation=f"{{{name}}} in {interval}")
    return float(value)


class TaskChecks:
    """Validates and normalizes a task's fields (a mixin of `SubsetSumTask`).

    `__post_init__` checks every field, derives the subsets and refuses an
    operation outside its domain (division by a sum that can be 0, the root
    of negative sums, targets beyond float32's largest number) or warns
    about risky ones.
    """

    def __post_init__(self):
        owner = type(self).__name__
        normalize = functools.partial(object.__setattr__, self)
        normalize(
            "operation", check_choice(owner, "operation", self.operation, OPERATIONS)
        )
        for name in self._positive_int_fields():
            normalize(name, check_positive_int(owner, name, getattr(self, name)))
        normalize(
            "subset_ratio",
            _check_ratio(owner, "subset_ratio", self.subset_ratio, allow_zero=False),
        )
        normalize(
            "overlap_ratio",
            _check_ratio(owner, "overlap_ratio", self.overlap_ratio, allow_zero=True),
        )
        for name in ("seed", "validation_seed", "test_seed"):
            normalize(name, check_non_negative_int(owner, name, getattr(self, name)))
        for name in ("interpolation_range", "extrapolation_range"):
            normalize(name, Range.parse(getattr(self, name), name=name))
        if self.explicit_subsets is None:
            subsets = self._ratio_subsets()
        else:
            normalize("explicit_subsets", self._check_explicit_subsets())
            subsets = self.explicit_subsets
        # Not a field: derived once, so equality and config stay field-based.
        normalize("_subsets", subsets)
        self._check_operation_domain()

    def _positive_int_fields(self) -> tuple[str, ...]:
        return (
            "input_size",
            "num_subsets",
            "batch_size",
            "validation_size",
            "test_size",
        )

    def _check_operation_domain(self):
        owner = type(self).__name__
        # Only ArithmeticTask has the field; a unit that divides by values
        # near 0 (the NMRU) is trained there.
        allow_zero_divisor = getattr(self, "allow_zero_divisor", False)
        for split in SPLITS:
            name = f"{split}_range"
            value_range = getattr(self, name)
            if (
                self.operation == "div"
                and len(self.subsets) > 1
                and not allow_zero_divisor
                and self._divisor_may_be_zero(value_range, split)
            ):
                raise ArgumentError(
                    owner,
                    name,
                    Verbatim(value_range),
                    requirement="keep the divisor away from 0 (exclude 0; one sign "
                    "for a sum of several inputs); only a unit that adds ε to the "
                    "divisor (the NMRU, the NPUs) divides by values near 0: "
                    "{allow_zero_divisor}=True",
                    context={"operation": "div"},
                )
            if self.operation == "root" and value_range.lower < 0:
                raise ArgumentError(
                    owner,
                    name,
                    Verbatim(value_range),
                    requirement="hold no negative numbers: the root of a negative "
                    "subset sum is NaN, a target no model can fit",
                    context={"operation": "root"},
                )
            bound = self._target_bound(split)
            if bound > _FLOAT32_MAX:
                raise ArgumentError(
                    owner,
                    name,
                    Verbatim(value_range),
                    requirement=f"give targets within float32 (|t| <= "
                    f"{_FLOAT32_MAX:.4g}); it gives targets up to {bound:.3g}"
                    f"{self._steps_note(split)}, which are inf in float32: any "
                    "model's error on them is inf or NaN",
                    context={"operation": self.operation},
                )
        bound = self._target_bound("extrapolation")
        if bound > _FLOAT32_EXACT_LIMIT:
            warnings.warn(
                ArgumentWarning(
                    owner,
                    "extrapolation_range",
                    Verbatim(self.extrapolation_range),
                    problem=f"can produce targets up to {bound:.3g} on "
                    "{extrapolation_range=}"
                    f"{self._steps_note('extrapolation')}, beyond float32's "
                    "exact-integer range (2**24): rounding alone makes the MSE "
                    "large.",
                    received={},
                    context={"operation": self.operation},
                ),
                stacklevel=4,
            )

    def _divisor_may_be_zero(self, value_range, split: str) -> bool:
        """Whether a divisor, a subset sum over `value_range`, can be 0."""
        terms = self._steps(split) * max(end - start for start, end in self.subsets[1:])
        if terms == 1:  # one input: 0 only if a part of the range holds it
            return any(lo <= 0 <= hi for lo, hi in value_range.parts)
        return value_range.lower <= 0 <= value_range.upper

    def _target_bound(self, split: str) -> float:
        """An upper bound of |t| over `split`'s range (0 for ÷ and √)."""
        value_range = getattr(self, f"{split}_range")
        steps = self._steps(split)
        largest = max(abs(value_range.lower), abs(value_range.upper))
        sums = [steps * (end - start) * largest for start, end in self.subsets]
        if self.operation in ("add", "sub"):
            return sum(sums)
        if self.operation == "mul":
            return math.prod(sums)
        if self.operation == "squared":
            return sums[0] ** 2
        return 0.0  # div and root shrink values; their domain is checked above.
