"""keras_nalu: neural arithmetic units (NAC, NALU, NAU, NMU, ...) for Keras 3."""

from keras_nalu._startup import quiet_tensorflow_startup

quiet_tensorflow_startup()

from keras_nalu import callbacks  # noqa: E402, constraints, initializers, layers, regularizers
from keras_nalu.layers import NAC, NALU, NAU, NMU, NACMul  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "NAC",
    "NALU",
    "NAU",
    "NMU",
    "NACMul",
    "callbacks",
    "constraints",
    "initializers",
    "layers",
    "regularizers",
]
