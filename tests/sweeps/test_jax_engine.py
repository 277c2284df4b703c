"""The JAX replica engine: each replica is its own run, batched runs too.

These tests run under `KERAS_BACKEND=jax` (the JAX pass of `make test`).
"""

import dataclasses
import json

import keras
import numpy as np
import pytest

from keras_nalu.evaluation import sparsity_error
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.presets import build_model
from keras_nalu.sweeps.engines import (
    TrainingLimits,
    batched_run,
    read_backup,
    replica_run,
    train_batched,
    train_replicas,
)
from keras_nalu.sweeps.engines.jax import JaxReplicaRun
from keras_nalu.sweeps.engines.setup import build_replica
from tests.helpers import (
    assert_resumed_records,
    assert_set_weights_starts_one_replica,
    load_backup_state,
    save_backup_state,
)

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="the JAX engine runs on the JAX backend"
)

if keras.backend.backend() == "jax":
    import jax
    import jax.numpy as jnp


def _config(**changes):
    fields = dict(
        model="nmu", operation="mul", input_size=10, iterations=600, eval_every=200
    )
    return ExperimentConfig(**{**fields, **changes})


TIMING = ("wall_time", "iterations_per_second", "replicas")


def _without_timing(records):
    """The records minus wall time, as JSON (so that NaN equals NaN)."""
    kept = [{k: v for k, v in r.items() if k not in TIMING} for r in records]
    return json.dumps(kept, sort_keys=True)


_FLOATS = ("interpolation_mse", "extrapolation_mse", "sparsity_error")


def _assert_same_records(records, expected):
    """Equal verdicts; MSEs and histories equal up to float rounding.

    Runs of other sizes are other compiled programs, which may sum in
    another order.
    """
    assert len(records) == len(expected)
    for record, other in zip(records, expected):
        plain = {k: v for k, v in record.items() if k not in (*_FLOATS, "history")}
        plain_other = {k: v for k, v in other.items() if k not in (*_FLOATS, "history")}
        assert _without_timing([plain]) == _without_timing([plain_other])
        for key in _FLOATS:
            assert record[key] == pytest.approx(other[key], rel=1e-4, nan_ok=True)
        np.testing.assert_allclose(record["history"], other["history"], rtol=1e-4)


def _batch(run, step):
    """Every replica's batch `step`, drawn by one compiled program (as the
    compiled steps draw it; op by op, each op would compile its own)."""
    return jax.jit(run.training_batch)(step)


def _batches(run, r, steps):
    """Replica r's batches of steps 0 … steps - 1, one after the other:
    `(x [steps·B, I], t [steps·B, 1])` for `model.fit`."""
    x, t = jax.jit(jax.vmap(run.training_batch))(jnp.arange(steps))
    return tuple(np.concatenate(np.asarray(a[:, r])) for a in (x, t))


