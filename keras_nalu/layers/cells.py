"""Any arithmetic unit as the step function of a `keras.layers.RNN`."""

import math
import numbers

import keras
from keras import ops

from keras_nalu._api import export


@export
class ArithmeticCell(keras.layers.Layer):
    """A recurrent cell that applies a unit to the input and its own output.

        h_t = unit(concat([x_t, h_{t-1}])),   h_0 = initial_state_value

    The unit's output is both the step output and the state, so a unit with
    the weights of x_t and h_{t-1} at 1 accumulates: an NAU the running sum
    (from h_0 = 0), an NMU the running product (from h_0 = 1). The unit is any
    layer with an integer `units` (every `keras_nalu.layers` unit, or
    `Dense`); it is built for `input_dim + units` inputs and keeps its own
    weights, regularizers and constraints — the cell re-derives nothing.

    Args:
        unit: the step unit, a Keras layer with an integer `units`, or its
            serialized config.
        initial_state_value: the value of every entry of h_0; 0.0 for sums,
            1.0 for products.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: the step input x_t, shape `(batch, input_dim)`.
        states: `[h_{t-1}]`, shape `(batch, units)`.

    Output shape: `(batch, units)`, and the new state `[h_t]`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> cell = keras_nalu.layers.ArithmeticCell(keras_nalu.layers.NAU(1))
    >>> rnn = keras.layers.RNN(cell, return_sequences=True)
    >>> _ = rnn(np.zeros((1, 1, 1), "float32"))
    >>> _ = cell.unit.kernel.assign([[1.0], [1.0]])
    >>> y = rnn(np.array([[[1.0], [2.0], [3.0]]], "float32"))
    >>> keras.ops.convert_to_numpy(y)[0, :, 0]
    array([1., 3., 6.], dtype=float32)

    Reference: Trask et al. (2018), App. B (recurrent arithmetic task);
    Madsen & Johansen (2020), §4.2 (sequential MNIST).
    """

    def __init__(self, unit, initial_state_value: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(unit, dict):
            unit = keras.layers.deserialize(unit)
        units = getattr(unit, "units", None)
        if (
            not isinstance(unit, keras.layers.Layer)
            or isinstance(units, bool)
            or not isinstance(units, numbers.Integral)
        ):
            raise ValueError(
                "ArithmeticCell expects unit to be a Keras layer with an integer "
                f"`units`. Received: unit={unit!r}"
            )
        if (
            isinstance(initial_state_value, bool)
            or not isinstance(initial_state_value, numbers.Real)
            or not math.isfinite(initial_state_value)
        ):
            raise ValueError(
                "ArithmeticCell expects initial_state_value to be a finite "
                f"number. Received: initial_state_value={initial_state_value!r}"
            )
        self.unit = unit
        self.initial_state_value = float(initial_state_value)
        self.state_size = int(units)
        self.output_size = int(units)

    def build(self, input_shape):
        if not self.unit.built:
            self.unit.build((*input_shape[:-1], input_shape[-1] + self.state_size))

    def call(self, inputs, states):
        state = states[0] if isinstance(states, list | tuple) else states
        step_input = ops.concatenate([inputs, ops.cast(state, inputs.dtype)], axis=-1)
        output = self.unit(step_input)
        return output, [output]

    def get_initial_state(self, batch_size=None):
        return [
            ops.full(
                (batch_size, self.state_size),
                self.initial_state_value,
                dtype=self.compute_dtype,
            )
        ]

    def get_config(self):
        return {
            **super().get_config(),
            "unit": keras.layers.serialize(self.unit),
            "initial_state_value": self.initial_state_value,
        }
