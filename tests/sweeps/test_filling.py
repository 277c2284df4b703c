"""Filling a device: packed chunks, threads, processes, unrolled loops, XLA flags.

Every way gives each chunk exactly the rows it gives trained alone. These
tests run under `KERAS_BACKEND=jax` (the JAX pass of `make test`).
"""

import dataclasses
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_nalu._files import backup_folder
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.chunks import (
    Chunk,
    ChunkLimits,
    Pack,
    backed_up_chunks,
    chunk_backup,
)
from keras_nalu.sweeps.engines import TimeLimitReached, replica_run, train_runs
from keras_nalu.sweeps.engines.jax import JaxReplicaRun
from keras_nalu.sweeps.engines.run import MAX_UNROLL
from keras_nalu.sweeps.results import read_results
from keras_nalu.sweeps.runner import run_sweep
from keras_nalu.sweeps.training import _chunk_run, train_chunk, train_chunks
from tests.helpers import keras_nalu_cli, load_backup_state, run_in_fresh_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import paper  # noqa: E402

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax", reason="the JAX engine runs on the JAX backend"
)

TIMING = ("wall_time", "iterations_per_second")
PLAN_PRESETS = sorted(
    {c.model for _, _, configs in paper.sweep_groups(paper.PRIORITY) for c in configs}
)
COMMITTED = sorted(backup_folder(paper.OUT / "results.csv").glob("*.npz"))


def _rows(rows):
    """Rows without their timing, sorted, as JSON (so that NaN equals NaN)."""
    kept = [{k: v for k, v in row.items() if k not in TIMING} for row in rows]
    kept.sort(key=lambda row: (row["config_id"], row["seed"]))
    return json.dumps(kept, sort_keys=True)


FIELDS = {"input_size": 10, "iterations": 200, "eval_every": 100}


def _chunk(model, operation="mul", seeds=(0, 1), **changes):
    config = ExperimentConfig(model=model, operation=operation, **FIELDS)
    return Chunk(dataclasses.replace(config, **changes), tuple(seeds))


def test_every_preset_and_committed_backup_steps_in_a_pack_as_alone(tmp_path):
    # The step of each run, packed with the others (each preset of the plan
    # from its start, each committed backup from its step), leaves exactly
    # the variables its own compiled block leaves (the rows follow from them
    # through the run's own evaluation, as the tests below check).
    assert len(PLAN_PRESETS) == 16  # Tables 1, 2, 5, 6 and Fig. 3
    operations = ("mul", "add", "sub")
    runs = [
        replica_run(_chunk(model, operations[i % 3]).config, [0, 1], history=False)
        for i, model in enumerate(PLAN_PRESETS)
    ]
    for backup in COMMITTED:
        chunk, (results,) = _committed_copies(backup, tmp_path, [backup.stem])
        runs.append(_chunk_run(chunk))
        assert runs[-1].restore_backup(chunk_backup(results, chunk))
        assert runs[-1].step > 0
    start = [run.get_state() for run in runs]
    alone = []
    for run in runs:
        run.train_block(run.step, run.step + 10)
        alone.append(run.get_state().variables.flat())
    for run, state in zip(runs, start):
        run.set_state(state)
    JaxReplicaRun.train_together(runs, 10, {})
    for run, expected in zip(runs, alone):
        for packed, own in zip(run.get_state().variables.flat(), expected, strict=True):
            np.testing.assert_array_equal(packed, own, err_msg=run.config.model)


class _Diverging:
    """Puts NaN into the inputs of replica 1 (or every replica) at step 150."""

    every = False

    def training_batch(self, step):
        import jax.numpy as jnp

        x, t = super().training_batch(step)
        replicas = jnp.arange(self.num_replicas)
        poisoned = (step == 150) & ((replicas == 1) | self.every)
        return jnp.where(poisoned[:, None, None], jnp.nan, x), t


def test_the_example_of_train_runs_runs():
    from keras_nalu.sweeps.engines import train

    text = train.train_runs.__doc__.split("```python")[1].split("```")[0]
    exec(textwrap.dedent(text), vars(train).copy())


def test_runs_of_other_lengths_evaluations_and_stops_train_together_as_alone():
    one = type("OneDiverges", (_Diverging, JaxReplicaRun), {})
    every = type("EveryOneDiverges", (_Diverging, JaxReplicaRun), {"every": True})
    configs = [
        _chunk("nmu", iterations=300).config,
        _chunk("nau", "add", iterations=400, eval_every=50).config,
    ]

    def runs():  # the second with three steps per iteration of its loop
        return [one(configs[0], [0, 1]), every(configs[1], [0, 1], unroll=3)]

    alone = runs()
    for run in alone:
        run.train(progress=False)
    together = runs()
    finished = []
    train_runs(together, on_records=lambda index, _: finished.append(index))
    assert together[0].results()[1]["diverged"]
    assert not together[0].results()[0]["diverged"]
    assert together[1].step == 200 < together[1].total_steps  # no replica left
    assert finished == [1, 0]  # then the first alone, in blocks of 100 steps
    for a, b in zip(alone, together):
        assert _records(a) == _records(b)
        for x, y in zip(a.stacked_weights(), b.stacked_weights()):
            np.testing.assert_array_equal(x, y)


