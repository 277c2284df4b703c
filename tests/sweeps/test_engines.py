"""The replica engines are TensorFlow's and JAX's; on PyTorch they say so."""

import json

from tests.helpers import run_in_fresh_python

ON_PYTORCH = r"""
import contextlib, io, json, sys
from keras_nalu.cli import main
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.engines import train_replicas

try:
    train_replicas(ExperimentConfig(iterations=10, eval_every=10), seeds=[0])
    replicas = None
except ValueError as error:
    replicas = str(error)
stderr = io.StringIO()
with contextlib.redirect_stderr(stderr):
    code = main(["sweep", "--grid", "model=nau", "--grid", "iterations=10",
                 "--seeds", "0", "--results", sys.argv[1] + "/r.csv", "--quiet"])
print(json.dumps({"replicas": replicas, "code": code, "stderr": stderr.getvalue()}))
"""


def test_on_pytorch_train_replicas_and_sweep_name_the_backends(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    report = json.loads(
        run_in_fresh_python(ON_PYTORCH, tmp_path).strip().splitlines()[-1]
    )
    message = (
        "train_replicas has engines for the tensorflow and jax backends; Keras "
        "runs on 'torch'. Set KERAS_BACKEND=jax or KERAS_BACKEND=tensorflow."
    )
    assert report["replicas"] == message
    assert report["code"] == 2
    assert report["stderr"] == (
        "keras-nalu sweep: error: Keras' torch backend (KERAS_BACKEND=torch) "
        "cannot run `keras-nalu sweep`; run `keras-nalu sweep` with "
        "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax.\n"
    )
    assert not (tmp_path / "r.csv").exists()
