"""Checks that an exported SavedModel serves with TensorFlow alone."""

import json
import os
import subprocess
import sys

import numpy as np

# Runs in a fresh interpreter that imports TensorFlow only. For each job it
# calls `serving_default`, and, where asked, shows the SavedModel as the
# `saved_model_cli show --all` command does (the command's own entry point).
_SERVE = r"""
import contextlib, io, json, sys
import numpy as np
import tensorflow as tf
jobs, shows = json.loads(sys.argv[1]), {}
for job in jobs:
    loaded = tf.saved_model.load(job["path"])
    inputs = tf.constant(np.load(job["inputs"]), tf.float32)
    (value,) = loaded.signatures["serving_default"](inputs).values()
    np.save(job["outputs"], value.numpy())
assert not any(name.startswith("keras_nalu") for name in sys.modules)
for job in jobs:
    if job["show"]:
        from tensorflow.python.tools import saved_model_cli
        sys.argv = ["saved_model_cli", "show", "--dir", job["path"], "--all"]
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            try:
                saved_model_cli.main()
            except SystemExit as exit:
                assert not exit.code, exit.code
        shows[job["path"]] = shown.getvalue()
print(json.dumps({"modules_clean": True, "shows": shows}))
"""


def serve_in_fresh_process(saved_model_dir, inputs, tmp_path) -> np.ndarray:
    """Calls `serving_default` of `saved_model_dir` in a TF-only process."""
    ((served, _),) = serve_all_in_fresh_process(
        [(saved_model_dir, inputs)], tmp_path, show=False
    )
    return served


def serve_all_in_fresh_process(jobs, tmp_path, show=True) -> list[tuple]:
    """Serves each `(saved_model_dir, inputs)` of `jobs` in one TF-only process.

    Returns `(outputs, shown)` per job: the outputs of `serving_default`, and
    what `saved_model_cli show --all` prints about the SavedModel (None
    unless `show`).
    """
    specs = []
    for index, (saved_model_dir, inputs) in enumerate(jobs):
        inputs_path = tmp_path / f"inputs{index}.npy"
        np.save(inputs_path, np.asarray(inputs, np.float32))
        specs.append(
            {
                "path": str(saved_model_dir),
                "inputs": str(inputs_path),
                "outputs": str(tmp_path / f"outputs{index}.npy"),
                "show": show,
            }
        )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    completed = subprocess.run(
        [sys.executable, "-c", _SERVE, json.dumps(specs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report["modules_clean"]
    return [
        (np.load(spec["outputs"]), report["shows"].get(spec["path"])) for spec in specs
    ]
