"""keras_nalu: neural arithmetic units (NAC, NALU, NAU, NMU, ...) for Keras 3.

The units are Keras layers in `keras_nalu.layers` (`keras_nalu.layers.NAU`);
their regularizers, constraints, initializers and callbacks are in the
modules of those names. `import keras_nalu` loads them all, so a `.keras`
file of the package's objects loads without `custom_objects`, and changes
nothing of the process: no environment variable, signal handler or output
stream. The `keras-nalu` command loads them itself, after its start-up
(`keras_nalu.cli.startup`). In a process that a sweep spawned
(`keras_nalu._startup.SPAWNED` in its environment), TensorFlow is first
imported quietly, as the command imports it.
"""

from keras_nalu._backend_check import check_backend
from keras_nalu._startup import quiet_tensorflow_startup, running_cli, spawned

if spawned():
    quiet_tensorflow_startup()

#: The one place the version is written; pyproject.toml reads it from here.
__version__ = "0.1.0"

if not running_cli():
    check_backend()

    from keras_nalu import (
        callbacks,
        constraints,
        initializers,
        layers,
        regularizers,
    )

__all__ = [
    "callbacks",
    "constraints",
    "initializers",
    "layers",
    "regularizers",
]
