"""The reference code's recorded runs, replayed by the JAX engine's own step.

`trajectories.py` recorded runs of Madsen & Johansen's code in
`benchmarks/results/reference/`. `replay(names, ...)` trains the same cases
with the engine's training step (`JaxReplicaRun.step_on_batch`, the body of
its compiled loop), from the recorded initial weights, on the reference's
own batches (`reference_data.py`), and `weight_differences` compares every
step with the record. `tests/sweeps/test_reference.py` and
`differences.py` use it; it needs `KERAS_BACKEND=jax`.
"""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path

import keras
import numpy as np
from reference_data import ReferenceData
from trajectories import OUT, batch_hash, projection_matrix

from keras_nalu.experiments import ExperimentConfig

RECORDS = OUT
CASES = json.loads((RECORDS / "cases.json").read_text()) if OUT.is_dir() else {}

CHUNK = 143
"""Steps per compiled call (7 calls make the 1,001 steps)."""


@functools.cache
def record(name: str) -> dict:
    """The arrays `trajectories.py` wrote for case `name`."""
    with np.load(Path(RECORDS) / f"{name}.npz") as arrays:
        return dict(arrays)


def groups(adam: str = "paper") -> list[tuple[str, ...]]:
    """The recorded cases that train together as the replicas of one run."""
    found: dict[tuple, list[str]] = {}
    for name, case in sorted(CASES.items()):
        if case["adam"] == adam:
            key = (case["hidden_size"], tuple(case["ramp"]))
            found.setdefault(key, []).append(name)
    return [tuple(names) for names in found.values()]


@contextlib.contextmanager
def float64():
    """JAX and Keras in float64 (`jax_enable_x64`, floatx), then back."""
    import jax

    previous = keras.config.floatx()
    with jax.enable_x64(True):
        keras.config.set_floatx("float64")
        try:
            yield
        finally:
            keras.config.set_floatx(previous)


def config(name: str, **fields) -> ExperimentConfig:
    """The case's run as an `ExperimentConfig` (NMU ×, its hidden size and
    ramp), with `fields` (e.g. `REFERENCE_SETTINGS`) on top."""
    case = CASES[name]
    start, end = case["ramp"]
    return ExperimentConfig(
        model="nmu",
        operation="mul",
        hidden_size=case["hidden_size"],
        iterations=1000,
        eval_every=1000,
        sparsity_start=start,
        sparsity_end=end,
        **fields,
    )


def start_run(names, **fields):
    """A JAX run of the cases' replicas, each at its recorded initial weights."""
    from keras_nalu.sweeps.engines.jax import JaxReplicaRun

    run = JaxReplicaRun(config(names[0], **fields), [CASES[n]["seed"] for n in names])
    for r, name in enumerate(names):
        arrays = record(name)
        run.set_weights(r, [arrays["initial_0"], arrays["initial_1"]])
    return run


def replay(names, **fields) -> dict:
    """Every recorded step of the cases, by the engine's step, on the
    reference's batches, in the current float type (see `float64`).

    Returns:
        `weights`: the weights after each step, `[steps, R, ...]` per
        weight; `loss`, `regularization` (λ·R): each step's, `[steps, R]`;
        `lam`: λ of each step; `hashes`: `batch_hash` of each batch
        trained on, `[R, steps]`; `run`: the run (at its initial weights).
    """
    import jax
    import jax.numpy as jnp

    from keras_nalu.sweeps.engines.jax import matmul_precision

    run = start_run(names, **fields)
    steps = CASES[names[0]]["steps"]
    streams = [ReferenceData(seed=CASES[n]["seed"]).training_stream() for n in names]

    def step(carry, inputs):
        carry, (loss, regularization) = run.step_on_batch(carry, *inputs)
        return carry, (carry.weights, loss, regularization)

    scan = jax.jit(lambda carry, inputs: jax.lax.scan(step, carry, inputs))
    carry, outputs, hashes = run.carry, [], []
    strengths = run.strengths(0, steps)
    for start in range(0, steps, CHUNK):
        batches = [stream.draw(CHUNK) for stream in streams]
        hashes.append([[batch_hash(x, t) for x, t in zip(*b)] for b in batches])
        x, t = (np.stack([b[i] for b in batches], axis=1) for i in (0, 1))
        indices = np.arange(start, start + CHUNK, dtype=np.int32)
        inputs = (indices, strengths[start : start + CHUNK], x, t)
        with matmul_precision():
            carry, out = scan(carry, jax.tree.map(jnp.asarray, inputs))
        outputs.append(jax.tree.map(np.asarray, out))
    weights, loss, regularization = jax.tree.map(
        lambda *parts: np.concatenate(parts), *outputs
    )
    return {
        "weights": [w[:steps] for w in weights],
        "loss": loss[:steps],
        "regularization": regularization[:steps],
        "lam": strengths[:steps, 0],
        "hashes": np.concatenate(hashes, axis=1)[:, :steps],
        "run": run,
    }


def weight_differences(replayed: dict, names) -> list[float]:
    """Per case: the largest difference of a weight from the record's.

    Every snapshot's weights are compared, and every step's projection
    (`projection_matrix`) divided by the number of weights: a projection
    sums terms of |W| at most 1, so per weight it is off by at most the
    weights' largest difference.
    """
    differences = []
    for r, name in enumerate(names):
        arrays = record(name)
        weights = [w[:, r] for w in replayed["weights"]]
        snapshots = arrays["snapshot_step"]
        largest = max(
            np.abs(w[snapshots] - arrays[f"snapshot_{i}"]).max()
            for i, w in enumerate(weights)
        )
        projections = np.stack(
            [(w * projection_matrix(w.shape[1:])).sum(axis=(1, 2)) for w in weights],
            axis=1,
        )
        size = sum(np.prod(w.shape[1:]) for w in weights)
        off = np.abs(projections - arrays["projection"]).max() / size
        differences.append(float(max(largest, off)))
    return differences


def evaluations(name: str):
    """`(weights, interpolation MSE, extrapolation MSE)` of each evaluation
    the reference made: at steps 0 and 1000 and after the last step."""
    arrays = record(name)
    snapshots = list(arrays["snapshot_step"])
    for step, interpolation, extrapolation in arrays["evaluation"]:
        if step == 0:
            weights = [arrays["initial_0"], arrays["initial_1"]]
        else:  # the weights before step `step`: after step `step - 1`
            index = snapshots.index(int(step) - 1)
            weights = [arrays[f"snapshot_{i}"][index] for i in (0, 1)]
        yield weights, interpolation, extrapolation


def scored(run, names) -> list[tuple[str, list[float], list[float], float]]:
    """The engine's evaluation of each recorded evaluation's weights on the
    reference's validation and test sets: `(case, ours, the reference's,
    our threshold)`, the MSEs as `[interpolation, extrapolation]`."""
    rows = []
    for r, name in enumerate(names):
        data = ReferenceData(seed=CASES[name]["seed"])
        sets = data.validation(), data.test()
        for weights, *theirs in evaluations(name):
            run.set_weights(r, weights)
            ours = [
                float(run.mean_squared_errors(x, t[np.newaxis], np.array([r]))[0])
                for x, t in sets
            ]
            rows.append((name, ours, theirs, float(run.thresholds[r])))
    return rows
