"""The template's optimizer on stacked weights: element-wise, clipped per replica."""

from __future__ import annotations

import dataclasses

import keras
from keras import ops


@dataclasses.dataclass(frozen=True)
class ReplicaOptimizer:
    """How to build a model's optimizer on stacked weights, and clip per replica.

    `config` is the optimizer's without norm clipping, which `clip` applies
    per replica: `clipnorm` to each weight's gradient, or `global_clipnorm`
    to all of a replica's together (never both).
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
        if config.get("use_ema"):
            raise ValueError(
                "train_replicas needs an element-wise optimizer; use_ema mixes "
                f"the replicas. Received: use_ema={config['use_ema']!r}"
            )
        clipnorm = config.get("clipnorm")
        global_clipnorm = config.get("global_clipnorm")
        if clipnorm or global_clipnorm:
            # Keras then ignores clipvalue (and global_clipnorm, if both).
            global_clipnorm = None if clipnorm else global_clipnorm
            config["clipvalue"] = None
        config.update(clipnorm=None, global_clipnorm=None)
        return cls(type(optimizer), config, clipnorm, global_clipnorm)

    def build(self, stacked_variables) -> keras.optimizers.Optimizer:
        """A new optimizer of the template's, built on the stacked weights."""
        optimizer = self.optimizer_class.from_config(dict(self.config))
        optimizer.build(stacked_variables)
        return optimizer

    @staticmethod
    def per_replica(optimizer, stacked_variables) -> list[bool]:
        """For each variable of an optimizer `build` gave, whether it is per
        replica: shaped as a stacked weight `[R, ...]` (Adam's moments), so a
        stopped replica keeps its slice. The others (the step count) are
        shared."""
        shapes = {tuple(v.shape) for v in stacked_variables}
        return [
            len(v.shape) > 0 and tuple(v.shape) in shapes for v in optimizer.variables
        ]

    def clip(self, gradients):
        """Each replica's gradients clipped as Keras clips one model's.

        As in Keras' optimizers: with `clipnorm`, g · c / max(‖g‖, c) for each
        weight's gradient; else with `global_clipnorm`, every gradient times
        c · min(1/‖G‖, 1/c), ‖G‖ the norm of all of them together. Here the
        norms are each replica's own (over all but the leading axis) of the
        stacked `[R, ...]` gradients, so no replica's step depends on another's.
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
