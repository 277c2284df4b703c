"""The replicas' variables: stacked, one replica's, and as a Keras model.

`ReplicaVariables` is the part of `ReplicaRun` that reads and sets the
variables an engine holds: every weight stacked over the replicas, one
replica's weights and optimizer slots, and a Keras model of one replica.
An engine implements the stacked reads and `_engine_state` /
`_set_engine_state` (its variables as an `EngineState`); the rest follows.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np

from keras_nalu._validation import is_integer
from keras_nalu.evaluation import sparsity_error
from keras_nalu.sweeps.engines.setup import build_replica, model_state
from keras_nalu.sweeps.engines.state import EngineState


class ReplicaVariables:
    """The replicas' variables, as `ReplicaRun` reads and sets them.

    A base of `ReplicaRun`, which gives it `configs`, `num_replicas`,
    `setup` and `template`.
    """

    def _engine_state(self) -> EngineState:
        """The engine's variables as NumPy arrays (`RunState.variables`)."""
        raise NotImplementedError

    def _set_engine_state(self, state: EngineState) -> None:
        """Restores `_engine_state()` (shapes already checked)."""
        raise NotImplementedError

    def stacked_weights(self) -> list[np.ndarray]:
        """Every trainable weight, stacked over replicas: `[R, ...]` arrays."""
        raise NotImplementedError

    def stacked_optimizer_state(self) -> list[np.ndarray]:
        """Every per-weight optimizer variable (Adam's m, v), stacked: `[R, ...]`."""
        raise NotImplementedError

    def stacked_state(self) -> list[np.ndarray]:
        """The model's other non-trainable variables, stacked: `[R, ...]`."""
        return []

    def weights(self, r: int) -> list[np.ndarray]:
        """Replica r's trainable weights, in `model.trainable_variables` order."""
        return [w[r] for w in self.stacked_weights()]

    def set_weights(self, r: int, weights: Sequence[np.ndarray]) -> None:
        """Sets replica r's trainable weights; `weights(r)` reads them back.

        Starts replica r from given weights (e.g. a hand-set solution, to see
        whether training keeps it); the other replicas and the optimizer
        variables are untouched.

        Args:
            r: the replica, `0 <= r < num_replicas`.
            weights: one array per trainable weight, in
                `model.trainable_variables` order, each of that weight's shape.

        Raises:
            ValueError: `r` is not a replica, or `weights` do not match the
                model's weights in number or shape.

        Example:

        >>> import numpy as np
        >>> from keras_nalu.experiments import ExperimentConfig
        >>> from keras_nalu.sweeps.engines import replica_run
        >>> run = replica_run(ExperimentConfig(model="nau", input_size=10,
        ...                                    iterations=10, eval_every=10), [4, 7])
        >>> run.set_weights(1, [np.ones((10, 2)), np.ones((2, 1))])
        >>> float(run.weights(1)[0].sum()), bool(run.weights(0)[0].sum() == 20)
        (20.0, False)
        """
        stacked = self.stacked_weights()
        if not is_integer(r) or not 0 <= r < self.num_replicas:
            raise ValueError(
                f"set_weights expects r to be a replica, 0 <= r < "
                f"{self.num_replicas}. Received: r={r!r}"
            )
        shapes = [tuple(w.shape[1:]) for w in stacked]
        given = [tuple(np.shape(w)) for w in weights]
        if given != shapes:
            raise ValueError(
                f"set_weights expects weights of shapes {shapes}. "
                f"Received: shapes {given}"
            )
        state = self._engine_state()
        changed = [np.array(w) for w in state.weights]
        for stack, values in zip(changed, weights):
            stack[r] = values
        self._set_engine_state(state._replace(weights=changed))

    def optimizer_state(self, r: int) -> list[np.ndarray]:
        """Replica r's slice of every per-weight optimizer variable (Adam's m, v)."""
        return [v[r] for v in self.stacked_optimizer_state()]

    def model_for(self, r: int) -> keras.Model:
        """A compiled Keras model of the configuration holding replica r's weights.

        Example:

        >>> from keras_nalu.experiments import ExperimentConfig
        >>> from keras_nalu.sweeps.engines import replica_run
        >>> run = replica_run(ExperimentConfig(model="nau", input_size=10,
        ...                                    iterations=10, eval_every=10), [4, 7])
        >>> model = run.model_for(1)
        >>> [tuple(w.shape) for w in model.trainable_weights]
        [(10, 2), (2, 1)]
        """
        model, _ = build_replica(self.configs[r])
        for variable, values in zip(model.trainable_variables, self.weights(r)):
            variable.assign(values)
        for variable, values in zip(model_state(model), self.stacked_state()):
            variable.assign(values[r])
        return model

    def _sparsity_errors(self, replicas) -> dict[int, float]:
        """The sparsity error of each of `replicas` (the template, reassigned)."""
        stacked = self.stacked_weights()
        errors = {}
        for r in replicas:
            for variable, values in zip(self.setup.variables, stacked):
                variable.assign(values[r])
            errors[r] = sparsity_error(self.template)
        return errors
