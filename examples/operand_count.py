"""Operand count: NAC and NAU add and subtract 1 to 10 operands.

A NALU course report, §3.1-3.2: one NAC learns x₁ + … + xₙ and x₁ − x₂ − … − xₙ for
n = 1…10 operands, trained on (20, 40), validated on (20, 40) and tested on
(0, 60), and reaches 100 % test accuracy for every n. The report does not say
what counts as accurate; we draw integer operands (training: 20…40, test:
0…60) and call a prediction accurate when it rounds to the integer target,
|y − t| < 0.5. We also report the test MSE and Madsen & Johansen's (2020) success
criterion (Madsen & Johansen 2020, §4.1.1): the MSE is below that of the nearly exact
weights W^ε = (1 − ε)·W*, ε = 10⁻⁵, which is ε²·mean(t²) here.

Every model is a single unit with one output, `NAC(1)` or `NAU(1)` on the n
operands (NAU with its default sparsity regularizer and schedule), trained
for `--steps` Adam steps (default 20,000) on batches of 128 fresh samples,
the learning rate decaying from 0.05 to 0 on a cosine schedule. We train
`--seeds` copies (default 5) of each. Each copy is an independent output
column of one layer, initialized as its own n → 1 unit; all (operation, n,
unit) layers train together on the summed squared error, so each copy gets
its own gradient. (The NAU's sparsity penalty is a mean over the layer's
weights, so each copy feels 1/`--seeds` of the strength it would alone.)

Run: `python examples/operand_count.py [--tiny] [--out DIR]`.
"""

from __future__ import annotations

from collections.abc import Sequence

import _common
import keras
import numpy as np
import tensorflow as tf
from keras import ops

import keras_nalu

MAX_OPERANDS = 10
OPERATIONS = {"add": "+", "sub": "−"}
UNITS = ("NAC", "NAU")
TRAIN_RANGE = (20, 40)
TEST_RANGE = (0, 60)
EPSILON = 1e-5
LEARNING_RATE = 0.05
BATCH_SIZE = 128
TEST_SIZE = 10_000
PAPER_ACCURACY = {"add": 100.0, "sub": 100.0}
"""The NALU course report's NAC test accuracy (%), the same for every n it reports."""


class ColumnwiseInitializer(keras.initializers.Initializer):
    """Draws each output column of a kernel as its own `(fan_in, 1)` kernel.

    A layer with `copies` output units then starts like `copies` separate
    one-output units (the package initializers scale with fan-out).
    """

    def __init__(self, base):
        self.base = keras_nalu.initializers.get(base)

    def __call__(self, shape, dtype=None):
        columns = [self.base((*shape[:-1], 1), dtype=dtype) for _ in range(shape[-1])]
        return ops.concatenate(columns, axis=-1)

    def get_config(self):
        return {"base": keras.initializers.serialize(self.base)}

    @classmethod
    def from_config(cls, config):
        return cls(keras.initializers.deserialize(config["base"]))


def make_unit(unit: str, copies: int, name: str) -> keras.layers.Layer:
    """`copies` independent one-output NACs or NAUs as one layer."""
    if unit == "NAC":
        initializer = ColumnwiseInitializer("nac_uniform")
        return keras_nalu.layers.NAC(copies, kernel_initializer=initializer, name=name)
    initializer = ColumnwiseInitializer("nau_uniform")
    return keras_nalu.layers.NAU(copies, kernel_initializer=initializer, name=name)


def configurations() -> list[tuple[str, int, str]]:
    """(operation, n, unit) in the order of the model's output blocks."""
    return [
        (operation, n, unit)
        for operation in OPERATIONS
        for n in range(1, MAX_OPERANDS + 1)
        for unit in UNITS
    ]


def targets(x, copies: int):
    """Every configuration's target, repeated per copy: (B, blocks·copies).

    Works on NumPy arrays and tensors alike (returns a tensor), so the
    training pipeline computes targets per batch instead of storing them.
    """
    columns = []
    for operation, n, _ in configurations():
        total = ops.sum(x[:, :n], axis=1, keepdims=True)
        # x₁ − (x₂ + … + xₙ) = 2·x₁ − (x₁ + … + xₙ).
        target = total if operation == "add" else 2.0 * x[:, :1] - total
        columns.append(ops.repeat(target, copies, axis=1))
    return ops.concatenate(columns, axis=1)


def summed_squared_error(y_true, y_pred):
    """Σ over copies of the squared error: each copy gets its own gradient."""
    return ops.sum(ops.square(y_pred - y_true), axis=-1)


def build_model(
    copies: int, steps: int, learning_rate: float = LEARNING_RATE
) -> keras.Model:
    """All (operation, n, unit) layers on the first n operands of one input."""
    x = keras.Input((MAX_OPERANDS,))
    outputs = [
        make_unit(unit, copies, f"{operation}_{n}_{unit.lower()}")(x[:, :n])
        for operation, n, unit in configurations()
    ]
    model = keras.Model(x, keras.layers.Concatenate()(outputs), name="operands")
    model.compile(
        optimizer=keras.optimizers.Adam(
            keras.optimizers.schedules.CosineDecay(learning_rate, steps)
        ),
        loss=summed_squared_error,
        steps_per_execution=100,
    )
    return model


