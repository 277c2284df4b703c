"""Choosing a replica engine, building a run on it, and training it to records.

`replica_run(config, seeds)` builds a `ReplicaRun` on the engine of the Keras
backend in use (or the one named), as Keras' `Model` trains with its
backend's trainer; `train_replicas` and `train_batched` build one and
`train_run` continues it from a backup if there is one, trains it and
returns its records.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence

import keras

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.engines.backup import remove_backup
from keras_nalu.sweeps.engines.loop import BACKUP_EVERY, TrainingLimits, train_loop

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
    """The `ReplicaRun` subclass of an engine (see `engine_name`).

    Example:

    >>> engine_class().engine == engine_name()
    True
    """
    module, name = _MODULES[engine_name(engine)]
    return getattr(importlib.import_module(module), name)


def replica_run(
    config: ExperimentConfig,
    seeds: Sequence[int],
    engine: str | None = None,
    history: bool = True,
    unroll: int = 1,
):
    """R seeds of `config` as one `ReplicaRun` on an engine, ready to train.

    Args:
        config: the configuration; its `seed` is ignored (see `seeds`).
        seeds: the replicas' seeds, distinct integers >= 0.
        engine: "tensorflow", "jax", or None for the Keras backend's.
        history, unroll: as for `ReplicaRun`.

    Returns:
        A `ReplicaRun` of the engine's class (`engine_class`).

    Raises:
        ValueError: bad seeds, a preset that cannot be vectorized
            (`NotVectorizableError`) or a backend without an engine.

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> run = replica_run(ExperimentConfig(model="nau", input_size=10,
    ...                                    iterations=10, eval_every=10), [0, 1])
    >>> run.engine == engine_name(), run.num_replicas
    (True, 2)
    """
    return engine_class(engine)(config, seeds, history=history, unroll=unroll)


def batched_run(
    configs: Sequence[ExperimentConfig],
    engine: str | None = None,
    history: bool = True,
    unroll: int = 1,
):
    """Several configurations (each with its seed) as one `ReplicaRun`.

    See `ReplicaRun.batched`: the configs share the model and its training
    (`RECIPE_FIELDS`) and may differ in their task; runs of different tasks
    need an engine with `supports_batched` (JAX).
    """
    return engine_class(engine).batched(configs, history=history, unroll=unroll)


def train_replicas(
    config: ExperimentConfig,
    seeds: Sequence[int],
    progress: bool | Callable[[int], None] = True,
    backup: str | os.PathLike | None = None,
    backup_every: float = BACKUP_EVERY,
    engine: str | None = None,
    deadline: float | None = None,
    history: bool = True,
    unroll: int = 1,
) -> list[dict]:
    """Trains `config` once per seed, all seeds in one vectorized loop.

    Each record equals, up to float rounding, what the same engine gives for
    that seed alone; on the TensorFlow engine, also what `run_experiment`
    returns for `dataclasses.replace(config, seed=s)` (same initialization,
    data stream, schedule, evaluations and verdict). The JAX engine draws
    its training batches from a counter-based stream of its own
    (`keras_nalu.tasks.streams`, keyed by the seed), not TensorFlow's, so
    its runs are other samples of the same experiment: the success rates
    agree, not each seed.

    With `backup`, the run saves its state to that file every `backup_every`
    seconds, and a later call with the same file continues where the last
    backup left it, with the same records as an uninterrupted run (as Keras'
    `BackupAndRestore` does for `fit`), except that their `history` lacks
    the evaluations before the backup's step (see `ReplicaRun.results`).
    The file is deleted once training ends.

    Args:
        config: the configuration (its `seed` is replaced by each of `seeds`).
        seeds: distinct integers >= 0.
        progress: True for a progress bar, False for none, or a callable
            receiving the number of steps done after each evaluation block.
        backup: None, or the backup file (see `ReplicaRun.save_backup`).
        backup_every: seconds between two backups; 0 after every evaluation.
        engine: "tensorflow", "jax", or None for the Keras backend's.
        deadline: a `time.monotonic()` time at which the run stops, after
            writing `backup` (see `ReplicaRun.train`); None for no limit.
        history: False for records without `history` (None), which then
            need no list of every evaluation in memory (see `ReplicaRun`).
        unroll: steps per iteration of the compiled loop (JAX engine; see
            `ReplicaRun`); the records are the same for every value.

    Returns:
        One record per seed, in the order of `seeds` (see
        `ReplicaRun.results`).

    Raises:
        ValueError: bad seeds, a preset that cannot be vectorized, a backend
            without an engine, or a `backup` file of another configuration,
            other seeds or another engine.
        TimeLimitReached: the run stopped at `deadline`; the same call again
            continues it from `backup`.

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> records = train_replicas(
    ...     ExperimentConfig(model="nau", input_size=10, iterations=100,
    ...                      eval_every=100), seeds=[0, 1, 2], progress=False)
    >>> [(r["config"]["seed"], r["iterations"], r["replicas"]) for r in records]
    [(0, 100, 3), (1, 100, 3), (2, 100, 3)]

    Reference: Madsen & Johansen (2020), §4.1.1 and App. C.2.
    """
    run = replica_run(config, seeds, engine=engine, history=history, unroll=unroll)
    return train_run(run, progress, TrainingLimits(backup, backup_every, deadline))


def train_batched(
    configs: Sequence[ExperimentConfig],
    progress: bool | Callable[[int], None] = True,
    backup: str | os.PathLike | None = None,
    backup_every: float = BACKUP_EVERY,
    engine: str | None = None,
    deadline: float | None = None,
    history: bool = True,
    unroll: int = 1,
) -> list[dict]:
    """Trains several configurations (each with its seed) as one vectorized run.

    `train_replicas` for runs that differ in their task (operation, ranges,
    subsets) but share the model and its training (`RECIPE_FIELDS`), e.g.
    every operation of a table row: on a GPU, thousands of small runs fill
    the device together. Needs an engine with `supports_batched` (JAX).

    Args:
        configs: the runs, one `ExperimentConfig` each (seed included).
        progress, backup, backup_every, engine, deadline, history, unroll:
            as for `train_replicas`.

    Returns:
        One record per config, in order.
    """
    run = batched_run(configs, engine=engine, history=history, unroll=unroll)
    return train_run(run, progress, TrainingLimits(backup, backup_every, deadline))


def train_run(
    run, progress: bool | Callable[[int], None], limits: TrainingLimits
) -> list[dict]:
    """Trains a built run to its records, continued from its backup if any.

    The backup (`limits.backup`) is restored first, if it exists, and
    deleted once the run has finished.

    Args:
        run: a `ReplicaRun` (`replica_run`, `batched_run`).
        progress: as for `ReplicaRun.train`.
        limits: the run's backup file, how often, and its deadline.
    """
    if limits.backup is not None:
        run.restore_backup(limits.backup)
    train_loop(run, progress, limits)
    if limits.backup is not None:
        remove_backup(limits.backup)
    return run.results()
