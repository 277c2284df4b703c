"""λ(t) of a replica run: the preset's schedule, held over each block of steps.

`model.fit` with `steps_per_execution = k` runs k steps per call and
`RegularizationSchedule` sets λ at the start of each call, so every step of
a block trains with λ of the block's first step. The engines train the same
way: `strength_table` gives λ of every scheduled regularizer for every step
of a block, as the compiled training block reads it.
"""

from __future__ import annotations

import numpy as np


def strength_table(
    schedule, regularizers, block: int, start: int, stop: int, dtype="float32"
):
    """λ of every scheduled regularizer for steps `start … stop - 1`.

    Args:
        schedule: the preset's `RegularizationSchedule`, or None (no
            `regularizers` then).
        regularizers: the scheduled regularizers, one column each.
        block: `steps_per_execution`: λ is held over each block of steps.
        start, stop: the steps.
        dtype: the strengths' variables' dtype (`ReplicaSetup.strength_dtype`):
            each λ is the schedule's value rounded once to it.

    Returns:
        An array `[stop - start, len(regularizers)]` of `dtype`.

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
