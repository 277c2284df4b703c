"""keras_nalu: neural arithmetic units (NAC, NALU, NAU, NMU, ...) for Keras 3."""

from keras_nalu import callbacks, constraints, initializers, layers, regularizers
from keras_nalu.layers import NAC, NALU, NAU, NMU, NACMul

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
