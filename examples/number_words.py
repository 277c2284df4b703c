"""Number-word translation: "five hundred and fifteen" → 515 with an LSTM + head.

Trask et al. (2018), §4.3, Table 3, Fig. 3 and App. D. The numbers 0–999 are written as
English words (`keras_nalu.tasks.number_words`) and split into 169 training
numbers (0–19 plus a sample that contains every token), 200 validation and
631 test numbers. A model embeds the tokens, encodes them with one LSTM and
maps the LSTM's output at every step to a number with a head: a linear layer
(`Dense(1)`), `NAC(1)`, `NALU(1)`, `NAU(1)` or `NMU(1)`. The prediction is
the head's output at the last token; the outputs at earlier tokens are the
model's intermediate estimates (Fig. 3), never supervised.

Trask et al. (2018) trains each model for 300,000 full-batch Adam steps and keeps the
best of layer sizes {16, 32}, learning rates {0.01, 0.001} and 10
initializations by validation loss. We train `--seeds` initializations
(default 3) of each head with 32 LSTM units, 32-dimensional embeddings and
learning rate 0.01 for `--steps` full-batch steps (default 5,000) on the
squared error, and keep the one with the lowest validation MAE. Trask et al.'s (2018)
LSTM row (Table 3) sums the LSTM's states; ours reads the final step, so its
paper numbers are Table 11's "final state" row.

Run: `python examples/number_words.py [--tiny] [--out DIR]`.
"""

from __future__ import annotations

from collections.abc import Sequence

import _common
import keras
import numpy as np
from keras import ops

import keras_nalu
from keras_nalu.tasks import number_words

EMBEDDING_SIZE = 32
LSTM_UNITS = 32
LEARNING_RATE = 0.01
HEADS = ("Linear", "NAC", "NALU", "NAU", "NMU")
PAPER = {
    "Linear": (0.0085, 32.1, 32.2),
    "NAC": (80.0, 114.1, 114.3),
    "NALU": (0.12, 0.39, 0.41),
}
"""Trask et al.'s (2018) (train, validation, test) MAE: Table 3 (NAC, NALU), Table
11."""

QUERIES = (
    "three hundred and thirty four",
    "seven hundred and two",
    "seven hundred and three",
    "eighty eight",
    "twenty seven and eighty",
)
"""Fig. 3's queries (+ 703); the last is not a number: 27 "and" 80 = 107."""


def make_head(kind: str) -> keras.layers.Layer:
    """The layer that maps each LSTM output to a number."""
    if kind == "Linear":
        return keras.layers.Dense(1)
    return getattr(keras_nalu.layers, kind)(1)


