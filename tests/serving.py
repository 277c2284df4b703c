"""Checks that an exported SavedModel serves with TensorFlow alone."""

import json
import os
import subprocess
import sys

import numpy as np

# Runs in a fresh interpreter that imports TensorFlow only.
_SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
path, inputs = sys.argv[1], np.load(sys.argv[2])
loaded = tf.saved_model.load(path)
out = loaded.signatures["serving_default"](tf.constant(inputs, tf.float32))
(value,) = out.values()
assert not any(name.startswith("keras_nalu") for name in sys.modules)
np.save(sys.argv[3], value.numpy())
print(json.dumps({"modules_clean": True}))
"""


def serve_in_fresh_process(saved_model_dir, inputs, tmp_path) -> np.ndarray:
    """Calls `serving_default` of `saved_model_dir` in a TF-only process."""
    inputs_path = tmp_path / "inputs.npy"
    outputs_path = tmp_path / "outputs.npy"
    np.save(inputs_path, np.asarray(inputs, np.float32))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            _SERVE,
            str(saved_model_dir),
            str(inputs_path),
            str(outputs_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert json.loads(completed.stdout.strip().splitlines()[-1])["modules_clean"]
    return np.load(outputs_path)


def saved_model_cli_show(saved_model_dir) -> str:
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    completed = subprocess.run(
        [cli, "show", "--dir", str(saved_model_dir), "--all"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout
