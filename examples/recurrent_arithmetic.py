"""Recurrent arithmetic: sums over a sequence, trained on 10 steps, tested on 1000.

Trask et al. (2018), App. B, Tables 8 and 9. Each step x_t holds 10 values; a and b sum
two overlapping subsets of every step, and the target is a + b, a − b or
a × b at the end of the sequence (`keras_nalu.tasks.RecurrentArithmeticTask`:
training and interpolation sequences of 10 steps from U[1, 2], extrapolation
sequences of 1000 steps from U[2, 6]). Scores are Trask et al.'s (2018): 100 × MSE of
the model / MSE of a randomly initialized LSTM model on the same data, so
100 is random and 0 is perfect.

Models (hidden size 2 as in Trask et al. (2018), then one output unit):

- LSTM: `keras.layers.LSTM(2)` → `Dense(1)`; GRU likewise.
- NAC: `RNN(ArithmeticCell(NAC(2)))` → `NAC(1)`.
- NALU: `RNN(ArithmeticCell(NALU(2)))` → `NALU(1)` (Trask et al. 2018 stacks two).
- NAU: `RNN(ArithmeticCell(NAU(2)))` → `NAU(1)` for + and −, → `NMU(1)` for
  × (Madsen & Johansen's (2020) pairing).

Trask et al. (2018) trains and reports a single run per cell; we train `--seeds` runs
(default 1) of every model for `--steps` Adam steps (default 20,000, batch
128, learning rate 0.01, each weight's gradient norm clipped at 1) and
report the median score. The NAU/NMU sparsity regularizer ramps from 0 to
λ = `--sparsity` (default 10, Madsen & Johansen's (2020) NMU value) over the middle
half of the run, for every such unit alike (Madsen & Johansen 2020, eq. 14; the units'
own schedules start at 5·10³ and 10⁶ steps). All models and operations train
side by side in one Keras model on the summed loss, so each keeps its own
gradient; training unrolls the 10 steps (same cells and weights as the
length-1000 test model).

Run: `python examples/recurrent_arithmetic.py [--tiny] [--out DIR]`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import _common
import keras
import numpy as np
import tensorflow as tf
from keras import ops

import keras_nalu
from keras_nalu.tasks import RecurrentArithmeticTask

HIDDEN_SIZE = 2
TRAIN_LENGTH = 10
LEARNING_RATE = 0.01
OPERATIONS = {"add": "a + b", "sub": "a − b", "mul": "a × b"}
MODELS = ("LSTM", "GRU", "NAC", "NALU", "NAU")
PAPER_EXTRAPOLATION = {
    "LSTM": {"add": 96.1, "sub": 97.0, "mul": 98.2},
    "GRU": {"add": 96.2, "sub": 95.6, "mul": 99.0},
    "NAC": {"add": 0.0, "sub": 0.0, "mul": 88.4},
    "NALU": {"add": 0.0, "sub": 0.0, "mul": 0.0},
}
"""Trask et al. (2018), Table 9, extrapolation (the NAU is not in Trask et al.
(2018))."""
PAPER_INTERPOLATION = {
    "LSTM": {"add": 0.0, "sub": 0.0, "mul": 0.0},
    "GRU": {"add": 0.0, "sub": 0.0, "mul": 0.0},
    "NAC": {"add": 0.0, "sub": 0.0, "mul": 1.5},
    "NALU": {"add": 0.0, "sub": 0.0, "mul": 0.0},
}
"""Trask et al. (2018), Table 9, interpolation."""


def model_layers(kind: str, operation: str, name: str):
    """The recurrent cell and output layer of one model of `MODELS`."""
    if kind in ("LSTM", "GRU"):
        cell_class = keras.layers.LSTMCell if kind == "LSTM" else keras.layers.GRUCell
        cell = cell_class(HIDDEN_SIZE, name=f"{name}_cell")
        return cell, keras.layers.Dense(1, name=f"{name}_output")
    units = {"NAC": keras_nalu.layers.NAC, "NALU": keras_nalu.layers.NALU}
    recurrent_unit = units.get(kind, keras_nalu.layers.NAU)
    cell = keras_nalu.layers.ArithmeticCell(
        recurrent_unit(HIDDEN_SIZE), name=f"{name}_cell"
    )
    if kind == "NAU" and operation == "mul":
        output_unit = keras_nalu.layers.NMU
    else:
        output_unit = recurrent_unit
    return cell, output_unit(1, name=f"{name}_output")


def summed_squared_error(y_true, y_pred):
    """Σ over models of the squared error: each model gets its own gradient."""
    return ops.sum(ops.square(y_pred - y_true), axis=-1)


def configurations(seeds: int) -> list[tuple[str, str, int]]:
    """(operation, model, seed) in the order of the output columns."""
    return [
        (operation, kind, seed)
        for operation in OPERATIONS
        for kind in MODELS
        for seed in range(seeds)
    ]


def build_models(
    seeds: int, train_length: int = TRAIN_LENGTH
) -> tuple[keras.Model, keras.Model]:
    """Every (operation, model, seed) side by side, for training and for tests.

    Returns:
        `(train_model, model)`: both map sequences (B, T, 10) to (B, columns)
        with the same cells and output layers; `train_model` takes exactly
        `train_length` steps and unrolls them (far faster on a CPU than a
        while loop), `model` takes any length.
    """
    layers = [
        model_layers(kind, operation, f"{operation}_{kind.lower()}_{seed}")
        for operation, kind, seed in configurations(seeds)
    ]

    def side_by_side(length, unroll):
        x = keras.Input((length, 10))
        outputs = [
            output(keras.layers.RNN(cell, unroll=unroll)(x)) for cell, output in layers
        ]
        return keras.Model(x, keras.layers.Concatenate()(outputs))

    train_model = side_by_side(train_length, unroll=True)
    train_model.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE, clipnorm=1.0),
        loss=summed_squared_error,
        steps_per_execution=50,
    )
    return train_model, side_by_side(None, unroll=False)


def random_lstm(seed: int) -> keras.Model:
    """The reference of the scores: an untrained LSTM model."""
    _common.set_seed(10_000 + seed)
    cell, output = model_layers("LSTM", "add", "random")
    x = keras.Input((None, 10))
    return keras.Model(x, output(keras.layers.RNN(cell)(x)))


def tasks(
    seed: int, test_size: int, train_length: int = TRAIN_LENGTH, test_length: int = 1000
) -> dict[str, RecurrentArithmeticTask]:
    """One task per operation; they share inputs and subsets (same seed)."""
    with warnings.catch_warnings():
        # × over 1000 steps exceeds float32's exact integers; known, see docs.
        warnings.filterwarnings("ignore", message=".*exact-integer range")
        return {
            operation: RecurrentArithmeticTask(
                operation,
                seed=seed,
                train_length=train_length,
                test_length=test_length,
                validation_size=test_size,
                test_size=test_size,
            )
            for operation in OPERATIONS
        }


def all_targets(task_of: dict, x, seeds: int):
    """Each column's target: (B, columns), as the model's outputs."""
    per_operation = {op: task.target(x) for op, task in task_of.items()}
    columns = [per_operation[op] for op, _, _ in configurations(seeds)]
    return tf.concat(columns, axis=-1)


def mse_per_column(predict, x: np.ndarray, t: np.ndarray, batch: int = 250):
    """Mean squared error of every output column, in float64."""
    squared = []
    for start in range(0, len(x), batch):
        y = np.asarray(predict(x[start : start + batch]), dtype="float64")
        squared.append(np.square(y - t[start : start + batch].astype("float64")))
    return np.concatenate(squared).mean(axis=0)


def main(argv: Sequence[str] | None = None) -> dict:
    """Runs the experiment; returns {"rows": [...], "figure": path}."""
    parser = _common.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="Adam steps")
    parser.add_argument("--seeds", type=int, default=1, help="runs per cell")
    parser.add_argument(
        "--sparsity", type=float, default=10.0, help="NAU/NMU sparsity strength λ"
    )
    parser.add_argument(
        "--test-size", type=int, default=1_000, help="sequences per evaluation set"
    )
    args = parser.parse_args(argv)
    train_length, test_length = TRAIN_LENGTH, 1000
    if args.tiny:
        args.steps, args.seeds, args.test_size = 20, 1, 16
        train_length, test_length = 3, 20
    out = _common.output_dir(args.out)
    clock = _common.Stopwatch()

    task_of = tasks(args.seed, args.test_size, train_length, test_length)
    task = task_of["add"]
    _common.set_seed(args.seed)
    train_model, model = build_models(args.seeds, train_length)
    data = task.train_dataset().map(
        lambda x, _: (x, all_targets(task_of, x, args.seeds))
    )
    train_model.fit(
        data,
        steps_per_epoch=args.steps,
        epochs=1,
        callbacks=[
            # The NAU/NMU sparsity λ(t), ramped from 0 to `--sparsity` over
            # the middle half of the run (their own schedules start at 5·10³
            # and 10⁶ steps, past the end of a short run).
            keras_nalu.callbacks.RegularizationSchedule(
                args.sparsity, args.steps // 4, max(3 * args.steps // 4, 2)
            )
        ],
        shuffle=False,
        verbose=0,
    )
    print(f"trained {model.output.shape[-1]} models in {clock.seconds:.0f} s")

    # One trace for both lengths: (batch, any steps, 10).
    sequences = [tf.TensorSpec((None, None, 10), tf.float32)]
    predict = tf.function(lambda x: model(x, training=False), input_signature=sequences)
    reference = random_lstm(args.seed)
    predict_reference = tf.function(
        lambda x: reference(x, training=False), input_signature=sequences
    )
    scores = {}
    for split, (x, _) in (
        ("interpolation", task.validation_data()),
        ("extrapolation", task.test_data()),
    ):
        t = all_targets(task_of, x, args.seeds).numpy()
        mse = mse_per_column(predict, x, t)
        random_mse = {
            op: float(mse_per_column(predict_reference, x, task_of[op].target(x))[0])
            for op in OPERATIONS
        }
        for column, (op, kind, _) in enumerate(configurations(args.seeds)):
            scores.setdefault((split, op, kind), []).append(
                {"mse": float(mse[column]), "score": 100 * mse[column] / random_mse[op]}
            )
        scores[(split, "random")] = random_mse
        print(f"evaluated {split} in {clock.seconds:.0f} s")

    rows = []
    for split, paper in (
        ("interpolation", PAPER_INTERPOLATION),
        ("extrapolation", PAPER_EXTRAPOLATION),
    ):
        for kind in MODELS:
            row = {"test": split, "model": kind}
            for op, label in OPERATIONS.items():
                runs = scores[(split, op, kind)]
                row[label] = float(np.median([run["score"] for run in runs]))
                row[f"paper {label}"] = paper.get(kind, {}).get(op)
            rows.append(row)
    raw = [
        {
            "test": split,
            "model": kind,
            **{
                label: float(np.median([r["mse"] for r in scores[(split, op, kind)]]))
                for op, label in OPERATIONS.items()
            },
        }
        for split in ("interpolation", "extrapolation")
        for kind in MODELS
    ]
    raw += [
        {
            "test": split,
            "model": "random LSTM",
            **{
                label: scores[(split, "random")][op] for op, label in OPERATIONS.items()
            },
        }
        for split in ("interpolation", "extrapolation")
    ]

    title = (
        "Recurrent arithmetic: 100 × MSE / MSE of a random LSTM (100 = random, "
        f"0 = perfect), median of {args.seeds} run(s), {args.steps} steps; "
        f"train/interpolation length {train_length}, extrapolation length "
        f"{test_length} (paper: "
        "Trask et al. (2018), Table 9; the NAU row uses NMU output for ×)"
    )
    _common.print_table(title, rows, list(rows[0]))
    _common.print_table(
        "Raw test MSE (median over runs)", raw, ["test", "model", *OPERATIONS.values()]
    )
    path = _common.save_figure(plot(rows), out, "recurrent_arithmetic.png")
    print(f"took {clock.seconds:.0f} s")
    return {"rows": rows, "raw": raw, "figure": path}


def plot(rows: list[dict]):
    """Extrapolation scores per model and operation (log scale), paper beside.

    Scores are drawn between 1e-3 and 1e6; larger, infinite or NaN scores
    (a state that blew up over 1000 steps) are drawn at 1e6 and labelled.
    """
    from matplotlib import pyplot as plt

    low, high = 1e-3, 1e6
    extrapolation = [row for row in rows if row["test"] == "extrapolation"]
    figure, axis = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(OPERATIONS)
    positions = np.arange(len(extrapolation))
    for i, label in enumerate(OPERATIONS.values()):
        scores = np.array([row[label] for row in extrapolation], dtype="float64")
        shown = np.clip(np.nan_to_num(scores, nan=high, posinf=high), low, high)
        axis.bar(positions + i * width, shown, width, label=f"{label} (ours)")
        for x, score in zip(positions + i * width, scores):
            if not score <= high:
                text = "nan" if np.isnan(score) else f"{score:.0e}"
                axis.text(x, high, text, ha="center", va="bottom", fontsize=6)
            paper = extrapolation[int(round(x - i * width))][f"paper {label}"]
            if paper is not None:
                axis.plot(x, max(paper, low), "_", markersize=14, color="black")
    axis.plot([], [], "_", markersize=14, color="black", label="paper (Table 9)")
    axis.set_xticks(positions + width, [row["model"] for row in extrapolation])
    axis.set_yscale("log")
    axis.set_ylim(low / 2, high * 20)
    axis.axhline(100, color="0.5", linestyle=":", label="random = 100")
    axis.set_ylabel("extrapolation score (100 × MSE / random LSTM)")
    axis.set_title("Recurrent arithmetic, trained on length 10, tested on 1000")
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


if __name__ == "__main__":
    main()
