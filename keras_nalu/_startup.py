"""Keeps TensorFlow's C++ start-up lines out of the way when asked to.

TF writes a few lines (oneDNN, "Could not find cuda drivers", cuInit, CPU
features) before its logging is configured, so TF_CPP_MIN_LOG_LEVEL does not
hide them. They bury the `keras-nalu` CLI's one-line messages. This module
imports TensorFlow and starts its runtime with stderr silenced when the
`keras-nalu` command runs or when the user set TF_CPP_MIN_LOG_LEVEL >= 1 (and
not KERAS_NALU_TF_LOGS=1), and only when Keras will run on TensorFlow and
TensorFlow is installed: `import keras_nalu` never needs it. Errors are
raised, and printed, as usual.
"""

import contextlib
import json
import os
import sys

from keras_nalu._optional import installed


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


def _running_cli() -> bool:
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    if argv0 in ("keras-nalu", "keras-nalu.exe"):
        return True
    orig = getattr(sys, "orig_argv", [])
    return "-m" in orig and "keras_nalu" in orig


@contextlib.contextmanager
def interrupt_ends_cli():
    """Ctrl-C while the `keras-nalu` command imports its libraries.

    Keras and its backend take seconds to import; a Ctrl-C then ends the
    command as one during its work does: one line and status 130, not a
    traceback from inside an import. Outside the command it is raised.
    """
    try:
        yield
    except KeyboardInterrupt:
        if not _running_cli():
            raise
        print("keras-nalu: interrupted", file=sys.stderr)
        sys.exit(130)


def answering_help() -> bool:
    """Whether this is `keras-nalu` with no sub-command: --help, --version.

    That answer needs nothing of the package, so `import keras_nalu` then
    loads neither Keras nor its backend, and it comes at once.
    """
    return _running_cli() and all(arg.startswith("-") for arg in sys.argv[1:])


def _wanted() -> bool:
    if os.environ.get("KERAS_NALU_TF_LOGS") or "tensorflow" in sys.modules:
        return False
    if _running_cli():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        asked = True
    else:
        level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")
        asked = level.isdigit() and int(level) >= 1
    return asked and keras_backend() == "tensorflow" and installed("tensorflow")


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


def quiet_tensorflow_startup() -> None:
    if not _wanted():
        return
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # nothing to silence: import later
        return
    with silenced_stderr():
        import tensorflow as tf

        tf.config.list_logical_devices()
