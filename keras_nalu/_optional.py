"""Optional dependencies: imported where a feature needs them, never at import.

`import keras_nalu` needs Keras and one of its backends only. TensorFlow is
needed by what is TensorFlow's (tf.data pipelines, SavedModel export,
tf.distribute, TFDS); `require` imports it there, or says in one line what to
install.
"""

import importlib
import importlib.util
import sys


def installed(module: str) -> bool:
    """Whether `module` can be imported (without importing it)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, a None entry
        return False


def require(module: str, feature: str, install: str | None = None):
    """`module`, imported for `feature`; an ImportError naming the package if absent.

    Args:
        module: the module to import, e.g. "tensorflow".
        feature: what needs it, for the message, e.g. "SavedModel export".
        install: the pip requirement that provides it; default `module`.

    Returns:
        The imported module.

    Raises:
        ImportError: one line, "<feature> needs <module>, which is not
            installed: pip install <install>".

    Example:

    >>> from keras_nalu._optional import require
    >>> require("json", "this example").__name__
    'json'
    """
    loaded = sys.modules.get(module)
    if loaded is not None:  # also keeps importlib out of traced tf.functions
        return loaded
    if not installed(module):
        raise ImportError(
            f"{feature} needs {module}, which is not installed: "
            f"pip install {install or module}"
        )
    return importlib.import_module(module)


def import_tensorflow(feature: str):
    """TensorFlow, or an ImportError naming `feature` and the install command."""
    return require("tensorflow", feature)
