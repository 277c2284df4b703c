"""R_z: the penalty on a unit's input that the MNIST sequence task adds.

Not a weight regularizer: it reads the input and the kernel, so the layer
that owns the input calls it and adds the result with `add_loss`.
"""

from keras import ops

from keras_nalu import _ops
from keras_nalu._api import export
from keras_nalu._validation import check_choice
from keras_nalu.regularizers.scheduled import (
    ScheduledPenalty,
    weight_regularizer_error,
)


@export
class ZRegularizer(ScheduledPenalty):
    """R_z: pulls the batch mean of a unit's input towards the unit's identity.

        multiplicative (NMU):  mean_{i,o}((1 - W_io) · (1 - x̄_i)²)
        additive (NAU):        mean_{i,o}((1 - |W_io|) · x̄_i²)

    x̄ is the batch mean of the unit's input `x` (axis 0; any further leading
    axes, e.g. time, are averaged over after the penalty). An input the unit
    ignores (W_io = 0) is pushed to the identity of the operation (1 for
    products, 0 for sums), so the network feeding the unit cannot settle for
    an unintended solution such as 0.1·81 + 1 - 0.1 = 9.

    It is not a Keras weight regularizer (`keras.regularizers.Regularizer`):
    it reads the input and the kernel, so the layer that owns the input calls
    it from its `call` and adds the result with `add_loss`. Passed as a
    layer's `kernel_regularizer` it raises a `TypeError` saying so.

    Args:
        strength: λ_z, `>= 0`.
        identity: "multiplicative" (NMU, NAC•NMU) or "additive" (NAU, NAC+).
        start, end, mode: the schedule (see `ScheduledPenalty`).

    Call arguments:
        inputs: the unit's input, `(batch, ..., input_dim)`.
        kernel: the unit's weights for these inputs, `(input_dim, units)`.

    Example:

    >>> import numpy as np, keras_nalu
    >>> reg = keras_nalu.regularizers.ZRegularizer(identity="multiplicative")
    >>> x = np.array([[3.0], [1.0]], "float32")  # x̄ = 2
    >>> float(reg(x, np.array([[0.5, 1.0]], "float32")))
    0.25

    Reference: Madsen & Johansen (2020), §4.2 (NMU) and App. D.2 (NAU).
    """

    log_name = "z_strength"

    def __init__(
        self,
        strength: float = 1.0,
        identity: str = "multiplicative",
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
    ):
        self.identity = check_choice(
            "ZRegularizer", "identity", identity, ("multiplicative", "additive")
        )
        super().__init__(strength=strength, start=start, end=end, mode=mode)

    def penalty(self, inputs, kernel):
        mean = ops.mean(inputs, axis=0)[..., :, None]  # (..., input_dim, 1)
        if self.identity == "multiplicative":
            terms = (1.0 - kernel) * ops.square(1.0 - mean)
        else:
            terms = (1.0 - _ops.absolute(kernel)) * ops.square(mean)
        return ops.mean(terms)

    def __call__(self, inputs, kernel=None):
        if kernel is None:
            raise TypeError(weight_regularizer_error(self))
        kernel = ops.cast(kernel, inputs.dtype)
        strength = ops.cast(self.current_strength, inputs.dtype)
        return strength * self.penalty(inputs, kernel)

    def get_config(self):
        return {**super().get_config(), "identity": self.identity}
