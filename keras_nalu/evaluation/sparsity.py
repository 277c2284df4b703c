"""The sparsity error of Madsen & Johansen (2020), eq. 17 over a model's arithmetic
weights."""

import keras
import numpy as np

from keras_nalu.callbacks import iter_layers
from keras_nalu.layers.base import clip_like_constraint
from keras_nalu.layers.gated import GatedNAUNMU
from keras_nalu.layers.inalu import iNALU
from keras_nalu.layers.nac import NACWeights
from keras_nalu.layers.nalu import NALU
from keras_nalu.layers.nau import NAU
from keras_nalu.layers.nmu import NMU
from keras_nalu.layers.npu import NPU


def effective_weight_tensors(layer) -> dict:
    """The weights a unit actually computes with, by name.

    NAU/NMU: the kernel clipped as in the forward pass; NAC, NAC• (also NAC•σ
    and NAC•NMU): W = tanh(Ŵ)σ(M̂), σ(Ŵ) or clip(Ŵ, 0, 1); NALU and iNALU:
    their additive (and separate multiplicative) W, not the gate; gated
    NAU/NMU: both units' clipped kernels, not the gate; NPU: Re (and Im), not
    the relevance gate; Dense: the kernel. Other layers have none (an
    `ArithmeticCell`'s unit is a layer of its own).

    The values are backend tensors computed from the layer's variables, so
    they follow a `keras.StatelessScope` (the JAX replica engine reads every
    replica's this way); `effective_weights` gives them as NumPy arrays.
    """
    if isinstance(layer, (NAU, NMU)):
        kernel = clip_like_constraint(layer.kernel, layer.kernel_constraint)
        return {"kernel": kernel}
    if isinstance(layer, GatedNAUNMU):
        return {
            f"{name}_kernel": effective_weight_tensors(unit)["kernel"]
            for name, unit in (("nau", layer.nau), ("nmu", layer.nmu))
        }
    if isinstance(layer, iNALU):
        return {
            "kernel": layer.kernel,
            "mul_kernel": layer.mul_kernel,
        }
    if isinstance(layer, NPU):
        weights = {"kernel": layer.kernel}
        if layer.complex_weights:
            weights["imaginary_kernel"] = layer.imaginary_kernel
        return weights
    if isinstance(layer, NALU) and layer.separate_weights:
        return {
            "kernel": layer.kernel,
            "mul_kernel": layer.mul_kernel,
        }
    if isinstance(layer, NACWeights):
        return {"kernel": layer.kernel}
    if isinstance(layer, keras.layers.Dense):
        return {"kernel": layer.kernel}
    return {}


def effective_weights(layer) -> dict[str, np.ndarray]:
    """`effective_weight_tensors` as NumPy arrays."""
    return {
        name: keras.ops.convert_to_numpy(value)
        for name, value in effective_weight_tensors(layer).items()
    }


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
