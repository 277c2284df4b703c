"""The JAX engine without TensorFlow: not installed, or installed and not loaded."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys
sys.modules["tensorflow"] = None  # as if it were not installed
import keras_nalu
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.engines import train_replicas
from keras_nalu import cli

config = ExperimentConfig(model="nau", input_size=10, iterations=200, eval_every=100)
records = train_replicas(config, [0, 1], progress=False)
code = cli.main(["sweep", "--grid", "model=nau", "--grid", "input_size=10",
                 "--grid", "iterations=200", "--grid", "eval_every=100",
                 "--seeds", "0-1", "--results", sys.argv[1], "--quiet"])
print(json.dumps({"engine": records[0]["engine"], "n": len(records), "code": code,
                  "tensorflow": sys.modules["tensorflow"] is None}))
"""


def _run(script, *args, **env):
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env},
        timeout=600,
    )


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs JAX")
def test_train_replicas_and_sweep_need_no_tensorflow(tmp_path):
    results = tmp_path / "results.csv"
    done = _run(SCRIPT, str(results), KERAS_BACKEND="jax")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"engine": "jax", "n": 2, "code": 0, "tensorflow": True}
    assert len(results.read_text().splitlines()) == 3  # header and two rows


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs JAX")
def test_a_jax_sweep_prints_nothing_of_tensorflow(tmp_path):
    # TensorFlow installed, as beside JAX on most machines: a sweep on JAX
    # neither loads it nor prints its C++ start-up lines (oneDNN, CUDA).
    results = tmp_path / "r.csv"
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    done = subprocess.run(
        [sys.executable, "-m", "keras_nalu", "sweep", "--quiet", "--seeds=0"]
        + ["--grid", "model=nau", "--grid", "input_size=10"]
        + ["--grid", "iterations=100", "--grid", "eval_every=100"]
        + [f"--results={results}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"results: {results} (1 rows of this sweep: 1 new, 0 already there)"
    ]


@pytest.mark.parametrize(
    "backend, blocked, message",
    [
        ("pytorch", None, "KERAS_BACKEND='pytorch' is not a Keras backend"),
        ("jax", "jax", "KERAS_BACKEND=jax needs jax, which is not installed"),
    ],
)
def test_a_bad_backend_is_one_line(backend, blocked, message):
    block = f"import sys; sys.modules[{blocked!r}] = None; " if blocked else ""
    imported = _run(block + "import keras_nalu", KERAS_BACKEND=backend)
    assert imported.returncode == 1
    last = imported.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: {message}")
    command = _run(
        block + "import sys; sys.argv = ['keras-nalu', 'sweep']; "
        "import runpy; runpy.run_module('keras_nalu', run_name='__main__')",
        KERAS_BACKEND=backend,
    )
    assert command.returncode == 2
    lines = command.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("keras-nalu: error: ")
    assert message in lines[0]
