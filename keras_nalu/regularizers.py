"""Sparsity and out-of-bounds penalties whose strength follows a schedule.

A Keras regularizer is usually a Python float times a penalty. A float is baked
into the traced training graph, so a schedule that changes it later is silently
ignored. Here the strength lives in a non-trainable `keras.Variable`, which the
`RegularizationSchedule` callback assigns from the optimizer's step counter.
The units list it among their variables (not their weights), so a train step
compiled with the model's variables as arguments (Keras' JAX trainer) reads
it too; a regularizer on a layer that is not a keras_nalu unit is scheduled
on TensorFlow only.
"""

import math
from decimal import Decimal

import keras
from keras import ops

from keras_nalu import _ops
from keras_nalu._api import export
from keras_nalu._validation import (
    check_choice,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
)

SCHEDULE_MODES = ("linear", "exp")


def schedule_factor(step: float, start: float, end: float, mode: str = "linear"):
    """The fraction of the full strength in force at optimizer step `step`.

    "linear" is Madsen & Johansen (2020), eq. 14: max(min((t - start) / (end - start),
    1), 0). "exp" is 1 - exp(-(t - start) / (end - start)) from `start` on; with
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
        mode: "linear" (Madsen & Johansen 2020, eq. 14) or "exp".
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


def held_scheduled_regularizers(layer, weights=None) -> list[ScheduledRegularizer]:
    """The `ScheduledRegularizer`s `layer` keeps as attributes or on `weights`.

    The parts of a `Sum` count as held.

    Args:
        layer: any Keras layer (or model).
        weights: the variables whose `regularizer` to include; default the
            layer's own (not its sublayers').

    Returns:
        Each regularizer once, in the order found.
    """
    if weights is None:
        weights = layer._trainable_variables + layer._non_trainable_variables
    candidates = list(vars(layer).values())
    candidates += [getattr(weight, "regularizer", None) for weight in weights]
    found = {}
    for candidate in candidates:
        # A Sum's parts are scheduled one by one (it is defined below).
        parts = candidate.parts() if isinstance(candidate, Sum) else [candidate]
        for part in parts:
            if isinstance(part, ScheduledRegularizer):
                found.setdefault(id(part), part)
    return list(found.values())


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
        self.domain = check_choice("Sparsity", "domain", domain, ("signed", "unsigned"))
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def penalty(self, w):
        magnitude = _ops.absolute(w)
        # Distance from the upper discrete value: 1 for |W| (signed) or W.
        upper = 1.0 - (magnitude if self.domain == "signed" else w)
        if self.shape == "linear":
            return ops.mean(_ops.minimum(magnitude, _ops.absolute(upper)))
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
        return ops.mean(ops.relu(w - self.max_value) + ops.relu(self.min_value - w))

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
    `ScheduledRegularizer` ramp (linear or "exp" between `start` and `end`,
    driven by `RegularizationSchedule`) or, with `initial_strength`, Heim et
    al.'s growth: β starts at `initial_strength` and is multiplied by `growth`
    every `growth_every` optimizer steps until it reaches `strength`,

        β(t) = min(initial_strength · growth^⌊t / growth_every⌋, strength).

    The mean (the default reduction) keeps β comparable across layer sizes,
    as for `Sparsity`; `reduction="sum"` is Heim et al.'s Σ|W|.

    Args:
        strength: β (with `initial_strength`, the final β), `>= 0`.
        start, end, mode: the ramp (see `ScheduledRegularizer`); not with
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

    @property
    def scheduled(self) -> bool:
        return self.initial_strength is not None or super().scheduled

    def strength_at(self, step: float) -> float:
        if self.initial_strength is None:
            return super().strength_at(step)
        # Decimal, as the reference code: 1e-9 · 10 is 1e-8, not 1.0000000000000001e-8.
        value, cap = Decimal(str(self.initial_strength)), Decimal(str(self.strength))
        growth = Decimal(str(self.growth))
        for _ in range(max(int(step), 0) // self.growth_every):
            if value >= cap:
                break
            value *= growth
        return float(min(value, cap))

    def penalty(self, w):
        magnitude = _ops.absolute(w)
        return ops.sum(magnitude) if self.reduction == "sum" else ops.mean(magnitude)

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
        start, end, mode: the schedule (see `ScheduledRegularizer`).

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
        return ops.mean(_ops.absolute(1.0 - _ops.absolute(w)))


@export
class NegativeL2(ScheduledRegularizer):
    """-strength · mean(W²): rewards large weights.

    The MC-FC's regularizer: growing the junction's logits and the output
    gate's weight and bias saturates the softmax and the sigmoid, so the
    junction becomes a selection and the gate exactly 1 (in float32 σ(z)
    rounds to 1 for z > 16.7). It is unbounded below: use it with a schedule
    and a finite budget, as the authors do.

    Args:
        strength: the full strength, `>= 0`.
        start, end, mode: the schedule (see `ScheduledRegularizer`).

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.NegativeL2(2.0)
    >>> float(reg(np.array([[1.0], [-3.0]], "float32")))
    -10.0

    Reference: Hoedt et al., "MC-LSTM: Mass-Conserving LSTM", ICML 2021,
    App. B.1.3, and the authors' single-layer arithmetic code.
    """

    log_name = "negative_l2_strength"

    def penalty(self, w):
        return -ops.mean(ops.square(w))


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
        self.regularizers = parts

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


@export
class Saturation(ScheduledRegularizer):
    """strength · mean(max(threshold - |p|, 0)): drives parameters past ±threshold.

    The iNALU regularizer: pushing Ŵ, M̂ and the gate's G beyond ±20
    saturates tanh and σ, so W = tanh(Ŵ)⊙σ(M̂) becomes exactly -1, 0 or 1
    and the gate exactly 0 or 1. With the defaults it is the authors'
    0.05 · mean(max(20 - |p|, 0)) per parameter tensor.

    With `loss_threshold` set, the regularizer starts switched off and the
    `keras_nalu.callbacks.LossGatedRegularization` callback switches it on
    after `warmup_epochs` epochs whenever the monitored loss of the last epoch
    is below `loss_threshold` (and off again when it is not). The authors
    apply it after epoch 10 to the steps whose MSE is below 1.

    Args:
        strength: the strength, `>= 0`; 0.05 (the authors' 1/t for t = 20).
        threshold: t > 0, the magnitude beyond which a parameter is free.
        loss_threshold: switch on only while the loss is below this; None for
            always on.
        warmup_epochs: epochs during which a loss-gated regularizer stays off.
        start, end, mode: an optional ramp (see `ScheduledRegularizer`).

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.Saturation()
    >>> round(float(reg(np.array([[0.0], [25.0]], "float32"))), 4)
    0.5

    Reference: Schlör, Ring, Hotho, "iNALU: Improved Neural Arithmetic Logic
    Unit", arXiv:2003.07629 (2020), and the authors' training script.
    """

    log_name = "saturation_strength"

    def __init__(
        self,
        strength: float = 0.05,
        threshold: float = 20.0,
        loss_threshold: float | None = None,
        warmup_epochs: int = 0,
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
    ):
        self.threshold = check_positive("Saturation", "threshold", threshold)
        self.loss_threshold = (
            None
            if loss_threshold is None
            else check_positive("Saturation", "loss_threshold", loss_threshold)
        )
        self.warmup_epochs = check_non_negative_int(
            "Saturation", "warmup_epochs", warmup_epochs
        )
        self.enabled = self.loss_threshold is None
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    @property
    def loss_gated(self) -> bool:
        return self.loss_threshold is not None

    def strength_at(self, step: float) -> float:
        return super().strength_at(step) if self.enabled else 0.0

    def wanted(self, epochs_done: int, loss: float) -> bool:
        """Whether the loss gate opens after `epochs_done` epochs at `loss`."""
        if not self.loss_gated:
            return True
        return (
            epochs_done >= self.warmup_epochs
            and math.isfinite(loss)
            and loss < self.loss_threshold
        )

    def set_enabled(self, enabled: bool, step: float = 0) -> None:
        """Switches the regularizer on or off (strength_at(step) or 0)."""
        self.enabled = bool(enabled)
        self.assign_strength(self.strength_at(step))

    def penalty(self, w):
        return ops.mean(ops.relu(self.threshold - _ops.absolute(w)))

    def get_config(self):
        return {
            **super().get_config(),
            "threshold": self.threshold,
            "loss_threshold": self.loss_threshold,
            "warmup_epochs": self.warmup_epochs,
        }


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


def inalu_saturation() -> Saturation:
    """The iNALU default: 0.05·mean(max(20 - |p|, 0)) if loss < 1 after 10 epochs."""
    return Saturation(
        strength=0.05, threshold=20.0, loss_threshold=1.0, warmup_epochs=10
    )


def get(identifier, default_factory=None):
    """Like `keras.regularizers.get`; "sparsity" means the unit's paper default.

    "saturation" means `inalu_saturation()`, the iNALU's loss-gated default.
    """
    if isinstance(identifier, str) and identifier == "saturation":
        return inalu_saturation()
    if isinstance(identifier, str) and identifier == "sparsity":
        if default_factory is None:
            raise ValueError(
                "'sparsity' names a unit's default regularizer; pass a "
                "keras_nalu.regularizers.Sparsity(...) instead here."
            )
        return default_factory()
    return keras.regularizers.get(identifier)


@export
class ZRegularizer(ScheduledRegularizer):
    """R_z: pulls the batch mean of a unit's input towards the unit's identity.

        multiplicative (NMU):  mean_{i,o}((1 - W_io) · (1 - x̄_i)²)
        additive (NAU):        mean_{i,o}((1 - |W_io|) · x̄_i²)

    x̄ is the batch mean of the unit's input `x` (axis 0; any further leading
    axes, e.g. time, are averaged over after the penalty). An input the unit
    ignores (W_io = 0) is pushed to the identity of the operation (1 for
    products, 0 for sums), so the network feeding the unit cannot settle for
    an unintended solution such as 0.1·81 + 1 - 0.1 = 9. Unlike a weight
    regularizer it reads the input and the kernel, so the layer that owns the
    input calls it from its `call` and adds the result with `add_loss`.

    Args:
        strength: λ_z, `>= 0`.
        identity: "multiplicative" (NMU, NAC•NMU) or "additive" (NAU, NAC+).
        start, end, mode: the schedule (see `ScheduledRegularizer`).

    Call arguments:
        inputs: the unit's input, `(batch, ..., input_dim)`.
        kernel: the unit's weights for these inputs, `(input_dim, units)`.

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.ZRegularizer(identity="multiplicative")
    >>> x = np.array([[3.0], [1.0]], "float32")  # x̄ = 2
    >>> float(reg(x, np.array([[0.5, 1.0]], "float32")))
    0.25

    Reference: Madsen & Johansen (2020), §4.2 (NMU) and App. D.2 (NAU).
    """

    log_name = "z_strength"

    def __init__(
        self,
        strength: float = 1.0,
        identity: str = "multiplicative",
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
    ):
        self.identity = check_choice(
            "ZRegularizer", "identity", identity, ("multiplicative", "additive")
        )
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def penalty(self, inputs, kernel):
        mean = ops.mean(inputs, axis=0)[..., :, None]  # (..., input_dim, 1)
        if self.identity == "multiplicative":
            terms = (1.0 - kernel) * ops.square(1.0 - mean)
        else:
            terms = (1.0 - _ops.absolute(kernel)) * ops.square(mean)
        return ops.mean(terms)

    def __call__(self, inputs, kernel):
        kernel = ops.cast(kernel, inputs.dtype)
        strength = ops.cast(self.current_strength, inputs.dtype)
        return strength * self.penalty(inputs, kernel)

    def get_config(self):
        return {**super().get_config(), "identity": self.identity}
