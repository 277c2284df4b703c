"""The JAX engine's training step against Madsen & Johansen's own code, step by step.

`benchmarks/reference/trajectories.py` ran the reference code's
`experiments/simple_function_static.py` (stable-nalu, NAU → NMU on ×) in
float64 for the cases of `benchmarks/results/reference/cases.json` and
recorded every step. Here the engine's own step
(`JaxReplicaRun.step_on_batch`, the body of its compiled loop) replays each
case from the recorded initial weights on the reference's batches,
regenerated in NumPy (`benchmarks/reference/reference_data.py`) and checked
bit for bit against the recorded hashes (`benchmarks/reference/replay.py`):

- with the reference's settings (float64, `REFERENCE_SETTINGS`: Adam's
  ε = 10⁻⁸, which Keras adds before the bias correction as the paper's
  PyTorch 1.2 did, and λ recomputed every step), every step's weights equal
  the reference's to `EXACT`, and so do λ and λ·R;
- with the package's settings (float32, Keras' ε = 10⁻⁷, λ held over
  blocks of 50 steps), the weights stay within `PRODUCTION_BOUND` of the
  reference's (docs/protocol.md quotes it);
- the engine's evaluation of the reference's weights on the reference's
  validation and test sets gives the reference's MSE and its verdict.

These tests run under `KERAS_BACKEND=jax`, in `make test`'s environment without
TensorFlow (`make test-without-tensorflow`).
"""

import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_nalu.experiments import REFERENCE_SETTINGS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks/reference"))

import replay  # noqa: E402
from reference_data import ReferenceData  # noqa: E402
from trajectories import batch_hash  # noqa: E402

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="the JAX engine runs on the JAX backend"
)

EXACT = 1e-12
"""Largest difference of a weight, λ and λ·R with the reference's settings
(measured: 3·10⁻¹⁵)."""

PRODUCTION_BOUND = 3e-4
"""Largest difference of a weight over the 1,001 steps with the package's
settings (float32, ε = 10⁻⁷, λ in blocks of 50): measured 7.3·10⁻⁵ in the
case started near a solution, where the clamps act; 1.2·10⁻⁶ from the
reference's random starts."""

REFERENCE_MUL_THRESHOLD = 0.16001
"""The reference's × threshold: its R script's W^ε on 26-element subsets."""

GROUPS = replay.groups()
NEAR = next(g for g in GROUPS if any(replay.CASES[n]["near"] for n in g))


def _check_evaluations(run, names, rtol: float) -> set[bool]:
    """The engine's MSE of the reference's weights at each of its evaluations
    is the reference's (to `rtol`), and so is the verdict; returns them."""
    verdicts = set()
    for name, ours, theirs, threshold in replay.scored(run, names):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, err_msg=name)
        solved = ours[1] < threshold
        assert solved == (theirs[1] < REFERENCE_MUL_THRESHOLD), name
        verdicts.add(solved)
    return verdicts


@pytest.mark.parametrize("names", GROUPS, ids="+".join)
def test_the_reference_data_are_regenerated_bit_for_bit(names):
    for name in names:
        data = ReferenceData(seed=replay.CASES[name]["seed"])
        arrays = replay.record(name)
        assert [list(s) for s in data.subsets] == arrays["subsets"].tolist()
        hashes = [batch_hash(*data.validation()), batch_hash(*data.test())]
        assert hashes == arrays["set_hash"].tolist()
        x, t = data.training_stream().draw(3)
        first = [batch_hash(*batch) for batch in zip(x, t)]
        assert first == arrays["batch_hash"][:3].tolist()


@pytest.mark.parametrize("names", GROUPS, ids="+".join)
def test_every_step_and_evaluation_equal_the_reference_codes(names):
    with replay.float64():
        replayed = replay.replay(names, **REFERENCE_SETTINGS)
        # Near a solution the MSE is a difference of nearly equal numbers:
        # 10⁻⁹ of it is ~10⁻¹⁵ of the targets' scale.
        verdicts = _check_evaluations(replayed["run"], names, rtol=1e-9)
    differences = replay.weight_differences(replayed, names)
    assert max(differences) <= EXACT, dict(zip(names, differences))
    for r, name in enumerate(names):
        arrays = replay.record(name)
        assert (replayed["hashes"][r] == arrays["batch_hash"]).all(), name
        assert np.abs(replayed["lam"] - arrays["lam"]).max() <= EXACT, name
        scale = np.maximum(1.0, np.abs(arrays["penalty"]))
        penalty = np.abs(replayed["regularization"][:, r] - arrays["penalty"])
        assert (penalty <= EXACT * scale).all(), name
        # Keras' MSE takes its mean over the output axis in float32 on JAX:
        # the loss's value (not its gradient) is a float32 number.
        np.testing.assert_allclose(
            replayed["loss"][:, r], arrays["loss"], rtol=1e-6, err_msg=name
        )
    if names == NEAR:
        assert verdicts == {False, True}  # it starts unsolved and ends solved


@pytest.mark.parametrize(
    "names", [NEAR, next(g for g in GROUPS if "h10-s0" in g)], ids="+".join
)
def test_the_production_step_stays_within_its_bound(names):
    replayed = replay.replay(names)
    differences = replay.weight_differences(replayed, names)
    assert max(differences) <= PRODUCTION_BOUND, dict(zip(names, differences))
    # In float32 the outputs round to ~10⁻⁴ of themselves, ~10⁻² of the
    # error of a model near a solution: its MSE is off by 2·10⁻³ (h4-near).
    _check_evaluations(replayed["run"], names, rtol=1e-2)
