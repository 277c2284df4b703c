"""The units' regularizers: penalties whose strength λ follows a schedule.

Each keeps λ in a variable that `keras_nalu.callbacks.RegularizationSchedule`
assigns from the optimizer step (`scheduled`); its λ(t) is one of the
`schedules`. `sparsity` holds the penalties that pull weights to discrete
values, `saturation` those that push parameters into saturation,
`z_regularizer` the penalty on a unit's input. Import every name from here,
`keras_nalu.regularizers`.
"""

import keras

from keras_nalu.regularizers.saturation import (
    NegativeL2,
    Saturation,
    inalu_saturation,
)
from keras_nalu.regularizers.scheduled import (
    ScheduledPenalty,
    ScheduledRegularizer,
    Sum,
    check_weight_regularizer,
    find_scheduled_regularizers,
)
from keras_nalu.regularizers.sparsity import (
    L1,
    OutOfBounds,
    Sparsity,
    UnitMagnitude,
    nau_sparsity,
    nmru_sparsity,
    nmu_sparsity,
)
from keras_nalu.regularizers.z_regularizer import ZRegularizer


def get(identifier, default_factory=None):
    """Like `keras.regularizers.get`; "sparsity" means the unit's paper default.

    "saturation" means `inalu_saturation()`, the iNALU's loss-gated default.
    A `ZRegularizer`, which no weight can carry, raises a ValueError.
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
    return check_weight_regularizer(keras.regularizers.get(identifier))


__all__ = [
    "L1",
    "NegativeL2",
    "OutOfBounds",
    "Saturation",
    "ScheduledPenalty",
    "ScheduledRegularizer",
    "Sparsity",
    "Sum",
    "UnitMagnitude",
    "ZRegularizer",
    "find_scheduled_regularizers",
    "get",
    "inalu_saturation",
    "nau_sparsity",
    "nmru_sparsity",
    "nmu_sparsity",
]
