"""Callbacks that drive the units' training: regularization, reinitialization.

One callback per module (`schedule`, `progress`, `loss_gated`,
`reinitialization`); `utils` holds what they share (optimizer slots, the
loss-stall test). `keras_nalu.regularizers.find_scheduled_regularizers`
finds the regularizers they drive. Import every name from here,
`keras_nalu.callbacks`.
"""

from keras_nalu.callbacks.loss_gated import LossGatedRegularization
from keras_nalu.callbacks.progress import ProgressBar
from keras_nalu.callbacks.reinitialization import Reinitialization
from keras_nalu.callbacks.schedule import RegularizationSchedule
from keras_nalu.callbacks.utils import (
    loss_stalled,
    optimizer_slots,
    reset_optimizer_slots,
)

__all__ = [
    "LossGatedRegularization",
    "ProgressBar",
    "RegularizationSchedule",
    "Reinitialization",
    "loss_stalled",
    "optimizer_slots",
    "reset_optimizer_slots",
]
