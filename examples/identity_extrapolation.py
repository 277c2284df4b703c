"""Identity extrapolation: MLP autoencoders fail outside their training range.

Trask et al. (2018), §1.1, Fig. 1 and App. A Table 5 (also a NALU course report, §2).
An autoencoder maps a scalar through 3 hidden layers of 8 units back to itself. Every
model is identical except for the non-linearity of the hidden layers; each is
trained on U[-5, 5] and tested on [-20, 20] (Fig. 1) and on the integers
-1000…1000 (Table 5, where 500 is the error of always predicting 0). The
paper trains 100 models per non-linearity for 10,000 iterations at learning
rate 0.01 with a squared error loss (optimizer and batch not given); we
train `--seeds` models per non-linearity (default 32; 8 for the NAU) for
`--steps` Adam steps (default 10,000) on fresh batches of 64, the learning
rate decaying from 0.01 to 0 on a cosine schedule.

The non-linearities are Table 5's, under their PyTorch definitions (the
table's names are PyTorch's modules): Hardtanh = clip to [-1, 1], LeakyReLU
with slope 0.01, Softshrink with λ = 0.5, PReLU with one learned slope
initialized at 0.25 and Threshold(1, 0) (x if x > 1 else 0; the paper does
not give its threshold). Beyond the table: hard sigmoid and SiLU/Swish (a
NALU course report) and an autoencoder of four `NAU` layers (no
non-linearity, weights in [-1, 1]).

All models are trained together as independent copies in one Keras model:
the loss is the sum of the copies' squared errors, so each copy gets exactly
its own gradient, and Adam's update is per weight.

Run: `python examples/identity_extrapolation.py [--tiny] [--out DIR]`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import _common
import keras
import numpy as np
from keras import ops

import keras_nalu

TRAIN_RANGE = (-5.0, 5.0)
TEST_RANGE = (-20.0, 20.0)
TABLE5_RANGE = (-1000, 1000)
HIDDEN_LAYERS = 3
HIDDEN_UNITS = 8
LEARNING_RATE = 0.01
BATCH_SIZE = 64


@dataclasses.dataclass(frozen=True)
class Nonlinearity:
    """One row of the experiment: a name, its Table 5 error, its layer."""

    name: str
    paper_error: float | None
    make: Callable[[], keras.layers.Layer] | None
    """A fresh activation layer, or None for the NAU autoencoder."""


def _activation(function) -> Callable[[], keras.layers.Layer]:
    return lambda: keras.layers.Activation(function)


def _threshold(x):
    return ops.threshold(x, 1.0, 0.0)


NONLINEARITIES = (
    Nonlinearity("Hardtanh", 495.47, _activation("hard_tanh")),
    Nonlinearity("ReLU6", 494.59, _activation("relu6")),
    Nonlinearity("Softsign", 494.19, _activation("softsign")),
    Nonlinearity("Tanh", 493.65, _activation("tanh")),
    Nonlinearity("Sigmoid", 493.15, _activation("sigmoid")),
    Nonlinearity("Threshold", 432.97, _activation(_threshold)),
    Nonlinearity("SELU", 365.66, _activation("selu")),
    Nonlinearity("ELU", 142.83, _activation("elu")),
    Nonlinearity("Softshrink", 119.17, _activation(lambda x: ops.soft_shrink(x, 0.5))),
    Nonlinearity("ReLU", 83.63, _activation("relu")),
    Nonlinearity("LeakyReLU", 77.02, _activation(lambda x: ops.leaky_relu(x, 0.01))),
    Nonlinearity("Tanhshrink", 57.03, _activation("tanh_shrink")),
    Nonlinearity("Softplus", 37.60, _activation("softplus")),
    Nonlinearity(
        "PReLU",
        14.66,
        # Inputs are (batch, copies, units): one slope per copy and layer.
        lambda: keras.layers.PReLU(
            alpha_initializer=keras.initializers.Constant(0.25), shared_axes=[2]
        ),
    ),
    Nonlinearity("None (linear)", 0.0001, _activation("linear")),
    Nonlinearity("HardSigmoid", None, _activation("hard_sigmoid")),
    Nonlinearity("SiLU/Swish", None, _activation("silu")),
    Nonlinearity("NAU", None, None),
)
"""Table 5's rows in its order (paper "<0.0001" shown as 0.0001), then extras.

