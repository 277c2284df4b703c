"""Callbacks that drive the units' training: regularization, reinitialization.

One callback per module (`schedule`, `progress`, `loss_gated`,
`reinitialization`); `utils` holds what they share (walking a model's layers,
its optimizer's state and step). Import every name from here,
`keras_nalu.callbacks`.
"""

from keras_nalu.callbacks.loss_gated import LossGatedRegularization
from keras_nalu.callbacks.progress import ProgressBar
from keras_nalu.callbacks.reinitialization import Reinitialization
from keras_nalu.callbacks.schedule import RegularizationSchedule
from keras_nalu.callbacks.utils import (
    find_scheduled_regularizers,
    iter_layers,
    loss_stalled,
    optimizer_slots,
    optimizer_step,
    reset_optimizer_slots,
)

__all__ = [
    "LossGatedRegularization",
    "ProgressBar",
    "RegularizationSchedule",
    "Reinitialization",
    "find_scheduled_regularizers",
    "iter_layers",
    "loss_stalled",
    "optimizer_slots",
    "optimizer_step",
    "reset_optimizer_slots",
]