def _records(run):
    """A run's records without timing, history included, as JSON."""
    kept = [{k: v for k, v in r.items() if k not in TIMING} for r in run.results()]
    return json.dumps(kept, sort_keys=True)


def _committed_copies(backup, tmp_path, names):
    """The committed backup copied beside a results file per name; its chunk."""
    paths = []
    for name in names:
        folder = tmp_path / name / "results.csv.backup"
        folder.mkdir(parents=True)
        shutil.copy(backup, folder)
        paths.append(folder.parent / "results.csv")
    ((chunk, engine),) = backed_up_chunks(paths[0])
    assert engine == "jax" and chunk_backup(paths[0], chunk).name == backup.name
    return chunk, paths


def test_the_committed_backups_the_next_tests_continue_are_there():
    # The packed steps above and the slow test below take cases from these
    # files: without them, they would not fail, they would leave them out.
    assert COMMITTED, f"no backup in {backup_folder(paper.OUT / 'results.csv')}"
    for backup in COMMITTED:  # a backup of a chunk in training, not a pointer
        state, _ = load_backup_state(backup)
        assert state["engine"] == "jax" and state["step"] > 0, backup


@pytest.mark.slow
@pytest.mark.parametrize("backup", COMMITTED, ids=lambda path: path.name)
def test_a_committed_backup_continues_in_a_pack_to_the_same_backup(backup, tmp_path):
    chunk, copies = _committed_copies(backup, tmp_path, ["alone", "packed"])
    with pytest.raises(TimeLimitReached):  # one block of steps
        train_chunk(chunk, limits=ChunkLimits(backup_folder(copies[0]), deadline=0))
    with pytest.raises(TimeLimitReached):
        train_chunks(
            Pack((chunk, _chunk("nau", "add", seeds=(0,), iterations=1000))),
            print,
            limits=ChunkLimits(backup_folder(copies[1]), deadline=0),
        )
    (alone, alone_arrays), (packed, packed_arrays) = (
        load_backup_state(chunk_backup(path, chunk)) for path in copies
    )
    start = load_backup_state(backup)[0]["step"]
    assert alone["step"] == packed["step"] == start + chunk.config.eval_every
    del alone["wall_time"], packed["wall_time"]
    assert alone == packed
    assert alone_arrays.keys() == packed_arrays.keys()
    for key, values in alone_arrays.items():
        np.testing.assert_array_equal(values, packed_arrays[key])


GRID = [
    ExperimentConfig(model="nau", operation="add", **FIELDS),
    ExperimentConfig(model="nmu", operation="mul", hidden_size=3, **FIELDS),
]


def _swept(path, **options):
    outcome = run_sweep(GRID, "0-1", path, chunk_size=2, progress=False, **options)
    assert outcome.complete
    return _rows(read_results(path).to_dict("records"))


@pytest.fixture(scope="module")
def one_by_one(tmp_path_factory):
    return _swept(tmp_path_factory.mktemp("one-by-one") / "results.csv")


def _took_effect(monkeypatch) -> dict[str, list]:
    """What each way to fill a device leaves behind as it trains: the chunks
    of each pack, whether each chunk trained in the main thread, whether
    each process spawned was told a sweep spawned it, the `unroll` of each
    compiled loop over a run's steps."""
    import multiprocessing.context
    import threading

    import jax

    from keras_nalu._startup import SPAWNED
    from keras_nalu.sweeps import local, training

    seen = {"packs": [], "main thread": [], "told": [], "unrolls": []}
    real_chunks, real_unit = training.train_chunks, local.train_unit
    real_start = multiprocessing.context.SpawnProcess.start
    real_scan = jax.lax.scan

    def train_chunks(unit, *args, **kwargs):
        if isinstance(unit, Pack):
            seen["packs"].append(len(unit.chunks))
        return real_chunks(unit, *args, **kwargs)

    def train_unit(*args, **kwargs):
        main = threading.current_thread() is threading.main_thread()
        seen["main thread"].append(main)
        return real_unit(*args, **kwargs)

    def start(process):
        seen["told"].append(os.environ.get(SPAWNED))
        return real_start(process)

    def scan(step, *args, **kwargs):
        if getattr(step, "__name__", None) == "one_step":  # the runs' steps
            seen["unrolls"].append(kwargs.get("unroll", 1))
        return real_scan(step, *args, **kwargs)

    monkeypatch.setattr(training, "train_chunks", train_chunks)
    monkeypatch.setattr(local, "train_unit", train_unit)
    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", start)
    monkeypatch.setattr(jax.lax, "scan", scan)
    return seen