The NAU (no activation layer) must stay last: its copies are the last output
columns of `build_copies`.
"""


class CopiedDense(keras.layers.Layer):
    """`copies` independent dense layers: (B, copies, in) → (B, copies, units).

    Each copy's kernel is Glorot-uniform for its own fan-in and fan-out, as a
    `keras.layers.Dense(units)` of its own would be; biases start at zero.
    """

    def __init__(self, units: int, copies: int, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.copies = copies

    def build(self, input_shape):
        fan_in = int(input_shape[-1])
        limit = float(np.sqrt(6.0 / (fan_in + self.units)))
        self.kernel = self.add_weight(
            name="kernel",
            shape=(self.copies, fan_in, self.units),
            initializer=keras.initializers.RandomUniform(-limit, limit),
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.copies, self.units), initializer="zeros"
        )

    def call(self, inputs):
        return ops.einsum("bci,cio->bco", inputs, self.kernel) + self.bias


class GroupedActivation(keras.layers.Layer):
    """Applies layer k to the k-th block of `copies` along the copy axis."""

    def __init__(self, activations: Sequence[keras.layers.Layer], copies: int):
        super().__init__()
        self.activations = list(activations)
        self.copies = copies

    def call(self, inputs):
        blocks = ops.split(inputs, len(self.activations), axis=1)
        return ops.concatenate(
            [layer(block) for layer, block in zip(self.activations, blocks)], axis=1
        )


def dense_autoencoders(x, nonlinearities: Sequence[Nonlinearity], copies: int):
    """`copies` MLP autoencoders 1 → 8 → 8 → 8 → 1 per non-linearity.

    All of them share each layer's variables (one `CopiedDense` of
    len(nonlinearities)·copies copies), which keeps the training graph small.
    Returns (B, len(nonlinearities)·copies).
    """
    total = len(nonlinearities) * copies
    h = keras.layers.RepeatVector(total)(x)
    for _ in range(HIDDEN_LAYERS):
        h = CopiedDense(HIDDEN_UNITS, total)(h)
        h = GroupedActivation([n.make() for n in nonlinearities], copies)(h)
    h = CopiedDense(1, total)(h)
    return keras.layers.Reshape((total,))(h)


def nau_autoencoders(x, copies: int):
    """`copies` autoencoders of four `NAU` layers: (B, copies)."""
    outputs = []
    for _ in range(copies):
        h = x
        for size in (HIDDEN_UNITS,) * HIDDEN_LAYERS + (1,):
            h = keras_nalu.layers.NAU(size)(h)
        outputs.append(h)
    return outputs[0] if copies == 1 else keras.layers.Concatenate()(outputs)


def summed_squared_error(y_true, y_pred):
    """Σ over copies of the squared error: each copy gets its own gradient."""
    return ops.sum(ops.square(y_pred - y_true), axis=-1)


def build_copies(copies: int, nau_copies: int, steps: int) -> keras.Model:
    """Every row's autoencoders side by side: (B, 1) → (B, outputs).

    Output column `k·copies + i` is copy i of `NONLINEARITIES[k]`; the NAU's
    `nau_copies` copies come last. Each copy is an independent model: the
    summed loss gives it its own gradient and Adam updates per weight.
    """
    dense = [n for n in NONLINEARITIES if n.make is not None]
    x = keras.Input((1,))
    y = keras.layers.Concatenate()(
        [dense_autoencoders(x, dense, copies), nau_autoencoders(x, nau_copies)]
    )
    model = keras.Model(x, y, name="autoencoders")
    model.compile(
        # A constant rate leaves Adam's weights jittering by about the rate
        # around the identity (whose exact solution has zero gradient noise);
        # decaying it to 0 lets every model settle.
        optimizer=keras.optimizers.Adam(
            keras.optimizers.schedules.CosineDecay(LEARNING_RATE, steps)
        ),
        loss=summed_squared_error,
        steps_per_execution=100,
    )
    return model


def train(copies: int, nau_copies: int, steps: int, seed: int) -> keras.Model:
    """Trains all autoencoders for `steps` steps on fresh U[-5, 5] batches."""
    _common.set_seed(seed)
    model = build_copies(copies, nau_copies, steps)
    rng = np.random.default_rng(seed)
    x = rng.uniform(*TRAIN_RANGE, size=(steps * BATCH_SIZE, 1)).astype("float32")
    model.fit(
        x,
        x,  # (B, 1): the loss broadcasts it against every copy's output
        batch_size=BATCH_SIZE,
        epochs=1,
        shuffle=False,
        # Drives the NAU's sparsity regularizer (its schedule starts at 5·10³).
        callbacks=[keras_nalu.callbacks.RegularizationSchedule()],
        verbose=0,
    )
    return model


def columns_of(copies: int, nau_copies: int) -> dict[str, slice]:
    """Which output columns belong to which row of `NONLINEARITIES`."""
    columns, start = {}, 0
    for nonlinearity in NONLINEARITIES:
        width = copies if nonlinearity.make is not None else nau_copies
        columns[nonlinearity.name] = slice(start, start + width)
        start += width
    return columns


def main(argv: Sequence[str] | None = None) -> dict:
    """Runs the experiment; returns {"rows": [...], "figure": path}."""
    parser = _common.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000, help="Adam steps")
    parser.add_argument("--seeds", type=int, default=32, help="models per row")
    args = parser.parse_args(argv)
    if args.tiny:
        args.steps, args.seeds = 30, 2
    out = _common.output_dir(args.out)
    clock = _common.Stopwatch()
    # The NAU's copies are separate layers (the unit is not vectorized over
    # copies); at most 8 keep the graph small.
    nau_copies = min(args.seeds, 8)

    model = train(args.seeds, nau_copies, args.steps, args.seed)
    print(f"trained {model.output.shape[-1]} autoencoders in {clock.seconds:.0f} s")
    test_x = np.linspace(*TEST_RANGE, 801)
    table5_x = np.arange(TABLE5_RANGE[0], TABLE5_RANGE[1] + 1, dtype="float64")
    both = np.concatenate([test_x, table5_x])
    # One eager call: `predict` would trace a multi-step graph for 2,802 points.
    prediction = ops.convert_to_numpy(model(both[:, None].astype("float32")))
    errors = np.abs(prediction.astype("float64") - both[:, None])
    test_errors, table5_errors = errors[: len(test_x)], errors[len(test_x) :]
    inside = (test_x >= TRAIN_RANGE[0]) & (test_x <= TRAIN_RANGE[1])

    rows, curves = [], {}
    for nonlinearity in NONLINEARITIES:
        columns = columns_of(args.seeds, nau_copies)[nonlinearity.name]
        curves[nonlinearity.name] = test_errors[:, columns].mean(axis=1)
        rows.append(
            {
                "nonlinearity": nonlinearity.name,
                "models": columns.stop - columns.start,
                "MAE [-5,5]": float(test_errors[inside, columns].mean()),
                "MAE [-20,20]": float(test_errors[:, columns].mean()),
                "MAE -1000..1000": float(table5_errors[:, columns].mean()),
                "paper (Table 5)": nonlinearity.paper_error,
            }
        )

    title = (
        f"Identity extrapolation: mean absolute error after {args.steps} Adam "
        "steps on U[-5, 5] (paper: 100 models, 10,000 steps; its Table 5 is on "
        "the integers -1000..1000, where 500 = always predicting 0)"
    )
    columns = list(rows[0])
    _common.print_table(title, rows, columns)
    path = _common.save_figure(plot(test_x, curves), out, "identity_extrapolation.png")
    print(f"took {clock.seconds:.0f} s")
    return {"rows": rows, "figure": path}


def plot(x: np.ndarray, curves: dict[str, np.ndarray]):
    """Fig. 1: mean absolute error against the input, one line per model."""
    from matplotlib import pyplot as plt

    figure, axis = plt.subplots(figsize=(9, 5.5))
    colors = plt.colormaps["tab20"](np.linspace(0, 1, len(curves)))
    for (name, curve), color in zip(curves.items(), colors):
        style = "--" if name in ("NAU", "None (linear)") else "-"
        # Floored at 1e-7 so the (near-)exact models stay on the log axis.
        axis.plot(x, np.maximum(curve, 1e-7), style, color=color, label=name)
    axis.axvspan(*TRAIN_RANGE, color="0.9", zorder=0, label="training range")
    axis.set_yscale("log")
    axis.set_xlabel("input x")
    axis.set_ylabel("mean absolute error |f(x) - x|")
    axis.set_title("Autoencoders trained on [-5, 5], tested on [-20, 20]")
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axis.grid(alpha=0.3)
    return figure


if __name__ == "__main__":
    main()
