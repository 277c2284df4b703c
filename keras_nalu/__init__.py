"""keras_nalu: neural arithmetic units (NAC, NALU, NAU, NMU, ...) for Keras 3."""

from keras_nalu._backend_check import check_backend
from keras_nalu._startup import answering_help, quiet_tensorflow_startup

check_backend()
if not answering_help():  # `keras-nalu --help` needs none of what follows
    quiet_tensorflow_startup()

    from keras_nalu import (
        callbacks,
        constraints,
        initializers,
        layers,
        regularizers,
    )
    from keras_nalu.layers import (
        MCFC,
        NAC,
        NALU,
        NAU,
        NMRU,
        NMU,
        NPU,
        ArithmeticCell,
        GatedNAUNMU,
        MCFCMul,
        NACMul,
        RealNPU,
        iNALU,
    )

#: The one place the version is written; pyproject.toml reads it from here.
__version__ = "0.1.0"

__all__ = [
    "MCFC",
    "NAC",
    "NALU",
    "NAU",
    "NMRU",
    "NMU",
    "NPU",
    "ArithmeticCell",
    "GatedNAUNMU",
    "MCFCMul",
    "NACMul",
    "RealNPU",
    "iNALU",
    "callbacks",
    "constraints",
    "initializers",
    "layers",
    "regularizers",
]
