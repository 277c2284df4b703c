"""Draws docs/assets/extrapolation.png: an NAU → NMU extrapolates, an MLP does not.

Both models learn y = (x0 + x1) · (x2 + x3) from inputs drawn from U[-2, 2]
and are drawn along the line x0 = x1 = x2 = x3 = t for t in [-6, 6], where the
target is 4t². The NAU → NMU model is the README's example, trained with the
sparsity schedule; the MLP is two ReLU layers of 64 units, trained as long on
the same batches. The script prints both models' mean squared errors on the
training range and on 10⁴ random inputs from U[-6, 6], and the formula that
`keras_nalu.explain` reads from the NAU → NMU weights, and writes them
beside the figure (`docs/assets/extrapolation.json`, which the README
quotes).

Run: `python docs/figures/extrapolation.py [--steps N] [--out PATH]`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np

import keras_nalu
from keras_nalu.explain import explain

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "assets" / "extrapolation.png"
TRAIN_RANGE = (-2.0, 2.0)
TEST_RANGE = (-6.0, 6.0)


def target(x: np.ndarray) -> np.ndarray:
    return ((x[:, 0] + x[:, 1]) * (x[:, 2] + x[:, 3]))[:, None]


def arithmetic_model() -> keras.Model:
    model = keras.Sequential(
        [keras.Input((4,)), keras_nalu.layers.NAU(2), keras_nalu.layers.NMU(1)],
        name="nau_nmu",
    )
    model.compile(keras.optimizers.Adam(1e-2), "mse")
    return model


def mlp() -> keras.Model:
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(1),
        ],
        name="mlp",
    )
    model.compile(keras.optimizers.Adam(1e-3), "mse")
    return model


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    keras.utils.set_random_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    batch = 64
    x = rng.uniform(*TRAIN_RANGE, (args.steps * batch, 4)).astype("float32")
    y = target(x)
    # The sparsity λ ramps in over the middle fifth of the run (Madsen &
    # Johansen 2020, eq. 14), after the weights have found their subsets.
    start, end = int(0.4 * args.steps), int(0.6 * args.steps)
    models = {"NAU → NMU": arithmetic_model(), "MLP (ReLU 64-64)": mlp()}
    for name, model in models.items():
        callbacks = []
        if name.startswith("NAU"):
            callbacks = [keras_nalu.callbacks.RegularizationSchedule(1.0, start, end)]
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, callbacks=callbacks)

    test_rng = np.random.default_rng(args.seed + 1)
    splits = {
        "mse on U[-2, 2]": test_rng.uniform(*TRAIN_RANGE, (10_000, 4)),
        "mse on U[-6, 6]": test_rng.uniform(*TEST_RANGE, (10_000, 4)),
    }
    t = np.linspace(*TEST_RANGE, 241, dtype="float32")
    line = np.repeat(t[:, None], 4, axis=1)
    truth = target(line)[:, 0]
    predictions, report = {}, {}
    for name, model in models.items():
        predictions[name] = model.predict(line, verbose=0)[:, 0]
        report[name] = {
            split: float(np.mean((model.predict(x, verbose=0) - target(x)) ** 2))
            for split, x in splits.items()
        }
    formula = str(explain(models["NAU → NMU"]))
    report["formula"] = formula

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7.2, 3.0), dpi=100)
    axis.axvspan(*TRAIN_RANGE, color="0.88", label="training range")
    axis.plot(t, truth, color="black", linewidth=3, alpha=0.35, label="target 4t²")
    styles = {"NAU → NMU": ("tab:blue", "-"), "MLP (ReLU 64-64)": ("tab:red", "--")}
    for name, prediction in predictions.items():
        color, style = styles[name]
        axis.plot(t, prediction, style, color=color, linewidth=1.6, label=name)
    axis.set_xlabel("t   (input x = (t, t, t, t))")
    axis.set_ylabel("y = (x0 + x1)(x2 + x3)")
    axis.set_ylim(-15, 160)
    axis.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, fontsize=9)
    axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=100)
    plt.close(figure)
    numbers = {**report, "steps": args.steps, "seed": args.seed}
    args.out.with_suffix(".json").write_text(
        json.dumps(numbers, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    report["figure"] = str(args.out)
    for key, value in report.items():
        print(f"{key}: {value}")
    return report


if __name__ == "__main__":
    main()