class DropMask(keras.layers.Layer):
    """Passes its input on without the padding mask: only the LSTM needs it."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        # A new tensor: the input tensor itself carries the mask.
        return ops.copy(inputs)

    def compute_mask(self, inputs, mask=None):
        return None


class LastToken(keras.layers.Layer):
    """Picks each sequence's value at its last (non-padding) token.

    Call arguments: `[values (B, T, C), token ids (B, T)]`; returns (B, C).
    """

    def call(self, inputs):
        values, tokens = inputs
        length = ops.sum(ops.cast(ops.not_equal(tokens, 0), "int32"), axis=1)
        last = ops.one_hot(length - 1, ops.shape(tokens)[1], dtype=values.dtype)
        return ops.sum(values * last[..., None], axis=1)


def build_models(copies: int) -> tuple[keras.Model, keras.Model]:
    """Every head's `copies` models side by side.

    Returns:
        `(model, steps)`: `model` maps token ids (B, T) to the prediction at
        the last token, (B, heads·copies), column `h·copies + i` being copy
        i of `HEADS[h]`; `steps` shares its layers and returns the
        predictions after every token, (B, T, heads·copies).
    """
    tokens = keras.Input((number_words.MAX_TOKENS,), dtype="int32")
    per_step = []
    for kind in HEADS:
        for _ in range(copies):
            h = keras.layers.Embedding(
                len(number_words.VOCABULARY) + 1, EMBEDDING_SIZE, mask_zero=True
            )(tokens)
            h = keras.layers.LSTM(LSTM_UNITS, return_sequences=True)(h)
            per_step.append(make_head(kind)(DropMask()(h)))
    values = keras.layers.Concatenate()(per_step)
    final = LastToken()([values, tokens])
    model = keras.Model(tokens, final, name="number_words")
    model.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE),
        loss=summed_squared_error,
        steps_per_execution=50,
    )
    return model, keras.Model(tokens, values, name="number_words_steps")


def summed_squared_error(y_true, y_pred):
    """Σ over models of the squared error: each model gets its own gradient."""
    return ops.sum(ops.square(y_pred - y_true), axis=-1)


def mean_absolute_errors(model: keras.Model, ids: np.ndarray, targets: np.ndarray):
    """MAE of every output column."""
    predictions = ops.convert_to_numpy(model(ids)).astype("float64")
    return np.abs(predictions - targets.astype("float64")).mean(axis=0)


def main(argv: Sequence[str] | None = None) -> dict:
    """Runs the experiment; returns {"rows", "intermediate", "figure"}."""
    parser = _common.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5_000, help="Adam steps")
    parser.add_argument("--seeds", type=int, default=3, help="inits per head")
    args = parser.parse_args(argv)
    if args.tiny:
        args.steps, args.seeds = 30, 1
    out = _common.output_dir(args.out)
    clock = _common.Stopwatch()

    parts = number_words.split(args.seed)
    data = {which: parts.data(which) for which in ("train", "validation", "test")}
    _common.set_seed(args.seed)
    model, steps_model = build_models(args.seeds)
    columns = model.output.shape[-1]
    ids, targets = data["train"]
    # Full-batch steps, logged in up to 50 epochs of >= 100 steps: each epoch
    # repeats the training set `repeats` times, one batch per repeat.
    epochs = min(max(args.steps // 100, 1), 50)
    repeats = max(args.steps // epochs, 1)
    model.fit(
        np.tile(ids, (repeats, 1)),
        np.tile(targets, (repeats, columns)),
        batch_size=len(ids),
        epochs=epochs,
        shuffle=False,
        verbose=0,
    )
    print(f"trained {columns} models in {clock.seconds:.0f} s")

    mae = {
        which: mean_absolute_errors(model, *data[which])
        for which in ("train", "validation", "test")
    }
    rows, chosen = [], {}
    for h, kind in enumerate(HEADS):
        copies = range(h * args.seeds, (h + 1) * args.seeds)
        best = min(copies, key=lambda c: np.nan_to_num(mae["validation"][c], nan=1e30))
        chosen[kind] = best
        paper = PAPER.get(kind, (None, None, None))
        rows.append(
            {
                "model": "LSTM" if kind == "Linear" else f"LSTM + {kind}",
                "train MAE": float(mae["train"][best]),
                "validation MAE": float(mae["validation"][best]),
                "test MAE": float(mae["test"][best]),
                "paper train": paper[0],
                "paper validation": paper[1],
                "paper test": paper[2],
            }
        )

    intermediate = []
    train_numbers = set(parts.train.tolist())
    query_ids = np.stack([number_words.encode(query) for query in QUERIES])
    values = ops.convert_to_numpy(steps_model(query_ids))
    for q, query in enumerate(QUERIES):
        tokens = query.split()
        try:
            number = number_words.words_to_number(query)
            seen = "yes" if number in train_numbers else "no"
        except ValueError:
            seen = "not a number"
        for kind in ("NALU", "Linear"):
            column = chosen[kind]
            intermediate.append(
                {
                    "query": query,
                    "in train": seen,
                    "head": kind,
                    "after each token": "  ".join(
                        f"{token}→{values[q, t, column]:.1f}"
                        for t, token in enumerate(tokens)
                    ),
                }
            )

    title = (
        f"Number-word translation: MAE of the best of {args.seeds} init(s) per "
        f"head by validation MAE, {args.steps} full-batch Adam steps (paper: "
        "Trask et al. (2018), Table 3; LSTM row: Table 11 final state)"
    )
    _common.print_table(title, rows, list(rows[0]))
    _common.print_table(
        "Intermediate predictions after each token (Trask et al. 2018, Fig. 3: NALU "
        "'seven hundred and two' → 6.98, 699.9, 701.3, 702.2)",
        intermediate,
        list(intermediate[0]),
    )
    figure = plot(rows, data["test"], model, chosen, parts)
    path = _common.save_figure(figure, out, "number_words.png")
    print(f"took {clock.seconds:.0f} s")
    return {"rows": rows, "intermediate": intermediate, "figure": path}


def plot(rows: list[dict], test, model, chosen, parts):
    """Left: MAE per head beside the paper's; right: test predictions."""
    from matplotlib import pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    positions = np.arange(len(rows))
    for i, part in enumerate(("train", "validation", "test")):
        left.bar(
            positions + (i - 1) * 0.27,
            [row[f"{part} MAE"] for row in rows],
            0.27,
            label=f"{part} (ours)",
        )
    paper = [row["paper test"] for row in rows]
    left.plot(
        [p + 0.27 for p, v in zip(positions, paper) if v is not None],
        [v for v in paper if v is not None],
        "k_",
        markersize=16,
        label="paper test",
    )
    left.set_xticks(positions, [row["model"] for row in rows], fontsize=8)
    left.set_yscale("log")
    left.set_ylabel("mean absolute error")
    left.legend(fontsize=8, loc="lower left")
    ids, targets = test
    predictions = ops.convert_to_numpy(model(ids))
    for kind, column in chosen.items():
        right.scatter(targets[:, 0], predictions[:, column], s=4, label=kind, alpha=0.6)
    right.plot([0, 999], [0, 999], color="0.3", linewidth=0.8)
    right.set_xlabel(f"target (test numbers, {len(parts.test)})")
    right.set_ylabel("prediction at the last token")
    right.set_ylim(-100, 1100)
    right.legend(markerscale=3)
    figure.suptitle("LSTM + head on number words (best init per head)")
    return figure


if __name__ == "__main__":
    main()
