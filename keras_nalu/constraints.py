"""Weight constraints: the clamps of the NAU ([-1, 1]) and NMU ([0, 1])."""

import keras
from keras import ops

from keras_nalu._api import export
from keras_nalu._validation import check_bounds


@export
class Clip(keras.constraints.Constraint):
    """Clips every weight element-wise into `[min_value, max_value]`.

    Keras applies a constraint after each optimizer step; the NAU and NMU also
    clip with the same bounds in their forward pass (Madsen & Johansen 2020, eq. 5 and
    10), so the weights the loss sees are always inside the box.

    Args:
        min_value: lower bound.
        max_value: upper bound, `>= min_value`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> clip = keras_nalu.constraints.Clip(-1, 1)
    >>> keras.ops.convert_to_numpy(clip(np.array([-3.0, 0.5, 2.0], "float32")))
    array([-1. ,  0.5,  1. ], dtype=float32)

    Reference: Madsen & Johansen (2020), §2.2 and §2.5.
    """

    def __init__(self, min_value: float = -1.0, max_value: float = 1.0):
        self.min_value, self.max_value = check_bounds("Clip", min_value, max_value)

    def __call__(self, w):
        return ops.clip(w, self.min_value, self.max_value)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value}


@export
class ForwardClip(Clip):
    """Clips a weight where the unit uses it, but never the stored weight.

    The unit computes with the weight clipped into `[min_value, max_value]`,
    as with `Clip`, but no step is projected back: a weight pushed past a
    bound stays there (the loss's gradient through the clip is then 0) until
    its regularizer or another push brings it back. Mistry, Farrahi & Hare's
    (2022) plain Real NPU treats its gate g this way (its `npu_clip` is
    "none", and its forward pass clamps g to [0, 1]); their modified Real NPU,
    and Madsen & Johansen's NAU and NMU, also clip after every step (`Clip`).

    Args:
        min_value: lower bound of the forward pass's clip.
        max_value: upper bound, `>= min_value`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> gate = keras_nalu.constraints.ForwardClip(0, 1)
    >>> gate(np.array([-0.5, 0.5, 1.5], "float32"))  # the stored weight: free
    array([-0.5,  0.5,  1.5], dtype=float32)
    >>> layer = keras_nalu.layers.RealNPU(1, gate_constraint="forward_clip")
    >>> layer.build((None, 3))
    >>> _ = layer.gate.assign([-0.5, 0.5, 1.5])
    >>> keras.ops.convert_to_numpy(layer.gate_values())  # what the forward pass uses
    array([0. , 0.5, 1. ], dtype=float32)

    Reference: Mistry, Farrahi & Hare (2021), the Real NPU baseline of their
    division benchmark (github.com/bmistry4/nalm-division).
    """

    def __call__(self, w):
        return w
