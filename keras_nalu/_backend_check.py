"""Checks `KERAS_BACKEND` before Keras is imported, with one line if it is bad.

Keras reports an unknown backend, or a backend whose library is missing, with
a long traceback from deep inside its import. `import keras_nalu` checks
first and says what to do; the `keras-nalu` command prints that line and
exits with status 2.
"""

import os
import sys

from keras_nalu._optional import installed
from keras_nalu._startup import _running_cli

#: Keras 3's backends and the library each needs.
BACKEND_LIBRARIES = {
    "tensorflow": "tensorflow",
    "jax": "jax",
    "torch": "torch",
    "numpy": "numpy",
    "openvino": "openvino",
}


def backend_problem() -> str | None:
    """What is wrong with `KERAS_BACKEND`, in one line, or None."""
    name = os.environ.get("KERAS_BACKEND")
    if not name:
        return None
    if name not in BACKEND_LIBRARIES:
        return (
            f"KERAS_BACKEND={name!r} is not a Keras backend; use one of "
            f"{', '.join(BACKEND_LIBRARIES)} (keras_nalu trains on jax and "
            "tensorflow)."
        )
    module = BACKEND_LIBRARIES[name]
    if not installed(module):
        return (
            f"KERAS_BACKEND={name} needs {module}, which is not installed: "
            f"pip install {module}"
        )
    return None


def check_backend() -> None:
    """Raises ImportError (or, in the CLI, exits 2) on a bad `KERAS_BACKEND`."""
    problem = backend_problem()
    if problem is None:
        return
    if _running_cli():
        print(f"keras-nalu: error: {problem}", file=sys.stderr)
        sys.exit(2)
    raise ImportError(problem)
