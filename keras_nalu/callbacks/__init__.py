"""Callbacks that drive the units' training: regularization, reinitialization.

One callback per module (`schedule`, `progress`, `loss_gated`,
`reinitialization`); `utils` holds what they share (scheduled regularizers,
optimizer slots). Import every name from here, `keras_nalu.callbacks`.
"""

from keras_nalu.callbacks.loss_gated import LossGatedRegularization
from keras_nalu.callbacks.progress import ProgressBar
from keras_nalu.callbacks.reinitialization import Reinitialization
from keras_nalu.callbacks.schedule import RegularizationSchedule
from keras_nalu.callbacks.utils import (
    find_scheduled_regularizers,
    loss_stalled,
    optimizer_slots,
    reset_optimizer_slots,
)

__all__ = [
    "LossGatedRegularization",
    "ProgressBar",
    "RegularizationSchedule",
    "Reinitialization",
    "find_scheduled_regularizers",
    "loss_stalled",
    "optimizer_slots",
    "reset_optimizer_slots",
]
