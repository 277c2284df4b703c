"""Checks Keras' backend before Keras is imported, with one line if it is bad.

Keras reports an unknown backend, or a backend whose library is missing, with
a long traceback from deep inside its import. `import keras_nalu` checks
first and raises an ImportError that says what to do; the `keras-nalu`
command prints that line and exits with status 2.

Where `KERAS_BACKEND` is unset and Keras would fall back to TensorFlow (its
default, or the `backend` that Keras writes into `~/.keras/keras.json` on its
first import) but TensorFlow is not installed, the `keras-nalu` command picks
JAX if JAX is installed, as a GPU machine with JAX and no TensorFlow needs
(`keras_nalu.cli.startup`). `import keras_nalu` sets nothing: it says in one
line to set `KERAS_BACKEND=jax` or to install TensorFlow.
"""

import os
import sys

from keras_nalu._optional import installed
from keras_nalu._startup import keras_backend

#: Keras 3's backends and the library each needs.
BACKEND_LIBRARIES = {
    "tensorflow": "tensorflow",
    "jax": "jax",
    "torch": "torch",
    "numpy": "numpy",
    "openvino": "openvino",
}

#: Where Keras would fall back to a missing TensorFlow and JAX is missing too.
NO_BACKEND = (
    "Keras' default backend, TensorFlow, is not installed, and neither is "
    "JAX: pip install tensorflow, or pip install jax and set "
    "KERAS_BACKEND=jax."
)

#: Where Keras would fall back to a missing TensorFlow and JAX is installed.
JAX_NOT_CHOSEN = (
    "Keras' default backend, TensorFlow, is not installed; JAX is: set "
    "KERAS_BACKEND=jax before importing keras_nalu, or pip install tensorflow."
)


def backend_problem() -> str | None:
    """What is wrong with `KERAS_BACKEND`, in one line, or None."""
    name = os.environ.get("KERAS_BACKEND")
    if not name:
        return None
    if name not in BACKEND_LIBRARIES:
        return (
            f"KERAS_BACKEND={name!r} is not a Keras backend; use one of "
            f"{', '.join(BACKEND_LIBRARIES)} (keras-nalu train runs on tensorflow, "
            "jax and torch; keras-nalu sweep on tensorflow and jax)."
        )
    module = BACKEND_LIBRARIES[name]
    if not installed(module):
        return (
            f"KERAS_BACKEND={name} needs {module}, which is not installed: "
            f"pip install {module}"
        )
    return None


def tensorflow_default_missing() -> bool:
    """Whether Keras, not yet loaded, would fall back to a missing TensorFlow."""
    if os.environ.get("KERAS_BACKEND") or "keras" in sys.modules:
        return False
    return keras_backend() == "tensorflow" and not installed("tensorflow")


def check_backend() -> None:
    """Raises ImportError, in one line, on a backend that cannot load."""
    problem = backend_problem()
    if problem is None and tensorflow_default_missing():
        problem = JAX_NOT_CHOSEN if installed("jax") else NO_BACKEND
    if problem is not None:
        raise ImportError(problem)
