"""The `keras-nalu` command's start-up: what it sets before Keras loads.

`import keras_nalu` changes nothing of the process; a command does, once,
before its first import of Keras (`start_up`, called by `entry.main`):

- a backend that cannot load stops it with one line and status 2; where
  `KERAS_BACKEND` is unset and Keras would fall back to a missing
  TensorFlow, it runs on JAX if JAX is installed (`KERAS_BACKEND=jax` for
  the command and what it starts, Ray's workers included);
- TensorFlow's C++ start-up lines (oneDNN, "Could not find cuda drivers",
  cuInit, CPU features), written before its logging is configured and so
  not hidden by `TF_CPP_MIN_LOG_LEVEL`, would bury the command's one-line
  messages: it sets `TF_CPP_MIN_LOG_LEVEL=2` unless set, and imports
  TensorFlow with its stderr silenced, when Keras runs on TensorFlow and
  `KERAS_NALU_TF_LOGS` is unset (errors are raised, and printed, as usual);
- Keras and its backend take seconds to import: a Ctrl-C then ends the
  command with one line and status 130, not a traceback from inside an
  import.
"""

import importlib
import os
import sys

from keras_nalu._backend_check import (
    NO_BACKEND,
    backend_problem,
    tensorflow_default_missing,
)
from keras_nalu._optional import installed
from keras_nalu._startup import quiet_tensorflow_startup


def start_up() -> int | None:
    """Readies the process for a command, then loads the package's units.

    Returns:
        None to go on, or the exit status to end the command with: 2 for a
        backend that cannot load, 130 for a Ctrl-C.
    """
    try:
        # Called from Python after Keras loaded (`main([...])`), the backend
        # is chosen and TensorFlow's start-up done: nothing to set.
        if "keras" not in sys.modules:
            problem = choose_backend()
            if problem is not None:
                print(f"keras-nalu: error: {problem}", file=sys.stderr)
                return 2
            quiet_tensorflow_startup()
        import keras_nalu

        for name in keras_nalu.__all__:
            importlib.import_module(f"keras_nalu.{name}")
    except KeyboardInterrupt:
        print("keras-nalu: interrupted", file=sys.stderr)
        return 130
    return None


def choose_backend() -> str | None:
    """Picks JAX where Keras would fall back to a missing TensorFlow.

    Returns None when Keras' backend can load (after setting
    `KERAS_BACKEND=jax` where that was needed), else the one line to show.
    """
    problem = backend_problem()
    if problem is not None or not tensorflow_default_missing():
        return problem
    if not installed("jax"):
        return NO_BACKEND
    os.environ["KERAS_BACKEND"] = "jax"
    return None
