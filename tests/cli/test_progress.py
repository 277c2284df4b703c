"""`keras-nalu progress`: missing files, files that are no backup, every chunk."""

import shutil
import zipfile

import pytest

from keras_nalu import cli
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.engines import TrainingLimits, replica_run
from tests.helpers import load_backup_state, save_backup_state


def keras_nalu(capsys, *argv):
    """`keras-nalu ARGV` here: (exit status, stdout, stderr lines)."""
    code = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line]


@pytest.fixture(scope="module")
def backup(tmp_path_factory):
    """A backup of a two-seed chunk at step 100 of 200."""
    config = ExperimentConfig(
        model="nau", input_size=10, iterations=200, eval_every=100
    )
    run = replica_run(config, seeds=[0, 1])
    path = tmp_path_factory.mktemp("progress") / "chunk.npz"
    with pytest.raises(KeyboardInterrupt):  # stopped after its first block

        def stop(steps):
            raise KeyboardInterrupt

        run.train(progress=stop, limits=TrainingLimits(path, 0))
    return path


def test_a_missing_results_file_is_no_such_file(tmp_path, capsys):
    code, out, err = keras_nalu(capsys, "progress", tmp_path / "missing.csv")
    assert code == 2 and out == "" and len(err) == 1
    assert f"no such results file: {tmp_path / 'missing.csv'}" in err[0]
    assert "in training" not in err[0]
    code, out, err = keras_nalu(capsys, "progress", tmp_path / "missing.npz")
    assert code == 2 and len(err) == 1
    assert f"no such backup file: {tmp_path / 'missing.npz'}" in err[0]


def test_a_file_that_is_no_backup_is_never_to_be_deleted(tmp_path, capsys):
    renamed = tmp_path / "model.npz"  # a .keras file is a zip archive too
    with zipfile.ZipFile(renamed, "w") as archive:
        archive.writestr("config.json", "{}")
        archive.writestr("model.weights.h5", b"\x89HDF")
    content = renamed.read_bytes()
    code, out, err = keras_nalu(capsys, "progress", renamed)
    assert code == 2 and out == "" and len(err) == 1
    assert "is not a readable sweep backup" in err[0]
    assert "delete" not in err[0]
    assert renamed.read_bytes() == content


def test_a_folder_is_one_line(tmp_path, capsys):
    code, out, err = keras_nalu(capsys, "progress", tmp_path)
    assert code == 2 and len(err) == 1 and "is a folder" in err[0]


def test_each_configuration_of_a_chunk_gets_its_own_line(tmp_path, capsys, backup):
    state, arrays = load_backup_state(backup)
    config = state.pop("config")
    seeds = state.pop("seeds")
    state["configs"] = [
        {**config, "operation": operation, "seed": seed}
        for operation, seed in zip(("add", "sub"), seeds)
    ]
    state["engine"] = "jax"
    folder = tmp_path / "sweep.csv.backup"
    folder.mkdir()
    save_backup_state(folder / "batched.npz", state, arrays)
    shutil.copy(backup, folder / "single.npz")
    code, out, err = keras_nalu(capsys, "progress", tmp_path / "sweep.csv", "--brief")
    assert code == 0, err
    assert [line.split(", step")[0] for line in out.splitlines()] == [
        "batched.npz: nau add",
        "batched.npz: nau sub",
        "single.npz: nau add",
    ]
    lines = out.splitlines()
    assert all("step 100 of 200: " in line for line in lines)
    assert [line.split("; ")[-1] for line in lines] == [
        "jax engine)",
        "jax engine)",
        "tensorflow engine)",
    ]
    assert [" of 1 seeds" in line for line in lines] == [True, True, False]
