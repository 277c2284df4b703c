"""Choosing a replica engine, building a run on it, and training it to records."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

import keras

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.engines.backup import remove_backup
from keras_nalu.sweeps.engines.loop import TrainingLimits, train_loop

ENGINES = ("tensorflow", "jax")
"""The backends that have a replica engine."""

_MODULES = {
    "tensorflow": ("keras_nalu.sweeps.engines.tensorflow", "TensorFlowReplicaRun"),
    "jax": ("keras_nalu.sweeps.engines.jax", "JaxReplicaRun"),
}


def engine_name(engine: str | None = None) -> str:
    """The engine to train with: `engine`, or the Keras backend's.

    Raises:
        ValueError: not an engine, another backend than Keras runs, or a
            backend without an engine.

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


def replica_run(
    config: ExperimentConfig,
    seeds: Sequence[int],
    engine: str | None = None,
    history: bool = True,
    unroll: int = 1,
):
    """R seeds of `config` as one `ReplicaRun` on an engine, ready to train.

    `engine`: "tensorflow", "jax", or None for the Keras backend's; the
    other arguments as for `ReplicaRun`.

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
    """Several configurations (each with its seed) as one `ReplicaRun.batched`."""
    return engine_class(engine).batched(configs, history=history, unroll=unroll)


def train_replicas(
    config: ExperimentConfig,
    seeds: Sequence[int],
    progress: bool | Callable[[int], None] = True,
    limits: TrainingLimits | None = None,
    engine: str | None = None,
    history: bool = True,
    unroll: int = 1,
) -> list[dict]:
    """Trains `config` once per seed, all seeds in one vectorized loop.

    Each record equals, up to float rounding, what the same engine gives for
    that seed alone; on the TensorFlow engine, also what `run_experiment`
    returns for that seed. The JAX engine draws its batches from a stream of
    its own (`keras_nalu.tasks.streams`): its runs are other samples of the
    same experiment, whose success rates agree.

    With a backup file (`limits.backup`), a later call with the same file
    continues where the last backup left it, with the same records as an
    uninterrupted run (their `history` from the backup's step on), as
    Keras' `BackupAndRestore` does for `fit`; `train_runs` deletes it once
    training ends.

    Args:
        config, seeds, history, unroll: as for `ReplicaRun`.
        progress, limits: as for `ReplicaRun.train`.
        engine: "tensorflow", "jax", or None for the Keras backend's.

    Returns:
        One record per seed, in order (`ReplicaRun.results`).

    Raises:
        ValueError: as `replica_run`, or a backup of another run or engine.
        TimeLimitReached: the run stopped at its deadline; the same call
            again continues it from its backup.

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
    return train_runs([run], [progress], [limits])[0]


def train_batched(
    configs: Sequence[ExperimentConfig],
    progress: bool | Callable[[int], None] = True,
    limits: TrainingLimits | None = None,
    engine: str | None = None,
    history: bool = True,
    unroll: int = 1,
) -> list[dict]:
    """`train_replicas` for configs (seeds included) that share their recipe
    and differ in their task (`ReplicaRun.batched`, JAX engine): one record
    per config, in order."""
    run = batched_run(configs, engine=engine, history=history, unroll=unroll)
    return train_runs([run], [progress], [limits])[0]


def train_runs(
    runs: Sequence,
    progress: Sequence[bool | Callable[[int], None]] | None = None,
    limits: Sequence[TrainingLimits | None] | None = None,
    on_records: Callable[[int, list[dict]], None] | None = None,
) -> list[list[dict] | None]:
    """Trains built runs to their records: a backup's whole lifecycle.

    Each run continues from its backup (`limits[i].backup`) if it exists,
    trains (`train_loop`); as each ends, its records go to
    `on_records(index, records)`, then its backup is deleted.

    Args:
        runs: `ReplicaRun`s (`replica_run`, `batched_run`).
        progress, limits: per run, as for `ReplicaRun.train`; None for none.
        on_records: called with a run's index and records once it has ended.

    Returns:
        Each run's records (None for a run that did not end).

    Example (runs of two models in one program, under `KERAS_BACKEND=jax`;
    `tests/sweeps/test_filling.py` runs it):

    ```python
    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines import replica_run

    runs = [
        replica_run(ExperimentConfig(model=model, input_size=10,
                                     iterations=200, eval_every=100), [0, 1])
        for model in ("nau", "nmu")
    ]
    records = train_runs(runs)
    assert [run.step for run in runs] == [200, 200] and len(records[1]) == 2
    ```
    """
    runs = list(runs)
    limits = [own or TrainingLimits() for own in limits or [None] * len(runs)]
    for run, own in zip(runs, limits):
        if own.backup is not None:
            run.restore_backup(own.backup)
    records: list[list[dict] | None] = [None] * len(runs)

    def finished(index: int) -> None:
        records[index] = runs[index].results()
        if on_records is not None:
            on_records(index, records[index])
        if limits[index].backup is not None:
            remove_backup(limits[index].backup)

    train_loop(runs, progress, limits, on_finished=finished)
    return records
