"""The template's optimizer on stacked weights: element-wise, clipped per replica.

Adam and the other Keras optimizers update each element of a weight on its
own, so one optimizer built on the stacked weights `[R, ...]` updates each
replica as if it were trained alone. Two options mix the replicas and are
translated: norm clipping (`clipnorm`, `global_clipnorm`), which Keras would
apply to the stacked gradients, is applied by the engines to each replica's
gradients on its own (`ReplicaOptimizer.clip`); `use_ema` is refused.
"""

from __future__ import annotations

import dataclasses

import keras

# Norm clipping mixes the replicas if Keras applies it to the stacked
# gradients: the engines clip each replica's gradient by its own norm instead.
_PER_REPLICA_OPTIONS = ("clipnorm", "global_clipnorm")
_NON_ELEMENTWISE_OPTIONS = ("use_ema",)


@dataclasses.dataclass(frozen=True)
class ReplicaOptimizer:
    """How to build a model's optimizer on stacked weights, and clip per replica.

    Attributes:
        optimizer_class: the template model's optimizer class (e.g. `Adam`).
        config: its config without norm clipping (which `clip` applies).
        clipnorm: the per-weight norm each replica's gradients are clipped
            to, or None.
        global_clipnorm: the norm of all of a replica's gradients together
            they are clipped to, or None (never both).
    """

    optimizer_class: type
    config: dict
    clipnorm: float | None = None
    global_clipnorm: float | None = None

    @classmethod
    def from_optimizer(cls, optimizer: keras.optimizers.Optimizer):
        """The translation of a compiled model's optimizer.

        Raises:
            ValueError: the optimizer mixes the replicas (`use_ema`).
        """
        config = optimizer.get_config()
        for option in _NON_ELEMENTWISE_OPTIONS:
            if config.get(option):
                raise ValueError(
                    f"train_replicas needs an element-wise optimizer; {option} "
                    f"mixes the replicas. Received: {option}={config[option]!r}"
                )
        # Per replica: the norm of each weight's gradient (clipnorm) or of all
        # of them (global_clipnorm), as Keras clips one model's.
        clipnorm = config.get("clipnorm")
        global_clipnorm = config.get("global_clipnorm")
        if clipnorm or global_clipnorm:
            # Keras then ignores clipvalue (and global_clipnorm, if both).
            global_clipnorm = None if clipnorm else global_clipnorm
            config["clipvalue"] = None
        for option in _PER_REPLICA_OPTIONS:
            config[option] = None
        return cls(type(optimizer), config, clipnorm, global_clipnorm)

    def build(self, stacked_variables) -> keras.optimizers.Optimizer:
        """A new optimizer of the template's, built on the stacked weights."""
        optimizer = self.optimizer_class.from_config(dict(self.config))
        optimizer.build(stacked_variables)
        return optimizer

    @staticmethod
    def per_replica(optimizer, stacked_variables) -> list[bool]:
        """For each of the optimizer's variables, whether it is per replica.

        A variable shaped as a stacked weight `[R, ...]` (Adam's moments)
        holds one slice per replica: a replica that stops (diverged, solved)
        keeps its slice as it was, and a backup or `optimizer_state(r)`
        reads it per replica. The others (the step count, a scalar) are
        shared by every replica.

        Args:
            optimizer: the optimizer `build` gave.
            stacked_variables: the stacked weights it was built on.
        """
        shapes = {tuple(v.shape) for v in stacked_variables}
        return [
            len(v.shape) > 0 and tuple(v.shape) in shapes for v in optimizer.variables
        ]

    def clip(self, gradients, ops):
        """Each replica's gradients clipped as Keras clips one model's.

        As in Keras' optimizers: with `clipnorm`, g · c / max(‖g‖, c) for each
        weight's gradient; else with `global_clipnorm`, every gradient times
        c · min(1/‖G‖, 1/c), ‖G‖ the norm of all of them together. Here the
        norms are each replica's own (over all but the leading axis), so no
        replica's step depends on another's.

        Args:
            gradients: stacked `[R, ...]` gradients, one per weight.
            ops: the backend's array functions (`sqrt`, `sum`, `square`,
                `maximum`, `minimum`, `reshape`), e.g. `jax.numpy`.
        """

        def squares(values):
            axes = tuple(range(1, len(values.shape)))
            return ops.sum(ops.square(values), axis=axes)

        def per_replica(factor, values):
            return ops.reshape(factor, [-1] + [1] * (len(values.shape) - 1))

        if self.clipnorm:
            clip = self.clipnorm
            return [
                g * clip / per_replica(ops.maximum(ops.sqrt(squares(g)), clip), g)
                for g in gradients
            ]
        if self.global_clipnorm:
            clip = self.global_clipnorm
            norm = ops.sqrt(sum(squares(g) for g in gradients))
            # + (norm - norm): NaN for a non-finite norm, as in Keras.
            scale = clip * ops.minimum(1.0 / norm, 1.0 / clip) + (norm - norm)
            return [g * per_replica(scale, g) for g in gradients]
        return gradients
