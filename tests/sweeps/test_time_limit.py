"""Sweeps that stop at a time limit, resume backups cut otherwise, share devices."""

import time

import pandas as pd
import pytest

from keras_nalu._files import backup_folder
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps import local
from keras_nalu.sweeps.chunks import ChunkLimits
from keras_nalu.sweeps.engines import TimeLimitReached, replica_run
from keras_nalu.sweeps.results import read_results
from keras_nalu.sweeps.runner import plan_sweep, run_sweep
from tests.helpers import load_backup_state, save_backup_state

TIMING = ["wall_time", "iterations_per_second"]
# The simple 10-parameter task: four inputs, so each step is cheap.
CONFIG = ExperimentConfig(
    model="nmu",
    operation="mul",
    task_name="simple",
    input_size=4,
    iterations=300,
    eval_every=100,
)


def _sorted(table):
    return table.sort_values(["config_id", "seed"]).reset_index(drop=True)


def _backups(path):
    return sorted(backup_folder(path).glob("*.npz"))


def test_a_time_limit_stops_after_a_backup_and_a_rerun_continues(tmp_path):
    stopped = tmp_path / "stopped.csv"
    first = run_sweep(
        [CONFIG],
        "0-1",
        stopped,
        chunk_size=2,
        progress=False,
        backup_every=600,
        time_limit=0,
    )
    assert not first.complete and first.new_rows == 0
    (backup,) = _backups(stopped)  # written at the limit, not after 600 s
    assert load_backup_state(backup)[0]["step"] == 100

    # More seeds, another chunk size: the backed-up chunk still comes first.
    plan = plan_sweep([CONFIG], "0-2", stopped, chunk_size=3)
    assert [chunk.seeds for chunk in plan] == [(0, 1), (2,)]
    second = run_sweep([CONFIG], "0-2", stopped, chunk_size=3, progress=False)
    assert second.complete and second.new_rows == 3
    assert sorted(read_results(stopped)["seed"]) == [0, 1, 2]
    assert not _backups(stopped)

    # The continued chunk's rows are those of the chunk trained unstopped.
    reference = run_sweep(
        [CONFIG], "0-1", tmp_path / "reference.csv", chunk_size=2, progress=False
    )
    continued = read_results(stopped).query("seed < 2")
    pd.testing.assert_frame_equal(
        _sorted(continued).drop(columns=TIMING),
        _sorted(read_results(reference.path)).drop(columns=TIMING),
    )


def test_no_chunk_starts_after_the_time_limit(tmp_path):
    one_block = ExperimentConfig(
        model="nau", input_size=10, iterations=100, eval_every=100
    )
    path = tmp_path / "results.csv"
    outcome = run_sweep(
        [one_block], "0-1", path, chunk_size=1, progress=False, time_limit=0
    )
    assert not outcome.complete and outcome.new_rows == 1  # the first chunk only
    assert (
        run_sweep([one_block], "0-1", path, chunk_size=1, progress=False).new_rows == 1
    )


def test_a_time_limit_needs_backups_trained_here(tmp_path):
    path = tmp_path / "results.csv"
    with pytest.raises(ValueError, match="time_limit"):
        run_sweep([CONFIG], "0", path, time_limit=-1)
    with pytest.raises(ValueError, match="backups"):
        run_sweep([CONFIG], "0", path, time_limit=10, backup_every=None)
    with pytest.raises(ValueError, match="chunks_per_device"):
        run_sweep([CONFIG], "0", path, chunks_per_device=0)
    with pytest.raises(ValueError, match="ExperimentConfig"):
        run_sweep(["nmu"], "0", path)


def test_a_list_of_configs_groups_by_the_fields_it_varies(tmp_path):
    configs = [
        ExperimentConfig(model="nau", input_size=10, iterations=20, hidden_size=h)
        for h in (2, 3)
    ]
    outcome = run_sweep(configs, "0", tmp_path / "results.csv", progress=False)
    assert outcome.group_by == ("operation", "model", "hidden_size")
    assert sorted(outcome.results["hidden_size"]) == [2, 3]


def test_a_backup_from_before_task_name_restores(tmp_path):
    config = ExperimentConfig(
        model="nau", input_size=10, iterations=200, eval_every=100
    )
    path = tmp_path / "chunk.npz"
    replica_run(config, [0]).save_backup(path)  # the run's identity is what counts
    state, arrays = load_backup_state(path)
    del state["config"]["task_name"]  # as written before the field existed
    save_backup_state(path, state, arrays)
    assert replica_run(config, [0]).restore_backup(path)
    other = ExperimentConfig(model="nau", input_size=10, iterations=300, eval_every=100)
    with pytest.raises(ValueError, match="not a backup of this run"):
        replica_run(other, [0]).restore_backup(path)


