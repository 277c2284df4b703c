"""Sparsity and out-of-bounds penalties whose strength follows a schedule.

A Keras regularizer is usually a Python float times a penalty. A float is baked
into the traced training graph, so a schedule that changes it later is silently
ignored. Here the strength lives in a non-trainable `keras.Variable`, which the
`RegularizationSchedule` callback assigns from the optimizer's step counter.
"""

import math

import keras
from keras import ops

from keras_nalu._api import export
from keras_nalu._validation import check_choice, check_non_negative

SCHEDULE_MODES = ("linear", "exp")


def schedule_factor(step: float, start: float, end: float, mode: str = "linear"):
    """The fraction of the full strength in force at optimizer step `step`.

    "linear" is seed 001 eq. 14: max(min((t - start) / (end - start), 1), 0).
    "exp" is 1 - exp(-(t - start) / (end - start)) from `start` on; with
    start = 0 and end = 10⁵ it equals the reference code's 1 - exp(-10⁻⁵·t).
    """
    progress = (step - start) / (end - start)
    if progress <= 0:
        return 0.0
    if mode == "linear":
        return min(progress, 1.0)
    return 1.0 - math.exp(-progress)


def validate_schedule(owner: str, start, end, mode) -> None:
    check_choice(owner, "mode", mode, SCHEDULE_MODES)
    if (start is None) != (end is None):
        raise ValueError(
            f"{owner} expects both start and end, or neither. "
            f"Received: start={start!r}, end={end!r}"
        )
    if start is None:
        return
    check_non_negative(owner, "start", start)
    check_non_negative(owner, "end", end)
    if start >= end:
        raise ValueError(
            f"{owner} expects start < end. Received: start={start!r}, end={end!r}"
        )


class ScheduledRegularizer(keras.regularizers.Regularizer):
    """Base class: `current_strength · penalty(W)`, the strength in a variable.

    With `start` and `end` the strength ramps from 0 to `strength` between those
    optimizer steps (driven by `RegularizationSchedule`); without them it is the
    constant `strength`.

    Args:
        strength: the full strength λ, `>= 0`.
        start: optimizer step at which the ramp begins, or None.
        end: optimizer step at which the ramp reaches `strength`, or None.
        mode: "linear" (seed 001 eq. 14) or "exp".
    """

    #: the key under which `RegularizationSchedule` reports the strength.
    log_name = "regularization_strength"

    def __init__(
        self,
        strength: float = 1.0,
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
    ):
        owner = type(self).__name__
        self.strength = check_non_negative(owner, "strength", strength)
        validate_schedule(owner, start, end, mode)
        self.start = None if start is None else int(start)
        self.end = None if end is None else int(end)
        self.mode = mode
        self.current_strength = keras.Variable(
            self.strength_at(0),
            trainable=False,
            dtype="float32",
            name=f"{self.log_name}",
        )

    @property
    def scheduled(self) -> bool:
        return self.start is not None

    def strength_at(self, step: float) -> float:
        """λ(t): the strength this regularizer's own schedule gives at `step`."""
        if not self.scheduled:
            return self.strength
        return self.strength * schedule_factor(step, self.start, self.end, self.mode)

    def assign_strength(self, value: float) -> None:
        self.current_strength.assign(float(value))

    def penalty(self, w):
        raise NotImplementedError

    def __call__(self, w):
        return ops.cast(self.current_strength, w.dtype) * self.penalty(w)

    def get_config(self):
        return {
            "strength": self.strength,
            "start": self.start,
            "end": self.end,
            "mode": self.mode,
        }


