"""The arithmetic units as Keras layers."""

from keras_nalu.layers.cells import ArithmeticCell
from keras_nalu.layers.dmu import DMU
from keras_nalu.layers.gated import GatedNAUNMU
from keras_nalu.layers.inalu import iNALU
from keras_nalu.layers.mcfc import MCFC, MCFCMul
from keras_nalu.layers.nac import NAC
from keras_nalu.layers.nac_mul import NACMul
from keras_nalu.layers.nalu import NALU
from keras_nalu.layers.nau import NAU
from keras_nalu.layers.nmru import NMRU
from keras_nalu.layers.nmu import NMU
from keras_nalu.layers.npu import NPU, RealNPU
from keras_nalu.layers.nsr import NSR
from keras_nalu.layers.piecewise import Piecewise

__all__ = [
    "DMU",
    "MCFC",
    "NAC",
    "NALU",
    "NAU",
    "NMRU",
    "NMU",
    "NPU",
    "NSR",
    "ArithmeticCell",
    "GatedNAUNMU",
    "MCFCMul",
    "Piecewise",
    "NACMul",
    "RealNPU",
    "iNALU",
]
