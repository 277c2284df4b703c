"""A condition choosing between two units: a piecewise-defined function."""

import numbers

import keras

from keras_nalu._api import export


def _layer(owner: str, name: str, value) -> keras.layers.Layer:
    if isinstance(value, dict):
        value = keras.layers.deserialize(value)
    units = getattr(value, "units", None)
    if (
        not isinstance(value, keras.layers.Layer)
        or isinstance(units, bool)
        or not isinstance(units, numbers.Integral)
    ):
        raise ValueError(
            f"{owner} expects {name} to be a Keras layer with an integer "
            f"`units`. Received: {name}={value!r}"
        )
    return value


@export
class Piecewise(keras.layers.Layer):
    """y = c·(t(x) + b_t) + (1 - c)·(f(x) + b_f), with c = condition(x).

    The condition (an `NSR`: the probability that a comparison holds) picks,
    output by output, between two units: `if_true` where it holds and
    `if_false` where it does not, each with a learned bias (zeros at first)
    as the downstream arithmetic units of Faber & Wattenhofer, which compute
    b + x·W. All three are layers of their own with the same `units`; the
    layer re-derives none of their formulas. As the step unit of an
    `ArithmeticCell`, it is a recurrent selection: with an NSR comparing
    x_t and h_(t-1) and NAUs selecting each, the running minimum.

    Args:
        condition: the condition layer (or its serialized config), outputs
            in [0, 1]; typically `NSR(units)`.
        if_true, if_false: the units (or their configs), each with `units`
            outputs.
        use_bias: whether each branch adds its bias; default True.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: tensor of shape `(..., input_dim)`, given to all three.

    Output shape: `(..., units)`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> layer = keras_nalu.layers.Piecewise(
    ...     keras_nalu.layers.NSR(1, scale=10.0),
    ...     keras_nalu.layers.NAU(1), keras_nalu.layers.NAU(1))
    >>> layer.build((None, 2))
    >>> _ = layer.condition.operand_1.assign([[20.0], [0.0]])
    >>> _ = layer.condition.operand_2.assign([[0.0], [20.0]])
    >>> _ = layer.condition.sign_kernel.assign([[30.0]])
    >>> _ = layer.condition.zero_kernel.assign([[0.0]])
    >>> _ = layer.condition.bias.assign([-15.0])  # c: x0 > x1
    >>> _ = layer.if_true.kernel.assign([[1.0], [-1.0]])  # x0 - x1
    >>> _ = layer.if_false.kernel.assign([[-1.0], [1.0]])  # x1 - x0
    >>> y = layer(np.array([[7.0, 3.0], [3.0, 7.0]], "float32"))  # |x0 - x1|
    >>> keras.ops.convert_to_numpy(y).round(1)
    array([[4.],
           [4.]], dtype=float32)

    Reference: Faber & Wattenhofer, "Neural Status Registers", ICML 2023,
    the piecewise-defined functions; the authors' `AluWithComparison`.
    """

    def __init__(self, condition, if_true, if_false, use_bias: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.condition = _layer("Piecewise", "condition", condition)
        self.if_true = _layer("Piecewise", "if_true", if_true)
        self.if_false = _layer("Piecewise", "if_false", if_false)
        widths = {self.condition.units, self.if_true.units, self.if_false.units}
        if len(widths) != 1:
            raise ValueError(
                "Piecewise expects condition, if_true and if_false to have the "
                f"same units. Received: units={self.condition.units}, "
                f"{self.if_true.units} and {self.if_false.units}"
            )
        if not isinstance(use_bias, bool):
            raise ValueError(
                f"Piecewise expects use_bias to be True or False. "
                f"Received: use_bias={use_bias!r}"
            )
        self.use_bias = use_bias
        self.units = self.condition.units

    def build(self, input_shape):
        for layer in (self.condition, self.if_true, self.if_false):
            if not layer.built:  # a deserialized one comes built
                layer.build(input_shape)
        if self.use_bias:
            self.true_bias = self.add_weight(
                name="true_bias", shape=(self.units,), initializer="zeros"
            )
            self.false_bias = self.add_weight(
                name="false_bias", shape=(self.units,), initializer="zeros"
            )

    def call(self, inputs):
        chosen = self.condition(inputs)
        when_true, when_false = self.if_true(inputs), self.if_false(inputs)
        if self.use_bias:
            when_true = when_true + self.true_bias
            when_false = when_false + self.false_bias
        return chosen * when_true + (1.0 - chosen) * when_false

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def get_config(self):
        return {
            **super().get_config(),
            "condition": keras.layers.serialize(self.condition),
            "if_true": keras.layers.serialize(self.if_true),
            "if_false": keras.layers.serialize(self.if_false),
            "use_bias": self.use_bias,
        }
