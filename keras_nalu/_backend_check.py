"""Checks Keras' backend before Keras is imported, with one line if it is bad.

Keras reports an unknown backend, or a backend whose library is missing, with
a long traceback from deep inside its import. `import keras_nalu` checks
first and says what to do; the `keras-nalu` command prints that line and
exits with status 2.

Where `KERAS_BACKEND` is unset and Keras would fall back to TensorFlow (its
default, or the `backend` that Keras writes into `~/.keras/keras.json` on its
first import) but TensorFlow is not installed, `import keras_nalu` picks JAX
if JAX is installed: it sets `KERAS_BACKEND=jax` for this process, as a GPU
machine with JAX and no TensorFlow needs. With neither installed it says in
one line what to install.
"""

import os
import sys

from keras_nalu._optional import installed
from keras_nalu._startup import _running_cli, keras_backend

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


def default_backend_problem() -> str | None:
    """Picks JAX where Keras would fall back to a missing TensorFlow.

    Returns None when Keras' backend can load (after setting
    `KERAS_BACKEND=jax` where that was needed), else the one line to show.
    """
    if os.environ.get("KERAS_BACKEND") or "keras" in sys.modules:
        return None
    if keras_backend() != "tensorflow" or installed("tensorflow"):
        return None
    if installed("jax"):
        os.environ["KERAS_BACKEND"] = "jax"
        return None
    return (
        "Keras' default backend, TensorFlow, is not installed, and neither is "
        "JAX: pip install tensorflow, or pip install jax and set "
        "KERAS_BACKEND=jax."
    )


def check_backend() -> None:
    """Raises ImportError (or, in the CLI, exits 2) on a backend that cannot load."""
    problem = backend_problem() or default_backend_problem()
    if problem is None:
        return
    if _running_cli():
        print(f"keras-nalu: error: {problem}", file=sys.stderr)
        sys.exit(2)
    raise ImportError(problem)