def _assert_same_weights(run_a, r_a, run_b, r_b):
    for a, b in zip(run_a.weights(r_a), run_b.weights(r_b)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_the_jax_backend_gets_the_jax_engine():
    run = replica_run(_config(iterations=10, eval_every=10), [0])
    assert type(run).__name__ == "JaxReplicaRun" and run.engine == "jax"


def test_each_replica_equals_its_run_alone():
    config = _config(sparsity_start=100, sparsity_end=400)
    together = replica_run(config, [0, 5, 9])
    together.train(progress=False)
    assert together.setup.regularizers, "the preset must have a scheduled regularizer"
    for r, seed in enumerate([0, 5, 9]):
        alone = replica_run(config, [seed])
        alone.train(progress=False)
        _assert_same_weights(together, r, alone, 0)
        _assert_same_records([together.results()[r]], alone.results())


def test_runs_of_different_tasks_train_together_as_they_train_alone():
    # Operations, subsets and ranges (a union among them) differ per run.
    configs = [
        _config(operation="mul", seed=1),
        _config(operation="add", seed=1),
        _config(
            operation="sub",
            seed=2,
            subset_ratio=0.2,
            interpolation_range="U[-2,-1] ∪ U[1,2]",
            extrapolation_range="U[-6,-2] ∪ U[2,6]",
        ),
    ]
    batched = batched_run(configs)
    x, t = _batch(batched, 3)
    assert x.shape == (3, 128, 10) and t.shape == (3, 128, 1)
    assert bool(jnp.all(jnp.abs(x[2]) >= 1.0)), "the union's gap is never drawn"
    batched.train(progress=False)
    for r, config in enumerate(configs):
        alone = replica_run(config, [config.seed])
        alone_x, alone_t = _batch(alone, 3)
        np.testing.assert_array_equal(x[r], alone_x[0])
        np.testing.assert_array_equal(t[r], alone_t[0])
        alone.train(progress=False)
        _assert_same_records([batched.results()[r]], alone.results())


class _Traced(JaxReplicaRun):
    """Counts the traces of its training step (one per compiled program)."""

    traces = 0

    def train_step(self, carry, inputs):
        type(self).traces += 1
        return super().train_step(carry, inputs)


class _Untraced(JaxReplicaRun):
    """A class of its own: programs of its own, none shared with `_Traced`."""


def test_runs_of_one_recipe_compile_their_steps_once():
    # As a sweep's chunks of one recipe: other seeds, the same program.
    config = _config(iterations=200, eval_every=100)
    first = _Traced(config, [0, 1])
    first.train(progress=False)
    traces = _Traced.traces
    assert traces > 0
    second = _Traced(config, [2, 3])
    second.train(progress=False)
    assert _Traced.traces == traces, "the second chunk compiled its steps again"
    # ... and drew its own batches: rows as with a program of its own.
    own = _Untraced(config, [2, 3])
    own.train(progress=False)
    assert _without_timing(second.results()) == _without_timing(own.results())
    for a, b in zip(second.stacked_weights(), own.stacked_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first.stacked_weights()[0], own.stacked_weights()[0])


def test_batched_runs_must_share_their_recipe():
    with pytest.raises(ValueError, match=r"differ in \['hidden_size'\]"):
        batched_run([_config(), _config(hidden_size=3, seed=1)])


def test_targets_are_each_tasks_own():
    config = _config(operation="sub", input_size=20)
    run = replica_run(config, [3, 4])
    x, t = _batch(run, 0)
    for r in range(2):
        expected = run.tasks[r].target(np.asarray(x[r]))
        np.testing.assert_allclose(np.asarray(t[r]), expected, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize(
    "model", ["nmu", "nac", "nac_mul_sigma", "nalu_separate", "gated_nau_nmu", "npu"]
)
def test_evaluations_equal_the_models_own(model):
    config = _config(model=model, iterations=200, eval_every=100)
    run = replica_run(config, [0, 1])
    run.train(progress=False)
    for r in range(2):
        model_r = run.model_for(r)
        x, t = run.tasks[r].test_data()
        prediction = np.asarray(model_r.predict_on_batch(x), np.float64)
        mse = np.mean(np.square(prediction - t.astype(np.float64)))
        last = run.results()[r]["history"][-1]
        assert last[2] == pytest.approx(mse, rel=1e-5)
        assert last[3] == pytest.approx(sparsity_error(model_r), abs=1e-6)


class _FaultyRun(JaxReplicaRun):
    """Puts NaN into replica 1's inputs at step 300."""

    def training_batch(self, step):
        x, t = super().training_batch(step)
        poisoned = (step == 300) & (jnp.arange(self.num_replicas) == 1)
        return jnp.where(poisoned[:, None, None], jnp.nan, x), t


class _Killed(Exception):
    """Stands for the process being killed between two evaluations."""


def _kill_after(steps):
    done = 0

    def progress(new):
        nonlocal done
        done += new
        if done >= steps:
            raise _Killed

    return progress


def test_a_diverged_replica_leaves_the_others_untouched():
    config = _config()
    clean = replica_run(config, [0, 1, 2])
    clean.train(progress=False)
    faulty = _FaultyRun(config, [0, 1, 2])
    faulty.train(progress=False)
    broken = faulty.results()[1]
    assert broken["diverged"] and not broken["success"]
    assert broken["iterations"] == 301  # the step that saw the NaN
    assert all(np.isfinite(w).all() for w in faulty.weights(1))  # frozen before
    for r in (0, 2):
        for a, b in zip(clean.weights(r), faulty.weights(r)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(clean.optimizer_state(r), faulty.optimizer_state(r)):
            np.testing.assert_array_equal(a, b)
        assert faulty.results()[r]["history"] == clean.results()[r]["history"]


def test_a_killed_run_continues_from_its_backup_to_the_same_records(tmp_path):
    config = _config(iterations=600, eval_every=100, sparsity_start=200)
    config = dataclasses.replace(config, sparsity_end=500)
    whole = _FaultyRun(config, [0, 1, 2])
    whole.train(progress=False)
    backup = tmp_path / "run.npz"
    with pytest.raises(_Killed):
        _FaultyRun(config, [0, 1, 2]).train(
            progress=_kill_after(400), limits=TrainingLimits(backup, 0)
        )
    resumed = _FaultyRun(config, [0, 1, 2])
    assert resumed.restore_backup(backup)
    assert resumed.step == 400
    resumed.train(progress=False)
    assert resumed.results()[1]["diverged"]
    assert_resumed_records(resumed.results(), whole.results(), 400, TIMING)
    for r in range(3):
        for a, b in zip(resumed.weights(r), whole.weights(r)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(resumed.optimizer_state(r), whole.optimizer_state(r)):
            np.testing.assert_array_equal(a, b)
    records = read_backup(backup)
    assert [(r["seed"], r["step"]) for r in records] == [(0, 400), (1, 400), (2, 400)]


def test_a_backup_of_a_batched_run_resumes_and_reads(tmp_path):
    configs = [_config(seed=0), _config(operation="add", seed=0)]
    backup = tmp_path / "run.npz"
    with pytest.raises(_Killed):
        batched_run(configs).train(
            progress=_kill_after(200), limits=TrainingLimits(backup, 0)
        )
    assert [r["operation"] for r in read_backup(backup)] == ["mul", "add"]
    records = train_batched(configs, progress=False, limits=TrainingLimits(backup))
    assert not backup.exists()
    assert_resumed_records(records, train_batched(configs, progress=False), 200, TIMING)
    replica_run(configs[0], [0]).save_backup(backup)  # one config, one seed
    with pytest.raises(ValueError, match="not a backup of this run"):
        batched_run(configs).restore_backup(backup)


def test_a_tensorflow_backup_is_refused_naming_the_backend_that_continues_it(
    tmp_path,
):
    config = _config(iterations=100, eval_every=100)
    backup = tmp_path / "run.npz"
    run = replica_run(config, [0, 1])
    run.save_backup(backup)
    # Rewrite it as the TensorFlow engine writes its backups (no engine key).
    state, arrays = load_backup_state(backup)
    del state["engine"]
    save_backup_state(backup, state, arrays)
    content = backup.read_bytes()
    with pytest.raises(ValueError) as refusal:
        replica_run(config, [0, 1]).restore_backup(backup)
    message = str(refusal.value)
    assert "is a backup of the tensorflow engine" in message
    assert "continue it with KERAS_BACKEND=tensorflow" in message
    assert "delete" not in message
    assert backup.read_bytes() == content


def test_the_schedule_acts_at_its_steps():
    config = _config(iterations=300, eval_every=100, steps_per_execution=1)
    ramped = dataclasses.replace(
        config, sparsity=10.0, sparsity_start=0, sparsity_end=100
    )
    off = dataclasses.replace(config, sparsity=0.0, sparsity_start=0, sparsity_end=100)
    runs = [replica_run(c, [0]) for c in (ramped, off)]
    for run in runs:
        run.train(progress=False)
    assert runs[0].strengths(50, 51)[0, 0] == pytest.approx(5.0)
    difference = max(
        np.abs(a - b).max() for a, b in zip(runs[0].weights(0), runs[1].weights(0))
    )
    assert difference > 1e-3


@pytest.mark.parametrize("steps_per_execution", [1, 4])
def test_a_replica_trains_as_model_fit_on_the_same_batches(steps_per_execution):
    """The engine's step is Keras' own: same loss, λ(t), Adam, clamp."""
    steps = 40
    config = _config(
        model="nmu",
        iterations=steps,
        eval_every=steps,
        sparsity=1.0,
        sparsity_start=10,
        sparsity_end=20,
        learning_rate=0.01,
        steps_per_execution=steps_per_execution,
    )
    run = replica_run(config, [7])
    run.train_block(0, steps)  # the steps alone: no evaluation
    x, t = _batches(run, 0, steps)
    model, callbacks = build_replica(dataclasses.replace(config, seed=7))
    model.fit(
        x, t, batch_size=128, epochs=1, shuffle=False, callbacks=callbacks, verbose=0
    )
    for a, b in zip(run.weights(0), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bad_engine_requests_are_one_line():
    config = _config(iterations=10, eval_every=10)
    with pytest.raises(ValueError, match="needs KERAS_BACKEND=tensorflow"):
        train_replicas(config, [0], engine="tensorflow", progress=False)
    with pytest.raises(ValueError, match="one of"):
        replica_run(config, [0], engine="pytorch")
    with pytest.raises(ValueError, match="cannot vectorize preset 'inalu'"):
        replica_run(dataclasses.replace(config, model="inalu"), [0])


def test_the_record_names_engine_and_device():
    record = train_replicas(_config(iterations=10, eval_every=10), [0], progress=False)
    assert record[0]["engine"] == "jax" and record[0]["device"] == "cpu"


def test_build_model_and_replica_agree_on_initial_weights():
    config = _config(seed=3)
    run = replica_run(config, [3])
    keras.utils.set_random_seed(3)
    model, _ = build_model("nmu", input_size=10)
    for a, b in zip(run.weights(0), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_sweep_packs_the_tasks_of_one_recipe_into_one_run(tmp_path, monkeypatch):
    from keras_nalu.sweeps import runner

    grid = {
        "model": ["nau"],
        "operation": ["add", "sub", "mul"],
        "input_size": [10],
        "iterations": [200],
        "eval_every": [100],
    }
    from keras_nalu.sweeps import engines

    sizes = []
    real = engines.batched_run

    def spy(configs, **kwargs):
        sizes.append(len(configs))
        return real(configs, **kwargs)

    monkeypatch.setattr(engines, "batched_run", spy)
    outcome = runner.run_sweep(grid, "0-1", tmp_path / "r.csv", progress=False)
    assert sizes == [6] and outcome.new_rows == 6
    rows = outcome.results.sort_values(["operation", "seed"])
    for operation in ("add", "sub", "mul"):
        alone = train_replicas(
            _config(
                model="nau",
                operation=operation,
                iterations=200,
                eval_every=100,
            ),
            [0, 1],
            progress=False,
        )
        mine = rows[rows["operation"] == operation]
        assert list(mine["success"]) == [r["success"] for r in alone]
        np.testing.assert_allclose(
            mine["extrapolation_mse"],
            [r["extrapolation_mse"] for r in alone],
            rtol=1e-4,
        )
    assert set(rows["engine"]) == {"jax"} and set(rows["replicas"]) == {6}


@pytest.mark.parametrize("option", ["clipnorm", "global_clipnorm"])
def test_norm_clipping_is_each_replicas_own(option, monkeypatch):
    """A replica clipped by its own norm trains as `model.fit` does."""
    from keras_nalu import presets

    preset = presets.Preset("clipped", ("nau", "nmu"), optimizer_options={option: 0.05})
    monkeypatch.setitem(presets.PRESETS, "clipped", preset)
    steps = 40
    config = _config(
        model="clipped", iterations=steps, eval_every=steps, learning_rate=0.05
    )
    run = replica_run(config, [7, 8])
    run.train_block(0, steps)
    x, t = _batches(run, 1, steps)
    model, _ = build_replica(dataclasses.replace(config, seed=8))
    model.fit(x, t, batch_size=128, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(run.weights(1), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# The single-module presets (one unit from 10 inputs): each trains as
# replicas, each replica as `model.fit` would on its batches.
_SINGLE_MODULE = {
    "single_nmru": "div",  # global gradient norm clipping
    "single_snmu": "mul",  # a noise seed per replica (non-trainable state)
    "single_real_npu_div": "div",  # Heim et al.'s growing L1 on Re and g
    "single_real_npu_modified": "div",  # clip, two ramps and the L1, summed
    "single_mcfc": "add",  # -mean(p²) on three weights
    "single_mcfc_mul": "mul",
    "single_dmu_sub_author": "div",  # a gate of LayerNorm(x), clipped norm
}


def _single_module_config(model, **changes):
    from keras_nalu.tasks.nalm import single_module_geometry

    fields = dict(
        model=model,
        operation=_SINGLE_MODULE[model],
        **single_module_geometry(10),
        iterations=40,
        eval_every=40,
        learning_rate=0.01,
        sparsity_start=10,
        sparsity_end=20,
        steps_per_execution=1,
    )
    return ExperimentConfig(**{**fields, **changes})


@pytest.mark.parametrize("model", list(_SINGLE_MODULE))
def test_single_module_presets_train_as_model_fit(model, monkeypatch):
    from keras_nalu import presets

    preset = presets.PRESETS[model]
    if preset.l1 is not None:  # β grows within the test's 40 steps
        l1 = {**preset.l1, "growth_every": 10}
        monkeypatch.setitem(presets.PRESETS, model, dataclasses.replace(preset, l1=l1))
    config = _single_module_config(model)
    run = replica_run(config, [3, 8])
    run.train_block(0, config.iterations)
    x, t = _batches(run, 1, config.iterations)
    replica, callbacks = build_replica(dataclasses.replace(config, seed=8))
    replica.fit(
        x, t, batch_size=128, epochs=1, shuffle=False, callbacks=callbacks, verbose=0
    )
    for a, b in zip(run.weights(1), replica.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if preset.l1 is not None:
        l1 = [r for r in run.setup.regularizers if type(r).__name__ == "L1"]
        assert run.strengths(25, 26)[0, run.setup.regularizers.index(l1[0])] == (
            pytest.approx(preset.l1["initial_strength"] * 100)
        )


def test_snmu_replicas_draw_their_own_noise():
    config = _single_module_config("single_snmu", iterations=60, eval_every=30)
    together = replica_run(config, [0, 5])
    assert together.setup.state_variables, "the sNMU's noise seed is model state"
    together.train(progress=False)
    state = together.stacked_state()
    assert not np.array_equal(state[0][0], state[0][1])
    for r, seed in enumerate([0, 5]):
        alone = replica_run(config, [seed])
        alone.train(progress=False)
        _assert_same_weights(together, r, alone, 0)
        _assert_same_records([together.results()[r]], alone.results())
    # The noise mattered: the plain NMU's weights differ after the same steps.
    plain = replica_run(dataclasses.replace(config, model="single_nmu"), [0])
    plain.train(progress=False)
    difference = max(
        np.abs(a - b).max() for a, b in zip(together.weights(0), plain.weights(0))
    )
    assert difference > 1e-4


def test_a_sweep_trains_the_nmru_over_a_range_around_zero(tmp_path):
    from keras_nalu.evaluation import single_module_threshold
    from keras_nalu.sweeps.runner import run_sweep
    from keras_nalu.tasks.nalm import single_module_task

    grid = {
        "model": ["single_nmru"],
        "operation": ["div"],
        "input_size": [10],
        "subset_ratio": [0.1],
        "overlap_ratio": [0.0],
        "interpolation_range:extrapolation_range": [
            ["U[-2,2]", "U[-6,-2] ∪ U[2,6]"],
            ["U[1,2]", "U[2,6]"],
        ],
        "iterations": [100],
        "eval_every": [50],
    }
    outcome = run_sweep(grid, "0-1", tmp_path / "results.csv", progress=False)
    rows = outcome.results
    assert len(rows) == 4 and set(rows["engine"]) == {"jax"}
    assert set(rows["replicas"]) == {4}  # both ranges, both seeds: one run
    assert np.isfinite(rows["extrapolation_mse"].astype(float)).all()
    # Judged by the single-module rule, not the two-layer W^ε.
    for _, row in rows.iterrows():
        task = single_module_task(
            "div",
            10,
            row["interpolation_range"],
            row["extrapolation_range"],
            allow_zero_divisor=True,
        )
        assert row["threshold"] == pytest.approx(single_module_threshold(task))


def test_set_weights_starts_one_replica_from_given_weights():
    assert_set_weights_starts_one_replica()
