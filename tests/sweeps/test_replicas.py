"""Vectorized replicas: each replica is its own run, and faults stay in it."""

import dataclasses
import json
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_nalu import cli
from keras_nalu.experiments import ExperimentConfig, run_experiment
from keras_nalu.sweeps.engines import (
    TrainingLimits,
    batched_run,
    read_backup,
    replica_run,
    train_replicas,
)
from keras_nalu.sweeps.engines.tensorflow import TensorFlowReplicaRun
from tests.helpers import (
    as_format_1,
    assert_resumed_records,
    assert_set_weights_starts_one_replica,
    keras_nalu_cli,
    load_backup_state,
    save_backup_state,
)

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the TensorFlow engine runs on the TensorFlow backend",
)

RECORD_KEYS = ("success", "solved_at", "best_step", "diverged", "iterations")


def _single_runs(config, seeds):
    runs = {}
    for seed in seeds:
        model, record = run_experiment(
            dataclasses.replace(config, seed=seed), verbose=False
        )
        runs[seed] = ([v.numpy() for v in model.trainable_variables], record)
    return runs


def test_batches_are_the_single_runs_streams():
    config = ExperimentConfig(
        model="nau",
        operation="mul",
        input_size=20,
        interpolation_range="U[-2,-1] ∪ U[1,2]",
        extrapolation_range="U[-6,-2] ∪ U[2,6]",
        iterations=10,
        eval_every=10,
    )
    seeds = [4, 11, 250]
    run = replica_run(config, seeds)
    assert len({task.subsets for task in run.tasks}) == 3  # three offsets
    for r, seed in enumerate(seeds):
        stream = iter(dataclasses.replace(config, seed=seed).task().train_dataset())
        for step in range(3):
            x, t = run.training_batch(tf.constant(step, tf.int64))
            expected_x, expected_t = next(stream)
            np.testing.assert_array_equal(x[r], expected_x)
            np.testing.assert_array_equal(t[r], expected_t)


@pytest.mark.parametrize(
    "model, operation, learning_rate, sparsity, seeds, solved",
    [
        # λ ramps over steps 500 → 1500; seed 0 solves the task at step 500.
        ("nau", "sub", 0.005, 1.0, [0, 3], [True, False]),
        ("nmu", "mul", 1e-3, None, [3, 4], [False, False]),
    ],
)
def test_each_replica_equals_its_single_run(
    model, operation, learning_rate, sparsity, seeds, solved
):
    config = ExperimentConfig(
        model=model,
        operation=operation,
        input_size=10,
        iterations=2_000,
        eval_every=250,
        learning_rate=learning_rate,
        sparsity=sparsity,
        sparsity_start=500,
        sparsity_end=1_500,
    )
    run = replica_run(config, seeds)
    run.train(progress=False)
    records = run.results()
    singles = _single_runs(config, seeds)
    assert run.setup.regularizers, "the preset must have a scheduled regularizer"
    for r, seed in enumerate(seeds):
        weights, single = singles[seed]
        record = records[r]
        for replica_weight, single_weight in zip(run.weights(r), weights):
            # The replicas sum in another order than the single run, and CPUs
            # with other vector units in yet another. Where the sparsity pull
            # holds a weight at 0 its gradient is rounding noise, and Adam
            # still steps it by about the learning rate, so the two jitter
            # within a step of 0: seen up to 0.54 × learning rate on an
            # AVX2-only machine.
            np.testing.assert_allclose(
                replica_weight, single_weight, atol=2 * learning_rate
            )
        for key in RECORD_KEYS:
            assert record[key] == single[key], (seed, key)
        for key in ("interpolation_mse", "extrapolation_mse", "sparsity_error"):
            # Near zero the MSEs are rounding noise: compare to the threshold.
            np.testing.assert_allclose(
                record[key], single[key], rtol=1e-3, atol=1e-2 * single["threshold"]
            )
        assert record["threshold"] == single["threshold"]
        assert record["config"] == single["config"]
        assert record["subsets"] == single["subsets"]
        assert [h[0] for h in record["history"]] == [h[0] for h in single["history"]]
        model = run.model_for(r)
        for variable, values in zip(model.trainable_variables, run.weights(r)):
            np.testing.assert_array_equal(variable.numpy(), values)
    assert [record["success"] for record in records] == solved


