"""Keeps TensorFlow's C++ start-up lines out of the way when asked to.

TF writes a few lines (oneDNN, "Could not find cuda drivers", cuInit, CPU
features) before its logging is configured, so TF_CPP_MIN_LOG_LEVEL does not
hide them. They bury the `keras-nalu` CLI's one-line messages. This module
imports TensorFlow and starts its runtime with stderr silenced when the
`keras-nalu` command runs or when the user set TF_CPP_MIN_LOG_LEVEL >= 1 (and
not KERAS_NALU_TF_LOGS=1). Errors are raised, and printed, as usual.
"""

import os
import sys


def _running_cli() -> bool:
    argv0 = os.path.basename(sys.argv[0]) if sys.argv else ""
    if argv0 in ("keras-nalu", "keras-nalu.exe"):
        return True
    orig = getattr(sys, "orig_argv", [])
    return "-m" in orig and "keras_nalu" in orig


def _wanted() -> bool:
    if os.environ.get("KERAS_NALU_TF_LOGS") or "tensorflow" in sys.modules:
        return False
    if _running_cli():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        return True
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0")
    return level.isdigit() and int(level) >= 1


def quiet_tensorflow_startup() -> None:
    if not _wanted():
        return
    try:
        stderr_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return
    sys.stderr.flush()
    saved = os.dup(stderr_fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stderr_fd)
        import tensorflow as tf

        tf.config.list_logical_devices()
    finally:
        sys.stderr.flush()
        os.dup2(saved, stderr_fd)
        os.close(saved)
        os.close(devnull)