@pytest.mark.parametrize(
    "options",
    [
        {"pack_replicas": 4},
        {"chunks_per_device": 2},
        {"processes_per_device": 2},
        {"unroll": 2},
    ],
    ids=lambda options: ",".join(options),
)
def test_each_way_to_fill_a_device_sweeps_the_rows_of_one_chunk_at_a_time(
    options, one_by_one, tmp_path, monkeypatch
):
    seen = _took_effect(monkeypatch)
    assert _swept(tmp_path / "results.csv", **options) == one_by_one
    # ... and each way took effect
    if "pack_replicas" in options:  # the two chunks in one program
        assert seen["packs"] == [2]
    if "chunks_per_device" in options:  # each chunk in a thread of its own
        assert seen["main thread"] == [False, False]
    if "processes_per_device" in options:  # two processes, told so
        assert seen["told"] == ["1", "1"]
    if "unroll" in options:  # each run's loop over steps unrolled
        assert seen["unrolls"] and set(seen["unrolls"]) == {2}


def test_an_unroll_that_cannot_be_meant_is_refused_in_one_line(tmp_path, capsys):
    # A billion steps per iteration: XLA would compile for minutes, taking
    # gigabytes, before a first step.
    argv = ["sweep", "--quiet", "--grid", "model=nau", "--grid", "input_size=10"]
    argv += ["--results", tmp_path / "r.csv", "--unroll", "1000000000"]
    code, _, err = keras_nalu_cli(capsys, *argv)
    assert code == 2
    assert err == [
        f"keras-nalu sweep: error: --unroll must be <= {MAX_UNROLL} steps: XLA "
        "compiles the step that many times over, so more only lengthens the "
        "compile. Received: --unroll 1000000000"
    ]
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match=f"expects unroll to be <= {MAX_UNROLL} steps"):
        replica_run(GRID[0], [0], unroll=MAX_UNROLL + 1)


def test_a_packed_sweep_resumed_at_other_steps_gives_the_same_rows(
    one_by_one, tmp_path
):
    path = tmp_path / "results.csv"

    def stopped(**options):
        outcome = run_sweep(
            GRID, "0-1", path, chunk_size=2, progress=False, time_limit=0, **options
        )
        assert not outcome.complete
        states = [
            load_backup_state(backup)[0]
            for backup in tmp_path.glob("results.csv.backup/*.npz")
        ]
        steps = {state["config"]["model"]: state["step"] for state in states}
        return outcome.new_rows, steps

    # Alone: the first chunk stops at step 100, and no chunk starts after it.
    assert stopped(pack_replicas=0) == (0, {"nau": 100})
    # Packed: the first finishes (its rows), the second stops at step 100.
    assert stopped(pack_replicas=4) == (2, {"nmu": 100})
    assert _swept(path, pack_replicas=4) == one_by_one


def test_command_buffers_change_no_row_on_a_cpu(one_by_one, tmp_path):
    output = run_in_fresh_python(
        """
        import json, os, sys
        from keras_nalu.sweeps.runner import run_sweep
        grid = {"model": ["nau"], "input_size": [10], "iterations": [100]}
        run_sweep(grid, "0", sys.argv[1] + "/first.csv", progress=False,
                  command_buffers=True)  # XLA's flags set, then JAX started
        sys.path.insert(0, sys.argv[2])
        from tests.sweeps.test_filling import _swept
        rows = _swept(sys.argv[1] + "/results.csv", command_buffers=True)
        print(json.dumps({"rows": rows, "flags": os.environ["XLA_FLAGS"]}))
        """,
        tmp_path,
        ROOT,
        env={"KERAS_BACKEND": "jax"},
    )
    result = json.loads(output.strip().splitlines()[-1])
    assert "--xla_gpu_enable_command_buffer=" in result["flags"]
    assert result["rows"] == one_by_one


def test_command_buffers_after_jax_started_are_one_line(tmp_path):
    import jax

    from keras_nalu.sweeps.engines.device import use_command_buffers

    jax.devices()  # JAX has started
    with pytest.raises(ValueError, match="before Python starts"):
        use_command_buffers()


def test_a_process_that_dies_ends_the_sweep_in_one_line(tmp_path, monkeypatch):
    from keras_nalu.sweeps import local

    monkeypatch.setattr(local, "_process_worker", _exit_at_once)
    with pytest.raises(RuntimeError, match="exit code 3"):
        run_sweep(
            GRID,
            "0-2",
            tmp_path / "results.csv",
            chunk_size=2,
            progress=False,
            processes_per_device=2,
        )


def _exit_at_once(*args, **kwargs):
    import os

    os._exit(3)


def test_a_gpu_packs_only_what_the_probe_measured_there(monkeypatch):
    """No pack by default on a device kind without a committed probe table."""
    import jax

    from keras_nalu.sweeps import local

    class H200:
        platform, device_kind = "gpu", "NVIDIA H200"

    monkeypatch.setattr(jax, "devices", lambda *backend: [H200()])
    assert local.default_pack_replicas() == 0
    monkeypatch.setattr(local, "MEASURED_PACK_REPLICAS", {"NVIDIA H200": 500})
    assert local.default_pack_replicas() == 500
    assert local.FillingOptions().prepared(ray_address=None).pack_replicas == 500
