"""Several JAX devices on one machine: a sweep trains one chunk on each."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys
import jax, jax.numpy as jnp
from keras_nalu.sweeps import local, runner, training

seen = []
real = training.train_chunks

def spy(unit, *args, **kwargs):
    seen.append(str(jnp.zeros(()).devices().pop()))
    return real(unit, *args, **kwargs)

training.train_chunks = spy
grid = {"model": ["nau", "nmu"], "input_size": [10], "iterations": [200],
        "eval_every": [100]}
together = runner.run_sweep(grid, "0-1", sys.argv[1] + "/a.csv", progress=False)
local.local_devices = lambda: []
apart = runner.run_sweep(grid, "0-1", sys.argv[1] + "/b.csv", progress=False)
key = ["config_id", "seed"]
a = together.results.sort_values(key)["extrapolation_mse"].tolist()
b = apart.results.sort_values(key)["extrapolation_mse"].tolist()
print(json.dumps({"devices": seen[:2], "after": seen[2:], "a": a, "b": b,
                  "count": len(jax.devices())}))
"""


@pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="needs JAX for several devices"
)
def test_chunks_train_side_by_side_on_the_local_devices(tmp_path):
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["count"] == 2
    assert sorted(out["devices"]) == ["cpu:0", "cpu:1"]
    assert out["a"] == pytest.approx(out["b"], rel=1e-5)