def integers(rng, bounds: tuple[int, int], size: int) -> np.ndarray:
    """Integer operands drawn uniformly from `bounds` (inclusive), as float32."""
    low, high = bounds
    return rng.integers(low, high, size=(size, MAX_OPERANDS), endpoint=True).astype(
        "float32"
    )


def main(argv: Sequence[str] | None = None) -> dict:
    """Runs the experiment; returns {"rows": [...], "figure": path}."""
    parser = _common.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="Adam steps")
    parser.add_argument("--seeds", type=int, default=5, help="models per cell")
    parser.add_argument("--learning-rate", type=float, default=LEARNING_RATE)
    args = parser.parse_args(argv)
    if args.tiny:
        args.steps, args.seeds = 30, 2
    out = _common.output_dir(args.out)
    clock = _common.Stopwatch()

    _common.set_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = build_model(args.seeds, args.steps, args.learning_rate)
    x_train = integers(rng, TRAIN_RANGE, args.steps * BATCH_SIZE)
    batches = (
        tf.data.Dataset.from_tensor_slices(x_train)
        .batch(BATCH_SIZE)
        .map(lambda x: (x, targets(x, args.seeds)))
    )
    model.fit(
        batches,
        epochs=1,
        shuffle=False,
        callbacks=[keras_nalu.callbacks.RegularizationSchedule()],
        verbose=0,
    )
    print(f"trained {model.output.shape[-1]} units in {clock.seconds:.0f} s")

    x_test = integers(np.random.default_rng(10_000 + args.seed), TEST_RANGE, TEST_SIZE)
    t_test = ops.convert_to_numpy(targets(x_test, args.seeds)).astype("float64")
    y_test = ops.convert_to_numpy(model(x_test)).astype("float64")
    squared = np.square(y_test - t_test)
    mse = squared.mean(axis=0)
    accuracy = 100.0 * (np.sqrt(squared) < 0.5).mean(axis=0)
    threshold = EPSILON**2 * np.square(t_test).mean(axis=0)

    results = {}
    for block, key in enumerate(configurations()):
        copies = slice(block * args.seeds, (block + 1) * args.seeds)
        results[key] = {
            "accuracy": float(accuracy[copies].mean()),
            "mse": float(np.median(mse[copies])),
            "solved": int((mse[copies] < threshold[copies]).sum()),
        }
    rows = []
    for operation, symbol in OPERATIONS.items():
        for n in range(1, MAX_OPERANDS + 1):
            row = {"op": symbol, "operands": n}
            for unit in UNITS:
                result = results[(operation, n, unit)]
                row[f"{unit} acc %"] = result["accuracy"]
                row[f"{unit} MSE"] = result["mse"]
                row[f"{unit} solved"] = f"{result['solved']}/{args.seeds}"
            row["paper NAC acc %"] = PAPER_ACCURACY[operation]
            rows.append(row)

    title = (
        f"Operand count: test accuracy (% of test sums whose prediction rounds "
        f"to the target, mean over {args.seeds} seeds), median test MSE and "
        f"seeds solved (MSE < W^ε's), after {args.steps} Adam steps on integers "
        f"{TRAIN_RANGE[0]}…{TRAIN_RANGE[1]}, tested on {TEST_RANGE[0]}…"
        f"{TEST_RANGE[1]} (a NALU course report: NAC 100 % for every n)"
    )
    _common.print_table(title, rows, list(rows[0]))
    path = _common.save_figure(plot(results, args.seeds), out, "operand_count.png")
    print(f"took {clock.seconds:.0f} s")
    return {"rows": rows, "figure": path}


def plot(results: dict, seeds: int):
    """Accuracy and MSE against the operand count."""
    from matplotlib import pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    counts = np.arange(1, MAX_OPERANDS + 1)
    for operation, symbol in OPERATIONS.items():
        for unit, marker in zip(UNITS, "os"):
            style = "-" if operation == "add" else "--"
            label = f"{unit} {symbol}"
            cells = [results[(operation, n, unit)] for n in counts]
            left.plot(counts, [c["accuracy"] for c in cells], style, marker=marker)
            right.plot(
                counts, [c["mse"] for c in cells], style, marker=marker, label=label
            )
    left.set_ylabel("test accuracy (%)")
    left.set_ylim(-3, 103)
    right.set_yscale("log")
    right.set_ylabel(f"median test MSE ({seeds} seeds)")
    right.legend()
    for axis in (left, right):
        axis.set_xlabel("number of operands")
        axis.set_xticks(counts)
        axis.grid(alpha=0.3)
    figure.suptitle("One NAC / NAU unit: + and − over 1…10 operands")
    return figure


if __name__ == "__main__":
    main()
