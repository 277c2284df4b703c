"""Replica runs of different recipes trained side by side in one compiled program.

A replica run vectorizes the seeds of one recipe (`jax.vmap`); runs of other
models or other training (other variable shapes, other functions) cannot
share that vectorized model. `train_packed` trains several such runs in one
`jax.jit` program instead: one `jax.lax.scan` over the steps whose every
iteration takes one step of each run, each run with its own carry (weights,
optimizer, state, flags), its own batches and its own λ(t). On a GPU much
of a small run's step is a cost per step, not per replica (the launch of
the step's kernels, the loop's condition: on one H200 a step of 100
replicas cost 2.6 times one replica's, `benchmarks/results/gpu/summary.md`),
and the runs packed together share it.

Each run stays exactly what it is trained alone: its step reads only its own
carry, and every run keeps its own evaluations, early stops, divergence,
backups and length. All runs advance by the same number of steps, up to the
nearest evaluation of any of them; a run that has ended (its last step, no
replica left, a time limit, Ctrl-C) drops out, and the program is compiled
again for the runs left.

Reference: Madsen & Johansen (2020), App. C.2 (the protocol each run
follows).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from keras_nalu.sweeps.engines.jax import matmul_precision
from keras_nalu.sweeps.engines.loop import (
    RunLoop,
    TimeLimitReached,
    TrainingLimits,
    stop_at_interrupt,
    stopped_together,
)


def _packed_steps(runs, unroll, carries, starts, strengths, steps):
    """`steps` steps of every run in one `jax.lax.scan`: the runs' carries after."""

    def step(carry, inputs):
        return tuple(
            run.train_step(own, own_inputs)[0]
            for run, own, own_inputs in zip(runs, carry, inputs)
        ), None

    inputs = tuple(
        (start + jnp.arange(steps, dtype=jnp.int32), table)
        for start, table in zip(starts, strengths)
    )
    carries, _ = jax.lax.scan(step, tuple(carries), inputs, unroll=unroll)
    return carries


class PackedBlocks:
    """Trains blocks of steps of several JAX replica runs as one program.

    The compiled program depends on the runs trained together and on the
    block's length; it is compiled once per set of runs and length (a run
    that drops out means a new program for the others).
    """

    def __init__(self):
        self._key = None
        self._compiled = None

    def train(self, runs: Sequence, steps: int) -> None:
        """Trains steps `run.step … run.step + steps - 1` of every run.

        One run alone trains through its own compiled block, as it does
        outside a pack.
        """
        if len(runs) == 1:
            (run,) = runs
            run.train_block(run.step, run.step + steps)
            return
        key = tuple(id(run) for run in runs)
        if key != self._key:  # the runs changed: the old program is no use
            unroll = max(run.unroll for run in runs)
            self._key = key
            self._compiled = jax.jit(
                functools.partial(_packed_steps, tuple(runs), unroll),
                static_argnames="steps",
            )
        starts = tuple(jnp.asarray(run.step, jnp.int32) for run in runs)
        strengths = tuple(
            jnp.asarray(run.strengths(run.step, run.step + steps)) for run in runs
        )
        with matmul_precision():
            carries = self._compiled(
                tuple(run.carry for run in runs), starts, strengths, steps=steps
            )
        for run, carry in zip(runs, carries):
            run.carry = carry


def train_packed(
    runs: Sequence,
    progress: Sequence[bool | Callable[[int], None]] | None = None,
    limits: Sequence[TrainingLimits] | None = None,
    on_finished: Callable[[int], None] | None = None,
) -> None:
    """Trains several JAX replica runs side by side, each as if it were alone.

    Each run is trained as `ReplicaRun.train` trains it (evaluations, early
    stops, divergence, backups, wall time), with one compiled program for
    the steps of all of them (`PackedBlocks`). Runs may differ in their
    model, training, length and starting step (a run restored from its
    backup goes on from there).

    Args:
        runs: `ReplicaRun`s of an engine with `supports_packing` (JAX).
        progress: per run, as `ReplicaRun.train`'s `progress`; None for none.
        limits: per run, its `TrainingLimits` (its backup file, how often,
            its deadline); None for none. Past its deadline, each run stops
            at its next evaluation, after its backup.
        on_finished: called with a run's index once it has ended (its last
            step, or no replica left), before the others go on.

    Raises:
        TimeLimitReached: some run stopped at its deadline (each run left
            has then stopped at its next evaluation, after its backup).
        KeyboardInterrupt: Ctrl-C (see `stop_at_interrupt`): each run
            stopped at its next evaluation, after its backup (the message
            names each, `stopped_together`).
        ValueError: a run of an engine that cannot train in a pack.

    Example (under `KERAS_BACKEND=jax`; `tests/sweeps/test_filling.py`
    runs it):

    ```python
    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines import replica_run

    runs = [
        replica_run(ExperimentConfig(model=model, input_size=10,
                                     iterations=200, eval_every=100), [0, 1])
        for model in ("nau", "nmu")
    ]
    train_packed(runs)
    assert [run.step for run in runs] == [200, 200]
    ```
    """
    runs = list(runs)
    for run in runs:
        if not run.supports_packing:
            raise ValueError(
                f"The {run.engine} engine trains one run at a time; runs packed "
                "into one program need the JAX engine (KERAS_BACKEND=jax)."
            )
    progress = [False] * len(runs) if progress is None else list(progress)
    limits = [TrainingLimits()] * len(runs) if limits is None else list(limits)
    loops = [
        RunLoop(run, shown, own) for run, shown, own in zip(runs, progress, limits)
    ]
    blocks = PackedBlocks()
    stopped = []
    try:
        with stop_at_interrupt():
            for loop in loops:
                loop.begin()
            training = []
            for index, loop in enumerate(loops):
                if loop.next_stop() is None:
                    _finish(loop, index, on_finished)
                else:
                    training.append(index)
            while training:
                steps = min(loops[i].next_stop() - runs[i].step for i in training)
                blocks.train([runs[i] for i in training], steps)
                going = []
                for index in training:
                    loop = loops[index]
                    try:
                        loop.trained(steps)
                    except (TimeLimitReached, KeyboardInterrupt) as error:
                        stopped.append(error)  # the others go to theirs
                        loop.close()
                        continue
                    if loop.next_stop() is None:
                        _finish(loop, index, on_finished)
                    else:
                        going.append(index)
                training = going
    finally:
        for loop in loops:
            loop.close()
    if stopped:
        raise stopped_together(stopped)


def _finish(loop, index, on_finished) -> None:
    loop.close()
    loop.run.verdicts.finish(loop.run.step)
    if on_finished is not None:
        on_finished(index)


__all__ = ["PackedBlocks", "train_packed"]
