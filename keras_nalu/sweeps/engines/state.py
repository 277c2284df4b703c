"""A replica run's whole state at one step: what a backup holds."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from keras_nalu.sweeps.engines.verdicts import Verdicts


class EngineState(NamedTuple):
    """An engine's variables, by name: every replica's, stacked `[R, ...]`.

    The JAX engine's carry (a `NamedTuple` is a JAX pytree); a backup stores
    it flattened in the order of the fields (`flat`).

    `weights` in `model.trainable_variables` order; `optimizer` its
    variables (Adam's moments per replica, its step count shared);
    `model_state` in `model_state` order (JAX engine); `active` and
    `diverged` as in `step_rules`.
    """

    weights: list
    optimizer: list
    model_state: list
    active: Any
    diverged: Any

    def flat(self) -> list:
        """The arrays in a backup's order: weights, optimizer, model state, flags."""
        return [*self.weights, *self.optimizer, *self.model_state, *self[3:]]

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
        rest = iter(arrays)
        parts = [[next(rest) for _ in range(size)] for size in sizes]
        return EngineState(*parts, *rest)


@dataclasses.dataclass
class RunState:
    """The state of a replica run at `step` (the steps every active replica
    has trained): seconds of training so far, `Verdicts`, and the engine's
    variables as NumPy arrays."""

    step: int
    wall_time: float
    verdicts: Verdicts
    variables: EngineState
