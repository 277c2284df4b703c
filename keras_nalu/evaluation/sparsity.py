"""The sparsity error of Madsen & Johansen (2020), eq. 17 over a model's arithmetic
weights."""

import keras
import numpy as np

from keras_nalu.callbacks import iter_layers
from keras_nalu.layers.base import ArithmeticLayer


def effective_weights(layer) -> dict[str, np.ndarray]:
    """The weights a layer actually computes with, by name, as NumPy arrays.

    An arithmetic unit answers itself (`ArithmeticLayer.effective_weights`:
    clipped kernels, W = tanh(Ŵ)σ(M̂), both paths of a NALU, never a gate); a
    `Dense` layer gives its kernel. Other layers have none (an
    `ArithmeticCell`'s unit is a layer of its own).

    Example:

    >>> import keras_nalu
    >>> layer = keras_nalu.NMU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.kernel.assign([[1.2], [0.4]])
    >>> effective_weights(layer)["kernel"].tolist()
    [[1.0], [0.4000000059604645]]
    """
    if isinstance(layer, ArithmeticLayer):
        weights = layer.effective_weights()
    elif isinstance(layer, keras.layers.Dense):
        weights = {"kernel": layer.kernel}
    else:
        return {}
    return {name: keras.ops.convert_to_numpy(w) for name, w in weights.items()}


def weight_sparsity_error(weights: np.ndarray) -> float:
    """max over W of min(|W|, |1 - |W||): distance to the nearest of {-1, 0, 1}."""
    magnitude = np.abs(np.asarray(weights, dtype=np.float64))
    if magnitude.size == 0:
        return 0.0
    return float(np.max(np.minimum(magnitude, np.abs(1.0 - magnitude))))


def sparsity_error(model) -> float:
    """Madsen & Johansen (2020), eq. 17 over every arithmetic weight of `model`.

    Example:

    >>> import keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((4,)), keras_nalu.NAU(2)])
    >>> _ = model.layers[0].kernel.assign([[1, 0], [0, 1], [0.5, 0], [0, -1]])
    >>> keras_nalu.evaluation.sparsity_error(model)
    0.5

    Reference: Madsen & Johansen (2020), §4.1.1, eq. 17.
    """
    errors = [
        weight_sparsity_error(weights)
        for layer in iter_layers(model)
        for weights in effective_weights(layer).values()
    ]
    return max(errors, default=0.0)
