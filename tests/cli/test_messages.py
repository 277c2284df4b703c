"""Every error of a command in the command's words: its flags and files.

A message from inside the package names what its user never called (a
class, a function, Python's exception types, an `[Errno N]`); the command
line says which flag or file is wrong and what to do, in one line.
"""

import shutil
from pathlib import Path

import numpy as np
import pytest

from keras_nalu._backend_check import backend_problem
from tests.helpers import keras_nalu_cli

EXAMPLE = Path(__file__).parents[2] / "examples" / "results" / "example_results.csv"
GRID = ["--grid", "model=nau", "--grid", "input_size=10", "--grid", "iterations=100"]
GRID += ["--quiet", "--results", "r.csv"]

#: Words of the package's inside that no command should print.
INTERNAL = (
    "PosixPath",
    "(ValueError)",
    "(KeyError)",
    "Errno",
    "run_sweep",
    "plot_results",
    "ExperimentConfig",
    "MnistConfig",
    "ArithmeticTask",
    "train_replicas",
)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A working folder with files that are not what a command wants."""
    monkeypatch.chdir(tmp_path)
    Path("garbage.npz").write_bytes(b"not an archive")
    np.savez("arrays.npz", weights=np.ones(3))
    Path("r.csv.backup").write_text("a file of the user's")
    shutil.copy(EXAMPLE, "results.csv")
    return tmp_path


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["progress", "."], ". is a folder; pass a sweep's results CSV"),
        (["progress", "garbage.npz"], "garbage.npz is not a readable sweep backup:"),
        (["progress", "arrays.npz"], "it holds no sweep state, only the arrays"),
        (
            ["sweep", *GRID, "--grid", "eval_every=50", "--backup-every", "0"],
            "--results 'r.csv': r.csv.backup is a file",
        ),
        (["sweep", *GRID, "--backup-every", "-1"], "--backup-every: expects a"),
        (["sweep", *GRID, "--time-limit", "-1"], "--time-limit: expects a"),
        (["sweep", *GRID, "--no-backup", "--chunks-per-device", "0"], "--chunks-pe"),
        (["sweep", *GRID, "--no-backup", "--gpus-per-chunk", "1"], "--ray-address"),
        (["plot", "results.csv", "--x", "success"], "Received: --x 'success'"),
        (["train", "--learning-rate", "-1"], "--learning-rate must be a finite"),
        (["train", "--batch-size", "0"], "--batch-size must be an integer >= 1"),
        (["train", "--subset-ratio", "0.9"], "--subset-ratio 0.9"),
        (["train", "--sparsity-start", "5", "--sparsity-end", "3"], "--sparsity-st"),
        (["sweep", "--grid", "iterations=0", "--no-backup"], "Received: iterations=0"),
        (
            ["train", "--model", "nmu", "--operation", "mul"]
            + ["--interpolation-range", "U[1e20,1e21]"]
            + ["--extrapolation-range", "U[1e21,1e22]"],
            "targets up to 6.25e+44, which are inf in float32: any model's error "
            "on them is inf or NaN. Received: --interpolation-range U[1e+20, 1e+21]",
        ),
        (
            ["train", "--operation", "root", "--extrapolation-range", "U[-1,6]"],
            "a run with --operation 'root' expects --extrapolation-range to hold no "
            "negative numbers",
        ),
        (
            ["sweep", *GRID, "--grid", "operation=mul"]
            + ["--grid", "extrapolation_range=U[1e21,1e22]"],
            "Received: extrapolation_range=U[1e+21, 1e+22]",
        ),
    ],
)
def test_errors_name_the_flag_or_file_not_the_package_inside(
    folder, capsys, argv, needle
):
    before = sorted(folder.iterdir())
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and out == "" and len(err) == 1, err
    assert needle in err[0]
    assert not [word for word in INTERNAL if word in err[0]], err[0]
    assert sorted(folder.iterdir()) == before


def test_the_backend_error_names_where_each_command_runs(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "tensorflw")
    problem = backend_problem()
    assert "keras-nalu train runs on tensorflow, jax and torch" in problem
    assert "trains on jax and tensorflow" not in problem


def test_a_sweep_on_a_backend_without_an_engine_says_so_first(capsys, monkeypatch):
    import keras

    monkeypatch.setattr(keras.backend, "backend", lambda: "torch")
    code, out, err = keras_nalu_cli(capsys, "sweep", "--results", "never/r.csv")
    assert code == 2 and len(err) == 1
    assert err[0] == (
        "keras-nalu sweep: error: Keras' torch backend (KERAS_BACKEND=torch) cannot "
        "run `keras-nalu sweep`; run `keras-nalu sweep` with "
        "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax."
    )
    assert not Path("never").exists()
