"""keras_nalu: neural arithmetic units (NAC, NALU, NAU, NMU, ...) for Keras 3."""

from keras_nalu._startup import quiet_tensorflow_startup

quiet_tensorflow_startup()

from keras_nalu import (  # noqa: E402
    callbacks,
    constraints,
    initializers,
    layers,
    regularizers,
)
from keras_nalu.layers import (  # noqa: E402
    NAC,
    NALU,
    NAU,
    NMU,
    NPU,
    ArithmeticCell,
    GatedNAUNMU,
    NACMul,
    RealNPU,
    iNALU,
)

#: The one place the version is written; pyproject.toml reads it from here.
__version__ = "0.1.0"

__all__ = [
    "NAC",
    "NALU",
    "NAU",
    "NMU",
    "NPU",
    "ArithmeticCell",
    "GatedNAUNMU",
    "NACMul",
    "RealNPU",
    "iNALU",
    "callbacks",
    "constraints",
    "initializers",
    "layers",
    "regularizers",
]