def test_chunks_sharing_a_device_stop_at_the_deadline(monkeypatch):
    jax = pytest.importorskip("jax")
    device = jax.devices()[0]
    taken = []

    # Each worker takes a chunk before it looks at the deadline, whichever
    # starts first: no pause is needed for both to take one.
    def fake_unit(chunk, on_rows, on_steps, limits, unroll=1):
        taken.append(chunk)
        if chunk == "stops":
            raise TimeLimitReached("stopped at its backup")
        on_rows([chunk])

    monkeypatch.setattr(local, "train_unit", fake_unit)
    written = []
    with pytest.raises(TimeLimitReached):
        local._train_on_devices(
            ["finishes", "stops", "later", "later"],
            [device, device],
            written.extend,
            lambda steps: None,
            ChunkLimits(deadline=time.monotonic() - 1),
        )
    assert sorted(taken) == ["finishes", "stops"]  # no chunk after the deadline
    assert written == ["finishes"]  # a finished chunk's rows are kept

    taken.clear()
    written.clear()
    chunks = ["a", "b", "c", "d", "e"]
    local._train_on_devices(
        chunks, [device] * 2, written.extend, lambda steps: None, ChunkLimits()
    )
    assert sorted(written) == chunks


def test_threads_say_how_many_chunks_the_deadline_left():
    jax = pytest.importorskip("jax")
    # no chunk is predicted to finish by the deadline: none starts
    limits = ChunkLimits(deadline=time.monotonic() + 60)
    with pytest.raises(TimeLimitReached, match="with 3 chunks left"):
        local._train_on_devices(
            ["a", "b", "c"], jax.devices()[:1] * 2, None, None, limits, lambda _: 600
        )


def test_chunks_per_device_lists_each_device_that_many_times(monkeypatch):
    jax = pytest.importorskip("jax")
    import keras

    seen = []
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setattr(local, "local_devices", lambda: [])
    monkeypatch.setattr(
        local, "_train_on_devices", lambda chunks, devices, *rest: seen.append(devices)
    )
    filling = local.FillingOptions(chunks_per_device=3, pack_replicas=0)
    local.train_locally(["a", "b"], None, None, filling=filling)
    assert seen == [jax.devices()[:1] * 3]


def test_a_resumed_sweeps_bar_counts_only_the_steps_trained_here_as_speed(
    tmp_path, monkeypatch
):
    """The steps a chunk's backup starts from move the bar, not its rate."""
    import tqdm.auto

    path = tmp_path / "results.csv"
    run_sweep([CONFIG], "0-1", path, chunk_size=2, progress=False, time_limit=0)
    (backup,) = _backups(path)
    assert load_backup_state(backup)[0]["step"] == 100  # of 300
    bars, updates = [], []

    class Recorded(tqdm.auto.tqdm):
        def update(self, n=1):
            updates.append(n)  # what tqdm's smoothed rate is made of
            return super().update(n)

        def close(self):
            if not self.disable:  # the first close
                bars.append(self.format_dict)
            super().close()

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorded)
    resumed = run_sweep([CONFIG], "0-1", path, chunk_size=2)
    assert resumed.complete
    (bar,) = bars
    assert bar["n"] == bar["total"] == 2 * 300  # the whole chunk is done
    trained_here = 2 * (300 - 100)
    assert bar["n"] - bar["initial"] == trained_here  # tqdm's average rate
    assert sum(updates) == trained_here


def test_chunks_stopped_together_are_each_named_once():
    # Threads, a pack or processes: every chunk in training stops, each at
    # its next evaluation; the one message names each and its backup.
    from keras_nalu.sweeps.engines.loop import stop_with, stopped_together

    ctrl_c = stop_with(
        KeyboardInterrupt,
        "nau-add ×2 seeds stopped at step 100 of 1,000, backed up to a.npz",
        again=True,
    )
    late = stop_with(
        TimeLimitReached,
        "nmu-mul ×2 seeds stopped at its time limit at step 200 of 1000; backup: b.npz",
        again=False,
    )
    assert stopped_together([ctrl_c]) is ctrl_c
    together = stopped_together([late, ctrl_c])
    assert isinstance(together, KeyboardInterrupt)  # Ctrl-C first
    assert str(together) == (
        "nmu-mul ×2 seeds stopped at its time limit at step 200 of 1000; backup: "
        "b.npz; nau-add ×2 seeds stopped at step 100 of 1,000, backed up to a.npz: "
        "run it again to continue"
    )
    assert isinstance(stopped_together([late, late]), TimeLimitReached)
