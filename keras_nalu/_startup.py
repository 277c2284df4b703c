"""What the package reads of the process before Keras loads; it changes nothing.

`keras_backend` answers which backend Keras will load, `running_cli` whether
this process is the `keras-nalu` command, and `silenced_stderr` hides what
C++ libraries write to file descriptor 2 for the length of a block. Only the
command's entry point (`keras_nalu.cli.startup`), the sweeps' Ray
connection and `quiet_tensorflow_startup` use the last; `import keras_nalu`
does only in a process a sweep spawned (`SPAWNED`).
"""

import contextlib
import json
import os
import sys

from keras_nalu._optional import installed

SPAWNED = "KERAS_NALU_SPAWNED"
"""The environment variable of the processes a sweep spawns
(`processes_per_device`): there, `import keras_nalu` first imports
TensorFlow quietly (`quiet_tensorflow_startup`), as the command does, so
that each process does not repeat TensorFlow's start-up lines."""


def keras_backend() -> str:
    """The backend Keras runs on, or will load, without importing Keras.

    Keras' own rule: KERAS_BACKEND, else "backend" in $KERAS_HOME/keras.json
    (default ~/.keras/keras.json), else TensorFlow.
    """
    keras = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "backend"):
        return keras.backend.backend()
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(
        os.path.expanduser("~"), ".keras"
    )
    try:
        with open(os.path.join(home, "keras.json")) as file:
            return str(json.load(file).get("backend", "tensorflow"))
    except (OSError, ValueError, AttributeError):
        return "tensorflow"


def running_cli() -> bool:
    """Whether this process is the `keras-nalu` command (or `python -m keras_nalu`).

    The command's entry point then readies the process before Keras loads
    (`keras_nalu.cli.startup.start_up`), so `import keras_nalu` leaves the
    loading of the units to it.
    """
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    if argv0 in ("keras-nalu", "keras-nalu.exe"):
        return True
    return _module_run() == "keras_nalu"


def _module_run() -> str | None:
    """The module of `python [options] -m MODULE`, or None where Python ran no module.

    Read from the interpreter's own arguments, which name Python's options
    before the module and the module's arguments after it.
    """
    options = iter(getattr(sys, "orig_argv", [])[1:])
    for option in options:
        if option == "-m":
            return next(options, None)
        if option.startswith("-m"):
            return option[2:]
        if option in ("-X", "-W"):  # options that take a value
            next(options, None)
        elif option in ("-", "-c") or not option.startswith("-"):
            return None  # stdin, -c or a script
    return None


@contextlib.contextmanager
def silenced_stderr():
    """Everything written to the process's stderr (file descriptor 2) is dropped.

    For lines that C++ libraries write before their logging is configured;
    Python errors raised in the block are raised as usual, after it.
    """
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # no real file: nothing to hide
        yield
        return
    sys.stderr.flush()
    saved = os.dup(stderr_fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stderr_fd)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, stderr_fd)
        os.close(saved)
        os.close(devnull)


def spawned() -> bool:
    """Whether a sweep spawned this process (`SPAWNED` in its environment)."""
    return bool(os.environ.get(SPAWNED))


def quiet_tensorflow_startup() -> None:
    """Imports TensorFlow with stderr silenced, where Keras will run on it.

    TensorFlow's C++ start-up lines (oneDNN, "Could not find cuda drivers",
    cuInit, CPU features) come before its logging is configured, so
    `TF_CPP_MIN_LOG_LEVEL` does not hide them. Nothing is silenced where
    `KERAS_NALU_TF_LOGS` is set; errors are raised, and printed, as usual.
    For the `keras-nalu` command (`keras_nalu.cli.startup`) and the
    processes a sweep spawns (`SPAWNED`).
    """
    if os.environ.get("KERAS_NALU_TF_LOGS") or "tensorflow" in sys.modules:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if keras_backend() != "tensorflow" or not installed("tensorflow"):
        return
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # nothing to silence
        return
    with silenced_stderr():
        import tensorflow as tf

        tf.config.list_logical_devices()
