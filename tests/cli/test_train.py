import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_nalu.tasks import ArithmeticTask
from tests.serving import serve_all_in_fresh_process


def run_cli(*args, cwd=None, timeout=600, backend=None):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if backend is not None:
        env.update(KERAS_BACKEND=backend, OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "keras_nalu", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def _nau_sub_train(root, iterations: int, eval_every: int) -> list[str]:
    """`keras-nalu train` arguments: NAU on −, 10 inputs, seed 4, JSON out."""
    return [
        *("train", "--model", "nau", "--operation", "sub", "--input-size", "10"),
        *("--iterations", str(iterations), "--eval-every", str(eval_every)),
        *("--seed", "4"),
        *("--output-dir", str(root / "runs"), "--export-dir", str(root / "saved")),
        *("--quiet", "--json"),
    ]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    # At this learning rate the run solves its task (first at step 600), so
    # it has a formula for `explain` to print.
    completed = run_cli(*_nau_sub_train(root, 900, 300), "--learning-rate", "0.01")
    assert completed.returncode == 0, completed.stderr[-3000:]
    return root, completed


def test_train_prints_and_writes_the_record(trained):
    root, completed = trained
    record = json.loads(completed.stdout)
    # The default name tells this config from nau-sub-seed4 at the defaults.
    assert record["name"].startswith("nau-sub-seed4-")
    on_disk = json.loads((root / "runs" / record["name"] / "result.json").read_text())
    assert on_disk["iterations"] == record["iterations"] == 900
    for key in (
        "success",
        "solved_at",
        "best_step",
        "interpolation_mse",
        "extrapolation_mse",
        "sparsity_error",
        "wall_time",
        "iterations_per_second",
        "diverged",
        "threshold",
        "config",
    ):
        assert key in record
    assert record["config"]["operation"] == "sub"
    assert record["evaluations"] == 4  # steps 0, 300, 600, 900
    assert completed.stderr.startswith(f"{record['name']}: ")  # the verdict line


def test_train_exports_a_servable_saved_model(trained, tmp_path):
    root, completed = trained
    record = json.loads(completed.stdout)
    version_dir = root / "saved" / record["name"] / "1"
    assert record["saved_model"] == str(version_dir)
    assert (version_dir / "saved_model.pb").exists()
    manifest = json.loads(
        (root / "saved" / record["name"] / "manifest.json").read_text()
    )
    assert manifest["latest"] == 1
    assert manifest["versions"]["1"]["task"]["operation"] == "sub"
    assert manifest["versions"]["1"]["result"]["iterations"] == 900

    task = ArithmeticTask(operation="sub", input_size=10, seed=4)
    x, _ = task.test_data()
    model = keras.saving.load_model(record["keras_model"])
    ((served, shown),) = serve_all_in_fresh_process([(version_dir, x[:256])], tmp_path)
    np.testing.assert_allclose(
        served, model.predict(x[:256], verbose=0), rtol=1e-5, atol=1e-5
    )
    assert "serving_default" in shown
    assert "(-1, 10)" in shown


def _no_trace_of(tmp_path, code, out, err, needle):
    """A refusal: status 2, one line naming the problem, nothing
    trained or written."""
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert needle in lines[0]
    assert out == ""
    assert not (tmp_path / "escaped").exists()
    # nothing trained, nothing written, not even an empty folder
    assert sorted(path.name for path in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--iterations", "-5"], "--iterations must be an integer >= 1"),
        (["--operation", "pow"], "operation"),
        (["--model", "transformer"], "model"),
        (["--interpolation-range", "U[2,1]"], "--interpolation-range"),
        (["--subset-ratio", "0.9"], "subset"),
        (["--batch-size", "0"], "--batch-size must be an integer >= 1"),
        (["--bogus-flag"], "unrecognized"),
        (["--seed", "abc"], "seed"),
        (["--name", "../escaped"], "--name='../escaped'"),
        (["--export-dir", "afile/models"], "--export-dir 'afile/models'"),
        (["--iterations", str(10**30)], "--iterations must be <= 2147483647"),
        (["--iterations", "1e30"], "invalid int value: '1e30'"),
        (["--export-format", "tflite"], "--export-format"),
    ],
)
def test_bad_flags_exit_nonzero_with_one_line(
    flags, needle, tmp_path, monkeypatch, capsys
):
    from keras_nalu import cli

    (tmp_path / "afile").write_text("in the way")
    monkeypatch.chdir(tmp_path)
    try:
        code = cli.main(["train", *flags, "--quiet"])
    except SystemExit as exit:  # argparse's own refusals
        code = exit.code
    captured = capsys.readouterr()
    _no_trace_of(tmp_path, code, captured.out, captured.err, needle)


