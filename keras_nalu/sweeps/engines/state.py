"""A replica run's whole state at one step: what a backup holds.

`ReplicaRun.get_state()` gives it and `ReplicaRun.set_state(state)` puts a
run there; `backup.py` writes it to a file and reads it back. The training
batches need no state: batch b is a function of b.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from keras_nalu.sweeps.engines.verdicts import Verdicts


@dataclasses.dataclass
class RunState:
    """The state of a replica run at `step`.

    Attributes:
        step: the steps every active replica has trained.
        wall_time: seconds spent training so far.
        verdicts: each replica's verdict so far (`Verdicts`).
        variables: the engine's variables as arrays, in the engine's order:
            every stacked trainable weight, the optimizer's variables (Adam's
            moments and step count), the model's other per-replica state,
            then the engine's flags.
    """

    step: int
    wall_time: float
    verdicts: Verdicts
    variables: list[np.ndarray]
