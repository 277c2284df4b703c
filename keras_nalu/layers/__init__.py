"""The arithmetic units as Keras layers."""

from keras_nalu.layers.nac import NAC
from keras_nalu.layers.nac_mul import NACMul
from keras_nalu.layers.nalu import NALU
from keras_nalu.layers.nau import NAU
from keras_nalu.layers.nmu import NMU

__all__ = ["NAC", "NACMul", "NALU", "NAU", "NMU"]