@export
class Sparsity(ScheduledRegularizer):
    """Pulls each weight towards the nearest of {-1, 0, 1} (or {0, 1}).

    "linear" shape (seed 001 eq. 6 and 11), the mean distance to the nearest
    discrete value:

        signed:   mean(min(|W|, |1 - |W||))     (NAU, W ∈ [-1, 1])
        unsigned: mean(min(|W|, |1 - W|))       (NMU, W ∈ [0, 1])

    "squared" shape: mean(W²(1 - |W|)²) (signed) or mean(W²(1 - W)²) (unsigned).
    Inside the unit's box these are exactly the paper's penalties; outside it
    they stay non-negative (the "no clamp" ablation of seed 001 App. C.3).

    Args:
        strength: λ_sparse, `>= 0`.
        start, end, mode: the schedule (see `ScheduledRegularizer`).
        shape: "linear" or "squared".
        domain: "signed" (weights in [-1, 1]) or "unsigned" (weights in [0, 1]).

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.Sparsity(domain="unsigned")
    >>> float(reg(np.full((3, 2), 0.5, "float32")))
    0.5

    Reference: Madsen & Johansen (2020), §2.2, §2.5, §2.7.
    """

    log_name = "sparsity_strength"

    def __init__(
        self,
        strength: float = 1.0,
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
        shape: str = "linear",
        domain: str = "signed",
    ):
        self.shape = check_choice("Sparsity", "shape", shape, ("linear", "squared"))
        self.domain = check_choice(
            "Sparsity", "domain", domain, ("signed", "unsigned")
        )
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def penalty(self, w):
        magnitude = ops.abs(w)
        # Distance from the upper discrete value: 1 for |W| (signed) or W.
        upper = 1.0 - (magnitude if self.domain == "signed" else w)
        if self.shape == "linear":
            return ops.mean(ops.minimum(magnitude, ops.abs(upper)))
        return ops.mean(ops.square(w) * ops.square(upper))

    def get_config(self):
        return {**super().get_config(), "shape": self.shape, "domain": self.domain}


@export
class OutOfBounds(ScheduledRegularizer):
    """mean(relu(W - max_value) + relu(min_value - W)): zero inside the box.

    With the default box [-1, 1] this is the reference code's R_oob =
    mean(relu(|W| - 1)); it matters only when the clamp is turned off.

    Args:
        strength: λ_oob, `>= 0` (reference default 1).
        min_value, max_value: the box.
        start, end, mode: the schedule (see `ScheduledRegularizer`).

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.OutOfBounds()
    >>> float(reg(np.array([[1.5], [-0.5]], "float32")))
    0.25

    Reference: stable-nalu's regularizer for unclamped NAU/NMU weights.
    """

    log_name = "out_of_bounds_strength"

    def __init__(
        self,
        strength: float = 1.0,
        min_value: float = -1.0,
        max_value: float = 1.0,
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
    ):
        if min_value > max_value:
            raise ValueError(
                "OutOfBounds expects min_value <= max_value. "
                f"Received: min_value={min_value!r}, max_value={max_value!r}"
            )
        self.min_value = float(min_value)
        self.max_value = float(max_value)
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def penalty(self, w):
        return ops.mean(
            ops.relu(w - self.max_value) + ops.relu(self.min_value - w)
        )

    def get_config(self):
        return {
            **super().get_config(),
            "min_value": self.min_value,
            "max_value": self.max_value,
        }


def nau_sparsity() -> Sparsity:
    """The NAU's default: λ = 0.01 ramped over steps 5·10³ → 5·10⁴ (Table 4)."""
    return Sparsity(strength=0.01, start=5_000, end=50_000, domain="signed")


def nmu_sparsity() -> Sparsity:
    """The NMU's default: λ = 10 ramped over steps 10⁶ → 2·10⁶ (Table 4)."""
    return Sparsity(strength=10.0, start=1_000_000, end=2_000_000, domain="unsigned")


def get(identifier, default_factory=None):
    """Like `keras.regularizers.get`; "sparsity" means the unit's paper default."""
    if identifier == "sparsity":
        if default_factory is None:
            raise ValueError(
                "'sparsity' names a unit's default regularizer; pass a "
                "keras_nalu.regularizers.Sparsity(...) instead here."
            )
        return default_factory()
    return keras.regularizers.get(identifier)
