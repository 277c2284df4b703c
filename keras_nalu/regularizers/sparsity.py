"""Penalties that pull weights to discrete values: sparsity, L1, |W| = 1, the box.

`Sparsity` (the NAU's and NMU's, Madsen & Johansen 2020), `L1` (the NPU's,
Heim et al. 2020), `UnitMagnitude` (the modified Real NPU's) and
`OutOfBounds` (for unclamped weights), with the units' paper defaults.
"""

from keras import ops

from keras_nalu import _ops
from keras_nalu._api import export
from keras_nalu._validation import (
    check_bounds,
    check_choice,
    check_positive,
    check_positive_int,
)
from keras_nalu.regularizers.scheduled import ScheduledRegularizer
from keras_nalu.regularizers.schedules import Growth


@export
class Sparsity(ScheduledRegularizer):
    """Pulls each weight towards the nearest of {-1, 0, 1} (or {0, 1}).

    "linear" shape (Madsen & Johansen 2020, eq. 6 and 11), the mean distance to the
    nearest discrete value:

        signed:   mean(min(|W|, |1 - |W||))     (NAU, W ∈ [-1, 1])
        unsigned: mean(min(|W|, |1 - W|))       (NMU, W ∈ [0, 1])

    "squared" shape: mean(W²(1 - |W|)²) (signed) or mean(W²(1 - W)²) (unsigned).
    Inside the unit's box these are exactly the paper's penalties; outside it
    they stay non-negative (the "no clamp" ablation of Madsen & Johansen (2020), App.
    C.3).

    Args:
        strength: λ_sparse, `>= 0`.
        start, end, mode: the schedule (see `ScheduledPenalty`).
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
        self.domain = check_choice("Sparsity", "domain", domain, ("signed", "unsigned"))
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def penalty(self, w):
        magnitude = _ops.absolute(w)
        # Distance from the upper discrete value: 1 for |W| (signed) or W.
        upper = 1.0 - (magnitude if self.domain == "signed" else w)
        if self.shape == "linear":
            return _ops.mean(_ops.minimum(magnitude, _ops.absolute(upper)))
        return _ops.mean(ops.square(w) * ops.square(upper))

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
        start, end, mode: the schedule (see `ScheduledPenalty`).

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
        self.min_value, self.max_value = check_bounds(
            "OutOfBounds", min_value, max_value
        )
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def penalty(self, w):
        return _ops.mean(ops.relu(w - self.max_value) + ops.relu(self.min_value - w))

    def get_config(self):
        return {
            **super().get_config(),
            "min_value": self.min_value,
            "max_value": self.max_value,
        }


@export
class L1(ScheduledRegularizer):
    """strength · mean(|W|) (or the sum): pulls every weight towards 0.

    The Neural Power Unit's sparsity penalty. Its strength β follows either the
    `ScheduledPenalty` ramp (linear or "exp" between `start` and `end`,
    driven by `RegularizationSchedule`) or, with `initial_strength`, Heim et
    al.'s growth: β starts at `initial_strength` and is multiplied by `growth`
    every `growth_every` optimizer steps until it reaches `strength`,

        β(t) = min(initial_strength · growth^⌊t / growth_every⌋, strength).

    The mean (the default reduction) keeps β comparable across layer sizes,
    as for `Sparsity`; `reduction="sum"` is Heim et al.'s Σ|W|.

    Args:
        strength: β (with `initial_strength`, the final β), `>= 0`.
        start, end, mode: the ramp (see `ScheduledPenalty`); not with
            `initial_strength`.
        reduction: "mean" or "sum" of |W|.
        initial_strength: β at step 0 of the growth schedule, in
            (0, strength]; None for the ramp.
        growth: the factor, > 1, applied every `growth_every` steps.
        growth_every: steps between two growths, an integer >= 1.

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.L1(0.5)
    >>> float(reg(np.array([[1.0], [-3.0]], "float32")))
    1.0
    >>> heim = keras_nalu.regularizers.L1(1e-7, initial_strength=1e-9)
    >>> [heim.strength_at(t) for t in (0, 9_999, 10_000, 20_000, 90_000)]
    [1e-09, 1e-09, 1e-08, 1e-07, 1e-07]

    Reference: Heim, Pevný, Šmídl, "Neural Power Units", NeurIPS 2020,
    §3 and App. A (β_start, β_end, β_growth, β_step).
    """

    log_name = "l1_strength"

    def __init__(
        self,
        strength: float = 1.0,
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
        reduction: str = "mean",
        initial_strength: float | None = None,
        growth: float = 10.0,
        growth_every: int = 10_000,
    ):
        self.reduction = check_choice("L1", "reduction", reduction, ("mean", "sum"))
        self.growth = check_positive("L1", "growth", growth)
        if self.growth <= 1.0:
            raise ValueError(f"L1 expects growth > 1. Received: growth={growth!r}")
        self.growth_every = check_positive_int("L1", "growth_every", growth_every)
        self.initial_strength = None
        if initial_strength is not None:
            self.initial_strength = check_positive(
                "L1", "initial_strength", initial_strength
            )
            if start is not None or end is not None:
                raise ValueError(
                    "L1 takes either a ramp (start, end) or a growth schedule "
                    "(initial_strength), not both. Received: "
                    f"start={start!r}, end={end!r}, "
                    f"initial_strength={initial_strength!r}"
                )
            if self.initial_strength > strength:
                raise ValueError(
                    "L1 expects initial_strength <= strength. Received: "
                    f"initial_strength={initial_strength!r}, strength={strength!r}"
                )
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def make_schedule(self):
        if self.initial_strength is None:
            return super().make_schedule()
        return Growth(
            self.initial_strength, self.strength, self.growth, self.growth_every
        )

    def penalty(self, w):
        magnitude = _ops.absolute(w)
        return ops.sum(magnitude) if self.reduction == "sum" else _ops.mean(magnitude)

    def get_config(self):
        return {
            **super().get_config(),
            "reduction": self.reduction,
            "initial_strength": self.initial_strength,
            "growth": self.growth,
            "growth_every": self.growth_every,
        }


@export
class UnitMagnitude(ScheduledRegularizer):
    """strength · mean(|1 - |W||): pulls each weight towards -1 or 1.

    The modified Real NPU's penalty on its exponents: 0 at W = ±1 (multiply
    or divide by an input), so a weight settles on a sign; a weight that
    should be 0 is left to the gate and to the L1 penalty. Ramped like the
    NAU's sparsity regularizer (`start`, `end`).

    Args:
        strength: the full strength, `>= 0`.
        start, end, mode: the schedule (see `ScheduledPenalty`).

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.UnitMagnitude()
    >>> float(reg(np.array([[1.0], [-1.0], [0.5], [0.0]], "float32")))
    0.375

    Reference: Mistry, Farrahi & Hare, "Learning Division with Neural
    Arithmetic Logic Modules" (2021), the modified Real NPU.
    """

    log_name = "unit_magnitude_strength"

    def penalty(self, w):
        return _ops.mean(_ops.absolute(1.0 - _ops.absolute(w)))


def nau_sparsity() -> Sparsity:
    """The NAU's default: λ = 0.01 ramped over steps 5·10³ → 5·10⁴ (Table 4)."""
    return Sparsity(strength=0.01, start=5_000, end=50_000, domain="signed")


def nmu_sparsity() -> Sparsity:
    """The NMU's default: λ = 10 ramped over steps 10⁶ → 2·10⁶ (Table 4)."""
    return Sparsity(strength=10.0, start=1_000_000, end=2_000_000, domain="unsigned")


def nmru_sparsity() -> Sparsity:
    """The NMRU's default: λ = 10 ramped over steps 5·10⁴ → 7.5·10⁴.

    Mistry et al.'s recipe for the 10-input division task (10⁵ steps).
    """
    return Sparsity(strength=10.0, start=50_000, end=75_000, domain="unsigned")
