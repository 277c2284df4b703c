"""The `keras-nalu` command's start-up: its own, before Keras loads.

Elsewhere: Ctrl-C while it starts (tests/cli/test_sweep.py), a backend that
cannot load (tests/sweeps/test_without_tensorflow.py), JAX where TensorFlow
is missing (tests/test_without_tensorflow.py), and what `import keras_nalu`
leaves alone (tests/test_import_effects.py).
"""

import os
import subprocess
import sys

import pytest

from keras_nalu._optional import installed
from keras_nalu._startup import running_cli


@pytest.mark.parametrize(
    "argv, orig_argv, expected",
    [
        (["/venv/bin/keras-nalu", "train"], ["python", "keras-nalu", "train"], True),
        (["-m", "--help"], ["python", "-m", "keras_nalu", "--help"], True),
        (["-m"], ["python", "-X", "importtime", "-m", "keras_nalu", "--help"], True),
        (["-m"], ["python", "-mkeras_nalu", "sweep"], True),
        (["-m"], ["python", "-m", "pytest", "keras_nalu", "-m", "slow"], False),
        (["-c"], ["python", "-c", "import keras_nalu", "-m", "keras_nalu"], False),
        (["run.py"], ["python", "run.py", "-m", "keras_nalu"], False),
    ],
)
def test_the_command_is_told_from_the_interpreters_arguments(
    monkeypatch, argv, orig_argv, expected
):
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    assert running_cli() is expected


# As the command starts: the package imported (units not yet loaded), then
# the entry point's start-up.
STARTING = (
    "import sys; sys.argv = ['keras-nalu', 'summarize']; import os, keras_nalu; "
    "loaded = hasattr(keras_nalu, 'layers'); "
    "from keras_nalu.cli.startup import start_up; "
    "print(loaded, start_up(), os.environ.get('TF_CPP_MIN_LOG_LEVEL'), "
    "hasattr(keras_nalu, 'layers'), 'tensorflow' in sys.modules)"
)


def _start(code=STARTING, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "KERAS_BACKEND": "tensorflow", **env}
    environment.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


@pytest.mark.skipif(not installed("tensorflow"), reason="needs TensorFlow")
def test_the_command_quiets_tensorflow_then_loads_the_units():
    started = _start()
    assert started.returncode == 0, started.stderr[-3000:]
    assert started.stdout.split() == ["False", "None", "2", "True", "True"]
    assert started.stderr == ""  # TensorFlow's C++ start-up lines silenced
    shown = _start(KERAS_NALU_TF_LOGS="1")
    assert shown.returncode == 0, shown.stderr[-3000:]
    loaded, status, level, units, tensorflow = shown.stdout.split()
    assert (loaded, status, units, tensorflow) == ("False", "None", "True", "True")
    assert level != "2"  # left to TensorFlow


@pytest.mark.skipif(not installed("tensorflow"), reason="needs TensorFlow")
def test_a_process_a_sweep_spawned_starts_tensorflow_quietly():
    # Each process of processes_per_device would print TensorFlow's start-up
    # lines again ("failed call to cuInit", CPU features, ...).
    from keras_nalu._startup import SPAWNED

    started = _start("import keras_nalu", **{SPAWNED: "1"})
    assert started.returncode == 0, started.stderr[-3000:]
    assert started.stderr == ""
