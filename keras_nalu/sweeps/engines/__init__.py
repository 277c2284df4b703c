"""Replica engines: one backend-neutral `ReplicaRun`, one training step per backend.

`ReplicaRun` (in `base.py`) holds everything the engines share: the replicas'
setup, the loop between evaluations, the verdicts and records; `backup.py`
writes and reads its backup file. An
engine compiles the block of training steps and the evaluation for its Keras
backend: `tensorflow.py` (`tf.function`, `tf.vectorized_map`) and `jax.py`
(`jax.jit`, `jax.vmap`, `jax.lax.scan`). `ReplicaRun(...)` and
`train_replicas(...)` pick the engine of the Keras backend in use
(`KERAS_BACKEND`), as Keras' `Model` picks its backend's trainer.
"""

from __future__ import annotations

import importlib

import keras

ENGINES = ("tensorflow", "jax")
"""The backends that have a replica engine."""

_MODULES = {
    "tensorflow": ("keras_nalu.sweeps.engines.tensorflow", "TensorFlowReplicaRun"),
    "jax": ("keras_nalu.sweeps.engines.jax", "JaxReplicaRun"),
}


def engine_name(engine: str | None = None) -> str:
    """The engine to train with: `engine`, or the Keras backend's.

    Raises:
        ValueError: the name is not an engine, or names another backend than
            the one Keras runs (the template model computes with the
            backend's ops), or the backend has no engine.

    Example:

    >>> import keras
    >>> engine_name() == keras.backend.backend()
    True
    """
    backend = keras.backend.backend()
    if engine is None:
        if backend not in ENGINES:
            raise ValueError(
                f"train_replicas has engines for the {' and '.join(ENGINES)} "
                f"backends; Keras runs on {backend!r}. Set KERAS_BACKEND=jax or "
                "KERAS_BACKEND=tensorflow."
            )
        return backend
    if engine not in ENGINES:
        raise ValueError(
            f"train_replicas expects engine to be one of {list(ENGINES)} or None. "
            f"Received: engine={engine!r}"
        )
    if engine != backend:
        raise ValueError(
            f"The {engine} engine needs KERAS_BACKEND={engine}; Keras runs on "
            f"{backend!r}. Set the variable before Python starts."
        )
    return engine


def engine_class(engine: str | None = None) -> type:
    """The `ReplicaRun` subclass of an engine (see `engine_name`)."""
    module, name = _MODULES[engine_name(engine)]
    return getattr(importlib.import_module(module), name)


from keras_nalu.sweeps.engines.backup import read_backup  # noqa: E402
from keras_nalu.sweeps.engines.base import (  # noqa: E402
    RECIPE_FIELDS,
    NotVectorizableError,
    ReplicaRun,
    TimeLimitReached,
    execution_size,
    recipe,
    stop_at_interrupt,
    total_steps,
    train_batched,
    train_replicas,
    vectorizable,
)

__all__ = [
    "ENGINES",
    "RECIPE_FIELDS",
    "NotVectorizableError",
    "ReplicaRun",
    "TimeLimitReached",
    "engine_class",
    "engine_name",
    "execution_size",
    "read_backup",
    "recipe",
    "stop_at_interrupt",
    "total_steps",
    "train_batched",
    "train_replicas",
    "vectorizable",
]
