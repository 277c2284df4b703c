"""A replica run's whole state at one step: what a backup holds.

`ReplicaRun.get_state()` gives it and `ReplicaRun.set_state(state)` puts a
run there; `backup.py` writes it to a file and reads it back. The training
batches need no state: batch b is a function of b.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from keras_nalu.sweeps.engines.verdicts import Verdicts


class EngineState(NamedTuple):
    """An engine's variables, by name: every replica's, stacked `[R, ...]`.

    What the JAX engine's compiled block of steps carries from step to step
    (a `NamedTuple` is a JAX pytree), and what a backup stores, flattened in
    the order of the fields (`flat`).

    Attributes:
        weights: every trainable weight, in `model.trainable_variables` order.
        optimizer: the optimizer's variables (Adam's moments, one slice per
            replica, and its step count, shared).
        model_state: the model's other per-replica variables (a noise
            layer's seed; JAX engine), in `model_state` order.
        active: `[R]` bool, the replicas still training.
        diverged: `[R]` int, the step each replica diverged at, or -1.
    """

    weights: list
    optimizer: list
    model_state: list
    active: Any
    diverged: Any

    def flat(self) -> list:
        """The arrays in a backup's order: weights, optimizer, model state, flags."""
        return [
            *self.weights,
            *self.optimizer,
            *self.model_state,
            self.active,
            self.diverged,
        ]

    def map(self, function) -> EngineState:
        """The same structure, `function` applied to every array."""
        return self.unflatten([function(array) for array in self.flat()])

    def unflatten(self, arrays) -> EngineState:
        """`arrays` (as `flat` gives them) in this state's structure.

        Raises:
            ValueError: there are not as many arrays as this state holds.
        """
        arrays = list(arrays)
        sizes = (len(self.weights), len(self.optimizer), len(self.model_state))
        if len(arrays) != sum(sizes) + 2:
            raise ValueError(
                f"expected {sum(sizes) + 2} arrays of an engine's state. "
                f"Received: {len(arrays)}"
            )
        parts, start = [], 0
        for size in sizes:
            parts.append(arrays[start : start + size])
            start += size
        return EngineState(*parts, arrays[-2], arrays[-1])


@dataclasses.dataclass
class RunState:
    """The state of a replica run at `step`.

    Attributes:
        step: the steps every active replica has trained.
        wall_time: seconds spent training so far.
        verdicts: each replica's verdict so far (`Verdicts`).
        variables: the engine's variables as NumPy arrays (`EngineState`).
    """

    step: int
    wall_time: float
    verdicts: Verdicts
    variables: EngineState