def test_stop_on_success_stops_each_replica_at_its_own_step():
    config = ExperimentConfig(
        model="nau",
        operation="sub",
        input_size=10,
        iterations=1_000,
        eval_every=250,
        learning_rate=0.01,
        sparsity=1.0,
        sparsity_start=500,
        sparsity_end=1_500,
        stop_on_success=True,
    )
    seeds = [2, 6]  # seed 6 solves at step 250, seed 2 does not within 1,000
    records = train_replicas(config, seeds, progress=False)
    singles = _single_runs(config, seeds)
    for record, seed in zip(records, seeds):
        for key in RECORD_KEYS:
            assert record[key] == singles[seed][1][key], (seed, key)
    assert [record["iterations"] for record in records] == [1_000, 250]


class _FaultyRun(TensorFlowReplicaRun):
    """Puts NaN into replica 1's inputs at step 300."""

    def training_batch(self, step):
        x, t = super().training_batch(step)
        poisoned = tf.logical_and(
            tf.equal(step, 300), tf.equal(tf.range(self.num_replicas), 1)
        )
        return tf.where(poisoned[:, None, None], np.float32(np.nan), x), t


def test_a_diverged_replica_leaves_the_others_untouched():
    config = ExperimentConfig(
        model="nmu", operation="mul", input_size=10, iterations=600, eval_every=200
    )
    seeds = [0, 1, 2]
    clean = replica_run(config, seeds)
    clean.train(progress=False)
    faulty = _FaultyRun(config, seeds)
    faulty.train(progress=False)
    clean_records, faulty_records = clean.results(), faulty.results()

    broken = faulty_records[1]
    assert broken["diverged"] and not broken["success"]
    assert broken["iterations"] == 301  # the step that saw the NaN
    assert all(np.isfinite(w).all() for w in faulty.weights(1))  # frozen before
    assert not clean_records[1]["diverged"]
    for r in (0, 2):
        for a, b in zip(clean.weights(r), faulty.weights(r)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(clean.optimizer_state(r), faulty.optimizer_state(r)):
            np.testing.assert_array_equal(a, b)
        assert faulty_records[r]["history"] == clean_records[r]["history"]
        assert not faulty_records[r]["diverged"]
    assert len(clean.optimizer_state(0)) == 4  # Adam's m and v of two kernels


@pytest.mark.parametrize(
    "seeds, message",
    [([], "at least one seed"), ([1, 1], "distinct"), ([-1], ">= 0"), (["a"], ">= 0")],
)
def test_bad_seeds_are_refused(seeds, message):
    with pytest.raises(ValueError, match=message):
        replica_run(ExperimentConfig(input_size=10, iterations=10), seeds)


def test_presets_with_per_model_callbacks_are_refused():
    with pytest.raises(ValueError, match="inalu"):
        replica_run(ExperimentConfig(model="inalu", input_size=10), [0, 1])


def test_replicas_train_with_the_configured_epsilon():
    config = ExperimentConfig(model="nmu", input_size=10, iterations=10, epsilon=1e-8)
    assert replica_run(config, [0, 1]).optimizer.epsilon == pytest.approx(1e-8)
    default = dataclasses.replace(config, epsilon=None)
    assert replica_run(default, [0, 1]).optimizer.epsilon == pytest.approx(1e-7)


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


TIMING = ("wall_time", "iterations_per_second")


def _without_timing(records, omit=()):
    """The records minus wall time (and `omit`), as JSON (so that NaN equals NaN)."""
    timing = (*TIMING, *omit)
    kept = [{k: v for k, v in r.items() if k not in timing} for r in records]
    return json.dumps(kept, sort_keys=True)


def test_a_killed_run_continues_from_its_backup_to_the_same_records(tmp_path):
    # λ ramps across the kill, and replica 1 diverges before it: the backup
    # must carry the optimizer's moments and step count, the stopped replica
    # and the evaluations so far.
    config = ExperimentConfig(
        model="nmu",
        operation="mul",
        input_size=10,
        iterations=600,
        eval_every=100,
        sparsity_start=200,
        sparsity_end=500,
    )
    seeds = [0, 1, 2]
    whole = _FaultyRun(config, seeds)
    whole.train(progress=False)

    backup = tmp_path / "run.npz"
    killed = _FaultyRun(config, seeds)
    with pytest.raises(_Killed):
        killed.train(progress=_kill_after(400), limits=TrainingLimits(backup, 0))
    resumed = _FaultyRun(config, seeds)
    assert resumed.restore_backup(backup)
    assert resumed.step == 400
    reported = []
    resumed.train(progress=reported.append, limits=TrainingLimits(backup, 0))
    assert reported == [400, 100, 100]  # first the steps it starts from

    assert resumed.results()[1]["diverged"]
    assert_resumed_records(resumed.results(), whole.results(), 400, TIMING)
    assert all(
        r["evaluations"] > len(r["history"]) for r in resumed.results()
    )  # counted whole, listed from the restore on
    for r in range(3):
        for a, b in zip(resumed.weights(r), whole.weights(r)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(resumed.optimizer_state(r), whole.optimizer_state(r)):
            np.testing.assert_array_equal(a, b)


def test_train_replicas_resumes_from_a_backup_and_then_deletes_it(tmp_path):
    config = ExperimentConfig(
        model="nau", input_size=10, iterations=300, eval_every=100
    )
    backup = tmp_path / "run.npz"
    with pytest.raises(_Killed):
        replica_run(config, [3, 4]).train(
            progress=_kill_after(100), limits=TrainingLimits(backup, 0)
        )
    assert backup.exists()
    reported = []
    records = train_replicas(
        config, [3, 4], progress=reported.append, limits=TrainingLimits(backup)
    )
    assert reported[0] == 100
    assert not backup.exists()
    expected = train_replicas(config, [3, 4], progress=False)
    assert_resumed_records(records, expected, 100, TIMING)


# The faulty NMU run of seeds 0-2 over 600 steps: trained whole, and killed
# at step 400 after its backup there (each test copies the backup it changes).
FAULTY = ExperimentConfig(
    model="nmu", operation="mul", input_size=10, iterations=600, eval_every=100
)


@pytest.fixture(scope="module")
def faulty_whole():
    whole = _FaultyRun(FAULTY, [0, 1, 2])
    whole.train(progress=False)
    return whole


@pytest.fixture(scope="module")
def faulty_killed(tmp_path_factory):
    """The killed run and its backup at step 400."""
    backup = tmp_path_factory.mktemp("faulty") / "run.npz"
    killed = _FaultyRun(FAULTY, [0, 1, 2])
    with pytest.raises(_Killed):
        killed.train(progress=_kill_after(400), limits=TrainingLimits(backup, 0))
    return killed, backup


def test_a_format_1_backup_restores_whole_and_is_saved_as_format_2(
    tmp_path, capsys, faulty_whole, faulty_killed
):
    """A backup of the earlier layout (every evaluation) continues exactly."""
    config, whole, (killed, killed_backup) = FAULTY, faulty_whole, faulty_killed
    backup = tmp_path / "run.npz"
    shutil.copy(killed_backup, backup)
    as_format_1(backup, killed)
    assert load_backup_state(backup)[0]["format"] == 1
    records = read_backup(backup)
    assert cli.main(["progress", str(backup), "--brief"]) == 0
    assert "run.npz: nmu mul, step 400 of 600" in capsys.readouterr().out
    resumed = _FaultyRun(config, [0, 1, 2])
    assert resumed.restore_backup(backup)
    fields = ["success", "solved_at", "best_step", "interpolation_mse"]
    fields += ["extrapolation_mse", "sparsity_error", "diverged", "threshold"]
    fields += ["last_solved_at", "final_success"]
    assert json.dumps([{k: r[k] for k in fields} for r in records]) == json.dumps(
        [{k: r[k] for k in fields} for r in resumed.results()]
    )
    resumed.train(progress=False, limits=TrainingLimits(backup, 0))
    # Its evaluations came with it: the records equal, history included.
    assert _without_timing(resumed.results()) == _without_timing(whole.results())
    state, _ = load_backup_state(backup)  # the next backup is of format 2
    assert state["format"] == 2 and "evaluations" not in state
    assert np.load(backup)["state"].dtype == np.uint8


def test_a_run_without_history_gives_the_same_verdicts(faulty_whole):
    config, whole = FAULTY, faulty_whole
    lean = _FaultyRun(config, [0, 1, 2], history=False)
    lean.train(progress=False)
    assert lean.verdicts.history is None
    assert [r["history"] for r in lean.results()] == [None] * 3
    assert _without_timing(lean.results(), ["history"]) == _without_timing(
        whole.results(), ["history"]
    )
    records = train_replicas(config, [0, 1], progress=False, history=False)
    assert [r["history"] for r in records] == [None, None]
    with pytest.raises(ValueError, match="history=1"):
        replica_run(config, [0], history=1)


def test_a_backup_does_not_grow_with_the_evaluations(tmp_path):
    """100 or 400 steps, evaluated every 10: backups of about the same size."""
    config = ExperimentConfig(
        model="nmu",
        operation="mul",
        task_name="simple",
        input_size=4,
        iterations=1000,
        eval_every=10,
    )
    sizes = {}
    for steps in (100, 400):
        with pytest.raises(_Killed):
            replica_run(config, [0, 1, 2]).train(
                progress=_kill_after(steps),
                limits=TrainingLimits(tmp_path / f"{steps}.npz", 0),
            )
        sizes[steps] = (tmp_path / f"{steps}.npz").stat().st_size
        assert read_backup(tmp_path / f"{steps}.npz")[0]["step"] == steps
    # 30 more evaluations of 3 replicas (format 1 grew by 72 kB for 90 here).
    assert abs(sizes[400] - sizes[100]) < 300, sizes


def test_a_backup_of_another_run_is_refused(tmp_path):
    config = ExperimentConfig(
        model="nau", input_size=10, iterations=100, eval_every=100
    )
    backup = tmp_path / "run.npz"
    replica_run(config, [0, 1]).save_backup(backup)
    content = backup.read_bytes()
    others = [
        replica_run(config, [0, 2]),
        replica_run(dataclasses.replace(config, learning_rate=0.01), [0, 1]),
    ]
    for other in others:
        with pytest.raises(ValueError, match="not a backup of this run"):
            other.restore_backup(backup)
        assert other.step == 0
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"\x00 not a backup")
    with pytest.raises(ValueError, match="not a readable sweep backup"):
        replica_run(config, [0, 1]).restore_backup(garbage)
    assert backup.read_bytes() == content
    assert not replica_run(config, [0, 1]).restore_backup(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="backup_every"):
        replica_run(config, [0, 1]).train(
            progress=False, limits=TrainingLimits(backup, -1)
        )


def test_a_backup_of_the_jax_engine_names_the_backend_that_continues_it(tmp_path):
    config = ExperimentConfig(model="nau", input_size=10, iterations=100)
    backup = tmp_path / "run.npz"
    replica_run(config, [0, 1]).save_backup(backup)
    state, arrays = load_backup_state(backup)
    save_backup_state(backup, {**state, "engine": "jax"}, arrays)
    content = backup.read_bytes()
    with pytest.raises(ValueError) as refusal:
        replica_run(config, [0, 1]).restore_backup(backup)
    message = str(refusal.value)
    assert "is a backup of the jax engine" in message
    assert "continue it with KERAS_BACKEND=jax" in message
    assert "move it aside" in message and "delete" not in message
    assert backup.read_bytes() == content
    assert {record["engine"] for record in read_backup(backup)} == {"jax"}


def test_no_refusal_of_a_backup_advises_deleting_it(tmp_path):
    config = ExperimentConfig(model="nau", input_size=10, iterations=100)
    backup = tmp_path / "run.npz"
    replica_run(config, [0, 1]).save_backup(backup)
    state, arrays = load_backup_state(backup)
    broken = {
        "unreadable": b"PK\x05\x06" + bytes(18),
        "damaged": lambda: save_backup_state(backup, {**state, "step": -1}, arrays),
        "another run": lambda: save_backup_state(
            backup, {**state, "seeds": [0, 2]}, arrays
        ),
    }
    for name, damage in broken.items():
        if callable(damage):
            damage()
        else:
            backup.write_bytes(damage)
        with pytest.raises(ValueError) as refusal:
            replica_run(config, [0, 1]).restore_backup(backup)
        assert "delete" not in str(refusal.value), name
        assert "move it aside" in str(refusal.value), name


def test_read_backup_gives_the_verdicts_of_the_run_at_its_step(
    tmp_path, capsys, faulty_killed
):
    """`read_backup` and `keras-nalu progress` look into a chunk in training.

    Replica 1 diverges before the kill; the others are judged on the
    evaluations up to the backup's step, as the restored run judges them.
    """
    results = tmp_path / "sweep.csv"
    backup = tmp_path / "sweep.csv.backup" / "chunk.npz"
    backup.parent.mkdir()
    shutil.copy(faulty_killed[1], backup)
    restored = _FaultyRun(FAULTY, [0, 1, 2])
    assert restored.restore_backup(backup)
    records = read_backup(backup)
    assert [r["seed"] for r in records] == [0, 1, 2]
    assert {(r["step"], r["iterations"]) for r in records} == {(400, 600)}
    fields = ["success", "solved_at", "best_step", "interpolation_mse"]
    fields += ["extrapolation_mse", "sparsity_error", "diverged", "threshold"]
    expected = [{k: r[k] for k in fields} for r in restored.results()]
    assert json.dumps([{k: r[k] for k in fields} for r in records]) == json.dumps(
        expected
    )
    assert records[1]["diverged"] and not records[1]["success"]

    assert cli.main(["progress", str(results)]) == 0
    out = capsys.readouterr().out.splitlines()
    solved = sum(r["success"] for r in records)
    assert out[0] == (
        f"chunk.npz: nmu mul, step 400 of 600: {solved} of 3 seeds solved so far "
        f"(threshold {records[0]['threshold']:.3g}; tensorflow engine)"
    )
    assert out[1].split()[:3] == ["seed", "success", "solved_at"]
    assert [line.split()[0] for line in out[2:]] == ["0", "1", "2"]
    assert cli.main(["progress", str(backup), "--brief"]) == 0
    assert capsys.readouterr().out.splitlines() == out[:1]


def test_progress_without_a_backup_or_with_a_broken_one_is_one_line(tmp_path, capsys):
    (tmp_path / "sweep.csv").write_text("model,operation,seed\n")
    assert cli.main(["progress", str(tmp_path / "sweep.csv")]) == 2
    assert "holds no backup" in capsys.readouterr().err
    broken = tmp_path / "sweep.csv.backup" / "chunk.npz"
    broken.parent.mkdir()
    broken.write_bytes(b"not a zip")
    assert cli.main(["progress", str(tmp_path / "sweep.csv")]) == 2
    assert "is not a readable sweep backup" in capsys.readouterr().err


def test_the_jax_engine_on_another_backend_is_one_line():
    config = ExperimentConfig(model="nau", input_size=10, iterations=10, eval_every=10)
    with pytest.raises(ValueError, match="The jax engine needs KERAS_BACKEND=jax"):
        train_replicas(config, [0], engine="jax", progress=False)
    with pytest.raises(ValueError, match="batched runs of different tasks need"):
        batched_run([config, dataclasses.replace(config, operation="sub", seed=1)])


@pytest.mark.parametrize("option", ["clipnorm", "global_clipnorm"])
def test_norm_clipping_is_each_replicas_own(option, monkeypatch):
    """Clipped by its own gradient norm, a replica trains as `model.fit` does.

    Over 20 steps: within 60 this clipped run turns chaotic (a 10⁻⁷
    difference in how a backend orders a sum grows tenfold every five steps),
    so a longer comparison would test the machine's arithmetic, not the clip.
    """
    from keras_nalu import presets

    preset = presets.Preset("clipped", ("nau", "nmu"), optimizer_options={option: 0.05})
    monkeypatch.setitem(presets.PRESETS, "clipped", preset)
    config = ExperimentConfig(
        model="clipped",
        operation="mul",
        input_size=10,
        iterations=20,
        eval_every=20,
        learning_rate=0.05,
    )
    seeds = [1, 2]
    run = replica_run(config, seeds)
    run.train(progress=False)
    singles = _single_runs(config, seeds)
    unclipped = dataclasses.replace(config, model="nmu")
    free = replica_run(unclipped, seeds)
    free.train(progress=False)
    for r, seed in enumerate(seeds):
        for replica_weight, single_weight in zip(run.weights(r), singles[seed][0]):
            np.testing.assert_allclose(replica_weight, single_weight, atol=1e-4)
        moved = max(
            np.abs(a - b).max() for a, b in zip(run.weights(r), free.weights(r))
        )
        assert moved > 1e-3  # the clip was in force


def test_set_weights_starts_one_replica_from_given_weights():
    assert_set_weights_starts_one_replica()  # the TF engine (the JAX one: there)


def test_the_tensorflow_engine_refuses_each_way_of_the_jax_engine(tmp_path, capsys):
    from keras_nalu.sweeps.local import JAX_ONLY

    config = ExperimentConfig(model="nau", input_size=10, iterations=100)
    with pytest.raises(ValueError, match="unroll needs the JAX engine"):
        replica_run(config, [0], unroll=2)
    argv = ["sweep", "--quiet", "--grid", "model=nau,nmu", "--grid", "input_size=10"]
    argv += ["--grid", "iterations=100", "--results", str(tmp_path / "r.csv")]
    asked = [
        ["--unroll", "2"],
        ["--pack-replicas", "100"],
        ["--chunks-per-device", "2"],
    ]
    for flag, value in asked:
        code, _, err = keras_nalu_cli(capsys, *argv, flag, value)
        assert code == 2
        assert err == [
            "keras-nalu sweep: error: The tensorflow engine trains one chunk at a "
            "time, alone: chunks side by side in threads, packs and unrolled loops "
            f"need the JAX engine (KERAS_BACKEND=jax). Received: {flag} {value}"
        ]
    assert not (tmp_path / "r.csv").exists()
    # ... and the help of those flags, and of those only, says "JAX engine"
    sweep = cli.build_parser()._subparsers._group_actions[0].choices["sweep"]
    said = {a.dest for a in sweep._actions if (a.help or "").startswith("JAX engine")}
    assert said == set(JAX_ONLY) == {flag[2:].replace("-", "_") for flag, _ in asked}
