"""Penalties whose strength λ lives in a variable and follows a schedule.

A Keras regularizer is usually a Python float times a penalty. A float is baked
into the traced training graph, so a schedule that changes it later is silently
ignored. Here the strength lives in a non-trainable `keras.Variable`, which the
`RegularizationSchedule` callback assigns from the optimizer's step counter.
The units list it among their variables (not their weights), so a train step
compiled with the model's variables as arguments (Keras' JAX trainer) reads
it too; a regularizer on a layer that is not a keras_nalu unit is scheduled
on TensorFlow only. `find_scheduled_regularizers` finds them in a model.
"""

import keras
from keras import ops

from keras_nalu._api import export
from keras_nalu._validation import check_non_negative
from keras_nalu.keras_utils import iter_layers
from keras_nalu.regularizers.schedules import (
    Schedule,
    strength_schedule,
    validate_schedule,
)


class ScheduledPenalty:
    """Base class: a penalty whose strength λ(t) is a variable, set by a schedule.

    With `start` and `end` the strength ramps from 0 to `strength` between those
    optimizer steps (driven by `RegularizationSchedule`); without them it is the
    constant `strength`. `schedule` is that λ(t), a
    `keras_nalu.regularizers.schedules.Schedule`.

    Args:
        strength: the full strength λ, `>= 0`.
        start: optimizer step at which the ramp begins, or None.
        end: optimizer step at which the ramp reaches `strength`, or None.
        mode: "linear" (Madsen & Johansen 2020, eq. 14) or "exp".
    """

    #: the key under which `RegularizationSchedule` reports the strength.
    log_name = "regularization_strength"

    #: whether a loss gate switches it on and off (`Saturation`).
    loss_gated = False

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
        self.schedule = self.make_schedule()
        self.current_strength = keras.Variable(
            self.strength_at(0),
            trainable=False,
            dtype=strength_dtype(),
            name=f"{self.log_name}",
        )

    def make_schedule(self) -> Schedule:
        """λ(t) from the arguments: the ramp, or the constant `strength`."""
        return strength_schedule(self.strength, self.start, self.end, self.mode)

    @property
    def scheduled(self) -> bool:
        """Whether λ changes with the step (and needs `RegularizationSchedule`)."""
        return self.schedule.varies

    def strength_at(self, step: float) -> float:
        """λ(t): the strength this penalty's own schedule gives at `step`."""
        return self.schedule(step)

    def assign_strength(self, value: float) -> None:
        self.current_strength.assign(float(value))

    def get_config(self):
        return {
            "strength": self.strength,
            "start": self.start,
            "end": self.end,
            "mode": self.mode,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def strength_dtype() -> str:
    """The dtype of a strength's variable: float32, or float64 in a float64 model.

    λ is then the schedule's value in a model that computes in float64
    (`keras.config.floatx()`), not its float32 rounding.
    """
    return "float64" if keras.config.floatx() == "float64" else "float32"


class ScheduledRegularizer(ScheduledPenalty, keras.regularizers.Regularizer):
    """Base class: a Keras weight regularizer `current_strength · penalty(W)`.

    See `ScheduledPenalty` for the strength and its schedule; subclasses
    define `penalty(w)`.
    """

    def penalty(self, w):
        raise NotImplementedError

    def __call__(self, w):
        return ops.cast(self.current_strength, w.dtype) * self.penalty(w)


def weight_regularizer_error(penalty) -> str:
    """Why `penalty`, a penalty on a unit's input and kernel, fits no weight."""
    return (
        f"{type(penalty).__name__} is not a weight regularizer: it reads a "
        "unit's input and kernel. Call it from the layer that owns the input "
        "and add the result with add_loss, instead of passing it as a "
        "weight's regularizer (kernel_regularizer=...)."
    )


def check_weight_regularizer(value):
    """`value`, unless it is a `ScheduledPenalty` that is not a weight regularizer."""
    if isinstance(value, ScheduledPenalty) and not isinstance(
        value, keras.regularizers.Regularizer
    ):
        raise ValueError(weight_regularizer_error(value))
    return value


@export
class Sum(keras.regularizers.Regularizer):
    """The sum of several regularizers on one weight.

    Each part keeps its own schedule: the modified Real NPU's exponents carry
    a ramped `UnitMagnitude` and Heim et al.'s growing `L1` at once.
    `RegularizationSchedule` and the units find the scheduled parts inside.

    Args:
        regularizers: the parts, regularizer objects or identifiers.

    Example:

    >>> import numpy as np, keras_nalu
    >>> from keras_nalu import regularizers
    >>> reg = regularizers.Sum([regularizers.L1(1.0), regularizers.UnitMagnitude()])
    >>> float(reg(np.array([[1.0], [0.5]], "float32")))
    1.0
    """

    def __init__(self, regularizers):
        parts = [keras.regularizers.get(part) for part in regularizers]
        if not parts or any(part is None for part in parts):
            raise ValueError(
                "Sum expects a non-empty list of regularizers. "
                f"Received: regularizers={regularizers!r}"
            )
        self.regularizers = [check_weight_regularizer(part) for part in parts]

    def __call__(self, w):
        total = self.regularizers[0](w)
        for part in self.regularizers[1:]:
            total = total + part(w)
        return total

    def parts(self) -> list:
        """Every regularizer inside, nested `Sum`s flattened."""
        found = []
        for part in self.regularizers:
            found.extend(part.parts() if isinstance(part, Sum) else [part])
        return found

    def get_config(self):
        return {
            "regularizers": [
                keras.regularizers.serialize(part) for part in self.regularizers
            ]
        }

    @classmethod
    def from_config(cls, config):
        return cls(
            [keras.regularizers.deserialize(part) for part in config["regularizers"]]
        )


def find_scheduled_regularizers(layer, sublayers: bool = True) -> list:
    """Every `ScheduledPenalty` that `layer` (a layer or a model) holds.

    A layer holds those it keeps as attributes (e.g. an R_z it calls itself)
    and those on its weights; the parts of a `Sum` count.

    Args:
        layer: any Keras layer or model.
        sublayers: also those of the layers nested in it (at any depth);
            with False, those of `layer` itself and of its weights.

    Returns:
        Each one once, in the order found.

    Example:

    >>> import keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((4,)), keras_nalu.layers.NAU(2),
    ...                           keras_nalu.layers.NMU(1)])
    >>> [r.log_name for r in find_scheduled_regularizers(model)]
    ['sparsity_strength', 'sparsity_strength']
    """
    found = {}
    for each in iter_layers(layer) if sublayers else [layer]:
        candidates = list(vars(each).values())
        candidates += [getattr(weight, "regularizer", None) for weight in each.weights]
        for candidate in candidates:
            parts = candidate.parts() if isinstance(candidate, Sum) else [candidate]
            for part in parts:
                if isinstance(part, ScheduledPenalty):
                    found.setdefault(id(part), part)
    return list(found.values())
