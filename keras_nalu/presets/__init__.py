"""The papers' model presets as data: which units, λ and schedule (Madsen &
Johansen (2020), Table 4).

A preset (`preset.Preset`) names its layers (two, or one for the
single-module task) and its sparsity schedule; `catalog.PRESETS` holds the
papers' presets by name, `kinds.make_layer` the layer each kind makes.
`build_model` (`models`) turns a preset into a compiled Keras model plus the
callbacks it trains with. Every field can be overridden per call.
`build_sequence_model` makes the recurrent models (a preset's hidden unit as a
recurrent cell, or an LSTM/GRU baseline). Import every name from here,
`keras_nalu.presets`.
"""

from keras_nalu.presets.catalog import PRESETS, get_preset
from keras_nalu.presets.kinds import LAYER_KINDS, MULTIPLICATIVE_KINDS, make_layer
from keras_nalu.presets.models import (
    SEQUENCE_BASELINES,
    build_model,
    build_sequence_model,
)
from keras_nalu.presets.preset import (
    DEFAULT_LEARNING_RATE,
    ZERO_SAFE_DIVISION_KINDS,
    Preset,
)

__all__ = [
    "DEFAULT_LEARNING_RATE",
    "LAYER_KINDS",
    "MULTIPLICATIVE_KINDS",
    "PRESETS",
    "Preset",
    "SEQUENCE_BASELINES",
    "ZERO_SAFE_DIVISION_KINDS",
    "build_model",
    "build_sequence_model",
    "get_preset",
    "make_layer",
]