def test_a_bad_flag_is_one_line_from_the_command_itself(tmp_path):
    """The whole process, Keras' start-up included, writes the one line."""
    (tmp_path / "afile").write_text("in the way")
    flags = ["--subset-ratio", "0.9"]
    completed = run_cli("train", *flags, "--quiet", cwd=tmp_path, timeout=120)
    _no_trace_of(
        tmp_path,
        completed.returncode,
        completed.stdout,
        completed.stderr,
        "subset",
    )


def test_a_backend_that_cannot_train_is_one_line_before_anything(tmp_path):
    env = {**os.environ, "KERAS_BACKEND": "numpy", "TF_CPP_MIN_LOG_LEVEL": "3"}
    argv = ["--iterations", "100", "--input-size", "10", "--output-dir", "np_runs"]
    commands = {
        "KERAS_BACKEND=tensorflow, KERAS_BACKEND=jax or KERAS_BACKEND=torch": [
            "train",
            *argv,
            "--no-export",
        ],
        "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax.": [
            "sweep",
            "--results",
            "r/s.csv",
        ],
    }
    for backends, command in commands.items():
        completed = subprocess.run(
            [sys.executable, "-m", "keras_nalu", *command],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
        assert completed.returncode == 2, completed.stderr[-2000:]
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, completed.stderr[-2000:]
        assert "Keras' numpy backend (KERAS_BACKEND=numpy)" in lines[0]
        assert backends in lines[0]
        assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def trained_on_torch(tmp_path_factory):
    root = tmp_path_factory.mktemp("train_torch")
    completed = run_cli(*_nau_sub_train(root, 200, 100), backend="torch")
    assert completed.returncode == 0, completed.stderr[-3000:]
    return root, json.loads(completed.stdout)


def test_train_on_pytorch_fits_and_exports_onnx(trained_on_torch):
    import onnxruntime

    root, record = trained_on_torch
    assert record["iterations"] == 200
    assert record["evaluations"] == 3  # steps 0, 100, 200
    path = root / "saved" / record["name"] / "1" / "model.onnx"
    assert record["onnx"] == str(path)
    assert "saved_model" not in record
    manifest = json.loads(
        (root / "saved" / record["name"] / "manifest.json").read_text()
    )
    assert manifest["versions"]["1"]["format"] == "onnx"
    # The ONNX file and the .keras file (read here, on TensorFlow) agree.
    x, _ = ArithmeticTask(operation="sub", input_size=10, seed=4).test_data()
    session = onnxruntime.InferenceSession(str(path))
    (served,) = session.run(None, {session.get_inputs()[0].name: x[:256]})
    model = keras.saving.load_model(record["keras_model"])
    np.testing.assert_allclose(
        served, model.predict(x[:256], verbose=0), rtol=1e-5, atol=1e-5
    )


def test_saved_model_on_pytorch_is_refused_before_training(tmp_path):
    completed = run_cli(
        "train", "--export-format", "saved_model", cwd=tmp_path, backend="torch"
    )
    assert completed.returncode == 2
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert lines == [
        "keras-nalu train: error: A SavedModel export needs the TensorFlow or JAX "
        "backend; Keras runs on 'torch'. Export to ONNX instead (export_onnx; "
        "keras-nalu train --export-format onnx)."
    ]
    assert not list(tmp_path.glob("runs/*"))  # nothing trained, nothing written


def test_explain_command_prints_the_formula(trained, capsys):
    # The model another process trained; that a fresh `keras-nalu` process
    # writes nothing else on stdout, `trained` checks (its stdout is the JSON).
    from keras_nalu import cli

    root, completed = trained
    record = json.loads(completed.stdout)
    assert cli.main(["explain", record["keras_model"]]) == 0
    explained = capsys.readouterr().out
    assert explained.startswith("y = ")
    assert explained.strip() == record["formula"]


def test_explain_command_on_a_missing_file_is_one_line(tmp_path, capsys):
    from keras_nalu import cli

    assert cli.main(["explain", str(tmp_path / "nope.keras")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "no such model file" in lines[0]


# -- what `latest`, the version TF Serving serves, may become ---------------------


def test_the_verdict_line_labels_the_last_evaluations_mse_as_an_mse():
    from keras_nalu.cli.train import verdict_line

    record = {
        "name": "nac-mul-seed0",
        "diverged": True,
        "success": False,
        "extrapolation_mse": 3.5,
        "threshold": 0.16,
        "best_step": 1000,
        "final_step": 3000,
        "final_extrapolation_mse": float("nan"),
        "iterations": 3000,
        "wall_time": 4.2,
    }
    assert verdict_line(record) == (
        "nac-mul-seed0: DIVERGED; extrapolation MSE 3.5 vs threshold 0.16 at step "
        "1000 (best validation), nan at the last evaluation, step 3000; 3000 steps "
        "in 4 s"
    )
    record["final_step"] = None
    assert ", no evaluation; 3000 steps" in verdict_line(record)


TINY = ["--model", "nau", "--input-size", "10", "--iterations", "100"]
TINY += ["--eval-every", "100", "--quiet", "--name", "served"]


@pytest.fixture
def served(tmp_path):
    """An export folder whose model `served` has version 1, a solved run."""
    from keras_nalu.export import export_saved_model
    from keras_nalu.layers import NAU

    model = keras.Sequential([keras.Input((10,)), NAU(1)])
    export_saved_model(model, tmp_path / "saved", "served", manifest={"note": "v1"})
    return tmp_path / "saved"


def manifest_of(export_dir: Path) -> dict:
    return json.loads((export_dir / "served" / "manifest.json").read_text())


def test_an_onnx_export_beside_served_saved_models_is_refused_first(
    tmp_path, served, capsys
):
    from keras_nalu import cli

    argv = [*TINY, "--output-dir", tmp_path / "runs", "--export-dir", served]
    code = cli.main(["train", *map(str, argv), "--export-format", "onnx"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith(
        f"keras-nalu train: error: {served / 'served'} holds SavedModel versions "
        "(1); a model folder holds one format"
    )
    assert err.rstrip().endswith(
        "export the ONNX model under another name. Received: --name 'served'"
    )
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()  # refused before training
    assert sorted(p.name for p in (served / "served").iterdir()) == [
        "1",
        "manifest.json",
    ]


def test_an_unsolved_run_does_not_become_the_served_version(tmp_path, served, capsys):
    from keras_nalu import cli

    argv = [*TINY, "--output-dir", tmp_path / "runs", "--export-dir", served]
    code = cli.main(["train", *map(str, argv)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    record = json.loads((tmp_path / "runs" / "served" / "result.json").read_text())
    assert not record["success"]
    assert "saved_model" not in record
    assert sorted(p.name for p in (served / "served").iterdir()) == [
        "1",
        "manifest.json",
    ]
    assert manifest_of(served)["latest"] == 1
    (note,) = [line for line in captured.err.splitlines() if "not exported" in line]
    assert "did not solve the task" in note and "serves version 1" in note
    assert "--overwrite" in note and record["not_exported"] in note

    code = cli.main(["train", *map(str, argv), "--overwrite"])
    assert code == 0, capsys.readouterr().err
    assert manifest_of(served)["latest"] == 2
    assert (served / "served" / "2" / "saved_model.pb").is_file()
