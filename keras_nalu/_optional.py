"""Optional dependencies, imported where used, with one line if missing.

`import keras_nalu` and the JAX engine need neither TensorFlow nor
tensorflow-datasets; tf.data pipelines, SavedModel export, tf.distribute and
MNIST do.
"""

import importlib
import sys


def import_optional(module: str, feature: str, install: str):
    """Imports `module`, or raises an ImportError that says what to install.

    Args:
        module: the module to import, e.g. "tensorflow".
        feature: what needs it, for the message, e.g. "SavedModel export".
        install: the pip requirement that provides it.
    """
    loaded = sys.modules.get(module)
    if loaded is not None:  # also keeps importlib out of traced tf.functions
        return loaded
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"{feature} needs {module}, which is not installed: pip install {install}"
        ) from None


def import_tensorflow(feature: str):
    """TensorFlow, or an ImportError naming `feature` and the install command."""
    return import_optional("tensorflow", feature, "tensorflow")
