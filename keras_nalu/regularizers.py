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

import keras
from keras import ops

from keras_nalu import _ops
from keras_nalu._api import export
from keras_nalu._validation import (
    check_choice,
    check_non_negative,
    check_non_negative_int,
    check_positive,
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
        if isinstance(candidate, ScheduledRegularizer):
            found.setdefault(id(candidate), candidate)
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
    """strength · mean(|W|): pulls every weight towards 0.

    The Neural Power Unit's sparsity penalty. Heim et al. grow its strength β
    during training; here β follows the `ScheduledRegularizer` ramp (linear or
    "exp" between `start` and `end`, driven by `RegularizationSchedule`). The
    mean (not the sum) keeps β comparable across layer sizes, as for
    `Sparsity`.

    Args:
        strength: β, `>= 0`.
        start, end, mode: the schedule (see `ScheduledRegularizer`).

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.L1(0.5)
    >>> float(reg(np.array([[1.0], [-3.0]], "float32")))
    1.0

    Reference: Heim, Pevný, Šmídl, "Neural Power Units", NeurIPS 2020,
    §3.
    """

    log_name = "l1_strength"

    def penalty(self, w):
        return ops.mean(_ops.absolute(w))


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
