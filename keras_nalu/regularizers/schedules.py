"""Strength schedules: λ(t), a plain function of the optimizer step.

A schedule is called with the optimizer step and returns the strength in
force then, the way optax keeps its schedules as `step -> value` functions:
`Constant`, `Ramp` (Madsen & Johansen 2020, eq. 14, or its exponential
form), `Growth` (Heim et al. 2020's β) and `Gate`, which the iNALU's loss
gate opens and closes around another schedule. Each scheduled regularizer
builds its own from its arguments (`ScheduledPenalty.make_schedule`);
`RegularizationSchedule` assigns it between steps or imposes one of its
own, and the replica engines tabulate it for a block of steps
(`keras_nalu.sweeps.engines.schedule.strength_table`).
"""

import math
from decimal import Decimal

from keras_nalu._validation import check_choice, check_non_negative

SCHEDULE_MODES = ("linear", "exp")


class Schedule:
    """λ(t): `schedule(step)` is the strength in force at optimizer step `step`."""

    #: whether λ changes with the step (a `Constant` does not).
    varies = True

    def __call__(self, step: float) -> float:
        raise NotImplementedError


class Constant(Schedule):
    """λ(t) = strength at every step.

    Example:

    >>> Constant(0.5)(10_000)
    0.5
    """

    varies = False

    def __init__(self, strength: float):
        self.strength = strength

    def __call__(self, step: float) -> float:
        return self.strength


class Ramp(Schedule):
    """λ(t) = strength · f(t), f rising from 0 at `start` towards 1 at `end`.

    "linear" is Madsen & Johansen (2020), eq. 14:

        f(t) = max(min((t - start) / (end - start), 1), 0)

    "exp" is f(t) = 1 - exp(-(t - start) / (end - start)) from `start` on;
    with start = 0 and end = 10⁵ it is the reference code's 1 - exp(-10⁻⁵·t).

    Args:
        strength: the full strength λ.
        start, end: the optimizer steps between which λ ramps.
        mode: "linear" or "exp".

    Example:

    >>> ramp = Ramp(10.0, start=100, end=300)
    >>> [ramp(t) for t in (0, 100, 150, 300, 1_000)]
    [0.0, 0.0, 2.5, 10.0, 10.0]
    """

    def __init__(self, strength: float, start: int, end: int, mode: str = "linear"):
        self.strength = strength
        self.start = start
        self.end = end
        self.mode = mode

    def factor(self, step: float) -> float:
        """f(t): the fraction of `strength` in force at `step`."""
        progress = (step - self.start) / (self.end - self.start)
        if progress <= 0:
            return 0.0
        if self.mode == "linear":
            return min(progress, 1.0)
        return 1.0 - math.exp(-progress)

    def __call__(self, step: float) -> float:
        return self.strength * self.factor(step)


class Growth(Schedule):
    """λ(t) = min(initial · rate^⌊t / every⌋, final): Heim et al.'s growing β.

    Computed in decimal arithmetic, as the reference code: 10⁻⁹ · 10 is
    exactly 10⁻⁸, not 1.0000000000000001e-08.

    Args:
        initial: λ at step 0.
        final: the cap λ reaches and keeps.
        rate: the factor applied every `every` steps.
        every: steps between two growths.

    Example:

    >>> growth = Growth(1e-9, 1e-7, rate=10.0, every=10_000)
    >>> [growth(t) for t in (0, 9_999, 10_000, 20_000, 90_000)]
    [1e-09, 1e-09, 1e-08, 1e-07, 1e-07]

    Reference: Heim, Pevný, Šmídl, "Neural Power Units", NeurIPS 2020, App. A.
    """

    def __init__(self, initial: float, final: float, rate: float, every: int):
        self.initial = initial
        self.final = final
        self.rate = rate
        self.every = every

    def __call__(self, step: float) -> float:
        value, cap = Decimal(str(self.initial)), Decimal(str(self.final))
        rate = Decimal(str(self.rate))
        for _ in range(max(int(step), 0) // self.every):
            if value >= cap:
                break
            value *= rate
        return float(min(value, cap))


class Gate(Schedule):
    """λ(t) = schedule(t) while the gate is open, else 0.

    The iNALU's loss gate (`keras_nalu.callbacks.LossGatedRegularization`)
    opens and closes it between epochs.

    Args:
        schedule: the schedule in force while open.
        open: whether the gate starts open.

    Example:

    >>> gate = Gate(Constant(0.05))
    >>> gate(100)
    0.0
    >>> gate.open = True
    >>> gate(100)
    0.05
    """

    def __init__(self, schedule: Schedule, open: bool = False):
        self.schedule = schedule
        self.open = bool(open)

    @property
    def varies(self) -> bool:
        return self.schedule.varies

    def __call__(self, step: float) -> float:
        return self.schedule(step) if self.open else 0.0


def strength_schedule(
    strength: float,
    start: int | None = None,
    end: int | None = None,
    mode: str = "linear",
) -> Schedule:
    """`Ramp(strength, start, end, mode)`, or `Constant(strength)` without a ramp."""
    if start is None:
        return Constant(strength)
    return Ramp(strength, start, end, mode)


def validate_schedule(owner: str, start, end, mode) -> None:
    """Checks a ramp's arguments; the messages name `owner`."""
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
