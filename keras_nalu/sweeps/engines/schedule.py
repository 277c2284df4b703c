"""λ(t) of a replica run: the preset's schedule, held over each block of steps
as `model.fit` holds it (docs/architecture.md)."""

from __future__ import annotations

import numpy as np


def strength_table(
    schedule, regularizers, block: int, start: int, stop: int, dtype="float32"
):
    """λ of every scheduled regularizer for steps `start … stop - 1`.

    `schedule`: the preset's `RegularizationSchedule` (None: no
    `regularizers`); `block`: `steps_per_execution`; `dtype`: the strengths'
    (`ReplicaSetup.strength_dtype`), each λ rounded once to it. Returns an
    array `[stop - start, len(regularizers)]`, one column per regularizer.

    Example:

    >>> from keras_nalu.callbacks import RegularizationSchedule
    >>> from keras_nalu.regularizers import Sparsity
    >>> schedule = RegularizationSchedule(strength=1.0, start=10, end=20)
    >>> strength_table(schedule, [Sparsity()], 5, 10, 22)[:, 0].tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0, 1.0]
    """
    schedules = [schedule.schedule_for(r) for r in regularizers]
    table = np.zeros((stop - start, len(schedules)), dtype)
    held, values = None, []
    for row, step in enumerate(range(start, stop)):
        if step - step % block != held:
            held = step - step % block
            values = [strength(held) for strength in schedules]
        table[row] = values
    return table
