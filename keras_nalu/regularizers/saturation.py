"""Penalties that drive parameters into saturation: the iNALU's and the MC-FC's.

`Saturation` pushes parameters past ±threshold (Schlör et al. 2020), behind
a loss gate; `NegativeL2` rewards large weights (Hoedt et al. 2021).
"""

import math

from keras import ops

from keras_nalu import _ops
from keras_nalu._api import export
from keras_nalu._validation import check_non_negative_int, check_positive
from keras_nalu.regularizers.scheduled import ScheduledRegularizer
from keras_nalu.regularizers.schedules import Gate


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
        start, end, mode: the schedule (see `ScheduledPenalty`).

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
        start, end, mode: an optional ramp (see `ScheduledPenalty`).

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
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def make_schedule(self):
        return Gate(super().make_schedule(), open=self.loss_threshold is None)

    @property
    def loss_gated(self) -> bool:
        return self.loss_threshold is not None

    @property
    def enabled(self) -> bool:
        """Whether the gate is open: λ(t) in force, else 0."""
        return self.schedule.open

    @enabled.setter
    def enabled(self, enabled: bool) -> None:
        self.schedule.open = bool(enabled)

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
        self.enabled = enabled
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


def inalu_saturation() -> Saturation:
    """The iNALU default: 0.05·mean(max(20 - |p|, 0)) if loss < 1 after 10 epochs."""
    return Saturation(
        strength=0.05, threshold=20.0, loss_threshold=1.0, warmup_epochs=10
    )
