"""The sparsity error of Madsen & Johansen (2020), eq. 17 over a model's arithmetic
weights."""

import keras
import numpy as np

from keras_nalu.keras_utils import iter_layers
from keras_nalu.layers.base import ArithmeticLayer


def effective_weight_tensors(layer) -> dict:
    """The weights a layer actually computes with, by name, as backend tensors.

    An arithmetic unit answers itself (`ArithmeticLayer.effective_weights`:
    clipped kernels, W = tanh(Ŵ)σ(M̂), both paths of a NALU, never a gate); a
    `Dense` layer gives its kernel. Other layers have none (an
    `ArithmeticCell`'s unit is a layer of its own). The tensors are computed
    from the layer's variables, so they follow a `keras.StatelessScope` (the
    JAX replica engine reads every replica's this way).
    """
    if isinstance(layer, ArithmeticLayer):
        return layer.effective_weights()
    if isinstance(layer, keras.layers.Dense):
        return {"kernel": layer.kernel}
    return {}


def effective_weights(layer) -> dict[str, np.ndarray]:
    """The weights a layer actually computes with, by name, as NumPy arrays.

    `effective_weight_tensors`, converted.

    Example:

    >>> import keras_nalu
    >>> layer = keras_nalu.layers.NMU(1)
    >>> layer.build((None, 2))
    >>> _ = layer.kernel.assign([[1.2], [0.4]])
    >>> effective_weights(layer)["kernel"].tolist()
    [[1.0], [0.4000000059604645]]
    """
    return {
        name: keras.ops.convert_to_numpy(value)
        for name, value in effective_weight_tensors(layer).items()
    }


def distance_to_sparse(weights, xp=np):
    """max over W of min(|W|, |1 - |W||): distance to the nearest of {-1, 0, 1}.

    Args:
        weights: an array of any shape (0 if empty).
        xp: the array module to compute with: NumPy, or `jax.numpy` inside
            a compiled function (the JAX replica engine's evaluation).

    Example:

    >>> float(distance_to_sparse(np.array([0.9, -0.2, 1.0])))
    0.2
    """
    magnitude = xp.abs(weights)
    return xp.max(xp.minimum(magnitude, xp.abs(1.0 - magnitude)), initial=0.0)


def weight_sparsity_error(weights: np.ndarray) -> float:
    """`distance_to_sparse` of `weights` in float64, as a Python float."""
    return float(distance_to_sparse(np.asarray(weights, dtype=np.float64)))


def sparsity_error(model) -> float:
    """Madsen & Johansen (2020), eq. 17 over every arithmetic weight of `model`.

    Example:

    >>> import keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((4,)), keras_nalu.layers.NAU(2)])
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
