"""`import keras_nalu` and its core work on JAX with TensorFlow unimportable."""

import json
import os
import subprocess
import sys

import pytest

from keras_nalu._optional import installed, require
from tests.helpers import run_in_fresh_python

# Runs in a fresh interpreter with KERAS_BACKEND=jax.
WITHOUT_TENSORFLOW = r"""
import json, sys
sys.modules["tensorflow"] = None  # any `import tensorflow` fails
import keras
import numpy as np
import keras_nalu
from keras_nalu.callbacks import Reinitialization, RegularizationSchedule
from keras_nalu.export import export_saved_model
from keras_nalu.regularizers import Sparsity

model = keras.Sequential([
    keras.Input((4,)),
    keras_nalu.layers.NAU(2, kernel_regularizer=Sparsity(1.0, start=0, end=4)),
    keras_nalu.layers.NMU(1),
])
model.compile(keras.optimizers.Adam(0.01), "mse")
x = np.random.default_rng(0).uniform(1, 2, (32, 4)).astype("float32")
callbacks = [RegularizationSchedule(), Reinitialization(every=2, seed=0)]
history = model.fit(x, x[:, :1] * x[:, 1:2], batch_size=8, epochs=2,
                    callbacks=callbacks, verbose=0)
model.save(sys.argv[1] + "/model.keras")
loaded = keras.saving.load_model(sys.argv[1] + "/model.keras")
try:
    export_saved_model(model, sys.argv[1])
    export_error = None
except ImportError as error:
    export_error = str(error)
print(json.dumps({
    "backend": keras.backend.backend(),
    "strength": history.history["sparsity_strength"],
    "same_outputs": bool(np.array_equal(model.predict(x, verbose=0),
                                        loaded.predict(x, verbose=0))),
    "export_error": export_error,
}))
"""


@pytest.mark.skipif(not installed("jax"), reason="needs JAX")
def test_import_train_save_load_without_tensorflow(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")  # asks to quiet TF's start
    stdout = run_in_fresh_python(WITHOUT_TENSORFLOW, tmp_path)
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["backend"] == "jax"
    assert report["strength"] == [0.75, 1.0]  # λ at steps 3 and 7 (4 per epoch)
    assert report["same_outputs"]
    assert report["export_error"] == (
        "SavedModel export needs tensorflow, which is not installed: "
        "pip install tensorflow"
    )


@pytest.mark.skipif(not installed("jax"), reason="needs JAX")
def test_import_on_jax_does_not_load_tensorflow(monkeypatch):
    # TF_CPP_MIN_LOG_LEVEL asks keras_nalu to quiet TensorFlow's start-up:
    # only when Keras runs on TensorFlow.
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    stdout = run_in_fresh_python(
        "import sys, keras_nalu; print('tensorflow' in sys.modules)"
    )
    assert stdout.strip().splitlines()[-1] == "False"


def test_require_names_what_to_install():
    assert require("json", "a test").__name__ == "json"
    with pytest.raises(ImportError, match=r"^Plotting needs no_such_module_xyz, "):
        require("no_such_module_xyz", "Plotting", "no-such-package")
    with pytest.raises(ImportError, match=r"pip install no-such-package$"):
        require("no_such_module_xyz", "Plotting", "no-such-package")


def _start_without(blocked, tmp_path, monkeypatch, code: str):
    """`code` in a fresh process with `blocked` modules unimportable,
    KERAS_BACKEND unset and a Keras home of its own (no keras.json: Keras'
    default is TensorFlow)."""
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    block = "".join(f"sys.modules[{name!r}] = None; " for name in blocked)
    return subprocess.run(
        [sys.executable, "-c", f"import sys; {block}{code}"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        cwd=tmp_path,
    )


#: `keras-nalu summarize` of a file that is not there, as the command runs
#: it, and its exit status.
COMMAND = (
    "sys.argv = ['keras-nalu', 'summarize', 'missing.csv']; "
    "from keras_nalu.cli import main; print(main(), flush=True)"
)
#: Then the backend it ran on.
BACKEND = (
    "; import keras, os; "
    "print(keras.backend.backend(), os.environ.get('KERAS_BACKEND'))"
)


@pytest.mark.skipif(not installed("jax"), reason="needs JAX")
def test_the_command_picks_jax_where_keras_would_fall_back_to_a_missing_tensorflow(
    tmp_path, monkeypatch
):
    done = _start_without(["tensorflow"], tmp_path, monkeypatch, COMMAND + BACKEND)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["2", "jax", "jax"]
    assert done.stderr.strip().startswith("keras-nalu summarize: error: ")


@pytest.mark.skipif(not installed("jax"), reason="needs JAX")
def test_the_import_asks_for_keras_backend_where_tensorflow_is_missing(
    tmp_path, monkeypatch
):
    # A library sets no environment variable: its user picks the backend.
    done = _start_without(["tensorflow"], tmp_path, monkeypatch, "import keras_nalu")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: Keras' default backend, TensorFlow, is not installed; JAX "
        "is: set KERAS_BACKEND=jax before importing keras_nalu, or pip install "
        "tensorflow."
    )


NEITHER = (
    "Keras' default backend, TensorFlow, is not installed, and neither is "
    "JAX: pip install tensorflow, or pip install jax and set KERAS_BACKEND=jax."
)


def test_without_tensorflow_or_jax_the_import_says_what_to_install(
    tmp_path, monkeypatch
):
    blocked = ["tensorflow", "jax"]
    done = _start_without(blocked, tmp_path, monkeypatch, "import keras_nalu")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == f"ImportError: {NEITHER}"
    done = _start_without(blocked, tmp_path, monkeypatch, COMMAND)
    assert done.stderr.strip().splitlines() == [f"keras-nalu: error: {NEITHER}"]
    assert done.stdout.split() == ["2"]


def test_a_chosen_backend_is_left_alone(tmp_path, monkeypatch):
    # With TensorFlow installed, Keras' default stays TensorFlow.
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    stdout = run_in_fresh_python(
        "import keras_nalu, keras, os; "
        "print(keras.backend.backend(), os.environ.get('KERAS_BACKEND'))"
    )
    assert stdout.split()[-2:] == ["tensorflow", "None"]
