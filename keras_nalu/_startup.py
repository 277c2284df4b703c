"""What the package reads of the process before Keras loads; it changes nothing.

`keras_backend` answers which backend Keras will load, `running_cli` whether
this process is the `keras-nalu` command, and `silenced_stderr` hides what
C++ libraries write to file descriptor 2 for the length of a block. Only the
command's entry point (`keras_nalu.cli.startup`) and the sweeps' Ray
connection use the last; `import keras_nalu` never does.
"""

import contextlib
import json
import os
import sys


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
