"""keras_nalu: neural arithmetic units (NAC, NALU, NAU, NMU, ...) for Keras 3.

The units are Keras layers in `keras_nalu.layers` (`keras_nalu.layers.NAU`);
their regularizers, constraints, initializers and callbacks are in the
modules of those names.
"""

from keras_nalu._backend_check import check_backend
from keras_nalu._startup import (
    answering_help,
    interrupt_ends_cli,
    quiet_tensorflow_startup,
)

check_backend()
if not answering_help():  # `keras-nalu --help` needs none of what follows
    with interrupt_ends_cli():
        quiet_tensorflow_startup()

        from keras_nalu import (
            callbacks,
            constraints,
            initializers,
            layers,
            regularizers,
        )

#: The one place the version is written; pyproject.toml reads it from here.
__version__ = "0.1.0"

__all__ = [
    "callbacks",
    "constraints",
    "initializers",
    "layers",
    "regularizers",
]
