"""The Neural Status Register's comparisons and piecewise functions.

The experiments of its paper a CPU runs: comparisons learned on digits and
tested on numbers up to 10¹⁴, and piecewise functions an NSR drives through
two NAUs.

    KERAS_BACKEND=tensorflow python benchmarks/nsr.py                  # both
    KERAS_BACKEND=tensorflow python benchmarks/nsr.py --experiments comparisons
    python benchmarks/nsr.py --summarize                               # only the tables

Faber & Wattenhofer, "Neural Status Registers" (ICML 2023), as the authors'
scripts run them (`lukasjf/neural_status_register`, `comparisons/` and
`functions/`): full-batch Adam (10⁻³, ε 10⁻⁸), mean absolute error, float64,
10 seeds, the NSR with redundancy 1 and λ = 1.

- comparisons: >, <, ≥, ≤ trained on the 81 pairs of digits 1…9, = and ≠ on
  18 pairs (each digit with itself and with one other), 5·10⁴ steps. Tested
  at each magnitude 10ᵏ, k = 1 … 14, on 21 pairs (a, a ± i), i ≤ 5, around
  one a drawn from [10ᵏ, 10ᵏ⁺¹) (= and ≠: 20 pairs). The authors' table
  prints the mean absolute error ± its standard deviation over seeds at
  10¹ … 10⁷; a seed here also *solves* a magnitude when every test pair is
  on the right side of ½, and the summary counts, with a Wilson interval,
  the seeds that solve every magnitude up to 10⁷, and up to 10¹⁴.
- piecewise: t = x₄ + 4 if x₀ > x₁ else x₃ − x₂ (`f`), and t = x₄ + 4 if
  x₀ = x₁ else x₃ − x₂ (`feq`), on 4,000 points (x₀, x₁ from −10 … 9,
  x₂, x₃, x₄ from −100 … 100), learned by `Piecewise(NSR, NAU, NAU)` with a
  bias per branch (the authors' `AluWithComparison` with `NAU_ALU`s, whose
  regularizer mean min(|w|, 1 − |w|) joins the loss after step 4·10⁴).
  Tested at 2ⁱ, i = 3 … 14, on 11 points (x₀, x₀ + j), |j| ≤ 5 (`feq`: 22,
  half with x₁ = x₀). A seed solves a magnitude when every test point is
  within ½ of its target. The authors train 5·10⁵ steps; `--steps` sets fewer.

The seeds train side by side in one Keras model, as independent units of
one layer (unit u of the NSR and of each NAU is one seed of one task; the
loss sums their errors, so each follows its own gradient), and tasks with
the same training inputs share the model; they share the training and test
inputs, which the authors draw once per seed. What differs from the
authors' scripts, and why, is in the summary's notes.

Writes `benchmarks/results/nsr/comparisons.csv`, `piecewise.csv` (one row
per experiment, seed and magnitude) and `summary.md`; an experiment whose
rows are there is not trained again (delete its rows to rerun it).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from published import section  # noqa: E402

from keras_nalu._files import atomic_write  # noqa: E402
from keras_nalu.evaluation.statistics import success_rate_interval  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "nsr"
SEEDS = 10
COMPARISON_STEPS = 50_000
PIECEWISE_STEPS = 500_000
REGULARIZER_START = 40_000

COMPARISONS = {
    "gt": (">", np.greater),
    "lt": ("<", np.less),
    "geq": ("≥", np.greater_equal),
    "leq": ("≤", np.less_equal),
    "eq": ("=", np.equal),
    "ne": ("≠", np.not_equal),
}
PIECEWISE = {
    "f": ("x₄ + 4 if x₀ > x₁ else x₃ − x₂", np.greater),
    "feq": ("x₄ + 4 if x₀ = x₁ else x₃ − x₂", np.equal),
}
#: Tasks that share their training inputs train together, one model: every
#: (task, seed) a unit of its layers.
GROUPS = {
    "comparisons": (("gt", "lt", "geq", "leq"), ("eq", "ne")),
    "piecewise": (("f",), ("feq",)),
}
#: Steps per compiled execution of `fit`; the regularizer's switch falls on one.
EXECUTION = 1_000


# --- the tasks ----------------------------------------------------------------


def comparison_data(name: str, rng: np.random.Generator):
    """Training pairs and labels of one comparison (digits 1 … 9)."""
    _, truth = COMPARISONS[name]
    if name in ("eq", "ne"):
        pairs = []
        for i in range(1, 10):
            other = rng.choice([j for j in range(1, 11) if j != i])
            pairs += [(i, other), (i, i)]
        x = np.array(pairs, "float64")
    else:
        x = np.array([(i, j) for i in range(1, 10) for j in range(1, 10)], "float64")
    return x, truth(x[:, 0], x[:, 1]).astype("float64")[:, None]


def comparison_test(name: str, k: int, rng: np.random.Generator):
    """The test pairs at 10ᵏ: (a, a + i) and (a + i, a), |i| ≤ 5, around one a;
    = and ≠: (a, a + i) and (a + i, a + i), i ≠ 0."""
    _, truth = COMPARISONS[name]
    a = float(rng.integers(10**k, 10 ** (k + 1)))
    pairs = []
    for i in range(-5, 6):
        if name in ("eq", "ne"):
            if i:
                pairs += [(a, a + i), (a + i, a + i)]
        else:
            pairs += [(a, a + i)] + ([(a + i, a)] if i else [])
    x = np.array(pairs, "float64")
    return x, truth(x[:, 0], x[:, 1]).astype("float64")[:, None]


def piecewise_targets(name: str, x: np.ndarray) -> np.ndarray:
    _, condition = PIECEWISE[name]
    holds = condition(x[:, 0], x[:, 1])
    return np.where(holds, x[:, 4] + 4.0, x[:, 3] - x[:, 2])[:, None]


def piecewise_data(name: str, rng: np.random.Generator):
    """4,000 training points: x₀, x₁ over −10 … 9 (`feq`: x₁ = x₀ for half)."""
    rows = []
    if name == "f":
        for _ in range(10):
            for x0 in range(-10, 10):
                for x1 in range(-10, 10):
                    rows.append((x0, x1, *rng.integers(-100, 101, 3)))
    else:
        for _ in range(100):
            for x0 in range(-10, 10):
                other = rng.choice([j for j in range(-10, 10) if j != x0])
                rows.append((x0, other, *rng.integers(-100, 101, 3)))
                rows.append((x0, x0, *rng.integers(-100, 101, 3)))
    x = np.array(rows, "float64")
    return x, piecewise_targets(name, x)


def piecewise_test(name: str, i: int, rng: np.random.Generator):
    """The test points at 2ⁱ: x₀ from [2ⁱ, 2ⁱ⁺¹), x₁ = x₀ + j, |j| ≤ 5."""
    x0 = float(rng.integers(2**i, 2 ** (i + 1)))
    rows = []
    for j in range(-5, 6):
        rows.append((x0, x0 + j, *rng.integers(-100, 101, 3)))
        if name == "feq":
            rows.append((x0 + j, x0 + j, *rng.integers(-100, 101, 3)))
    x = np.array(rows, "float64")
    return x, piecewise_targets(name, x)


# --- the models -----------------------------------------------------------------


def summed_absolute_error(target, prediction):
    """Σ over the seeds (units) of |y − t|: each seed its own mean error."""
    import keras

    return keras.ops.sum(keras.ops.abs(prediction - target), axis=-1)


def authors_normal(fan_sum: int):
    """PyTorch's Xavier-normal of one unit: N(0, 2 / (fan_in + fan_out))."""
    import keras

    return keras.initializers.RandomNormal(stddev=math.sqrt(2.0 / fan_sum))


def nsr_layer(input_size: int, seeds: int, name: str = "nsr"):
    from keras_nalu.layers import NSR

    return NSR(
        seeds,
        operand_initializer=authors_normal(input_size + 1),
        bit_initializer=authors_normal(2),
        name=name,
    )


def nau_branch(input_size: int, seeds: int, name: str):
    """The authors' NAU_ALU: x·clamp(W, −1, 1) (clamped in the forward pass
    only), mean min(|w|, 1 − |w|) added at full strength after step 4·10⁴; a
    strength of `seeds` gives each seed's kernel its own mean."""
    from keras_nalu import regularizers
    from keras_nalu.layers import NAU

    penalty = regularizers.Sparsity(
        float(seeds), REGULARIZER_START - 1, REGULARIZER_START, domain="signed"
    )
    return NAU(
        seeds,
        kernel_initializer=authors_normal(input_size + 1),
        kernel_regularizer=penalty,
        kernel_constraint="forward_clip",
        name=name,
    )


def build(experiment: str, units: int, seed: int = 0):
    """The model of one group: `units` = tasks × seeds; and its callbacks."""
    import keras

    from keras_nalu.callbacks import RegularizationSchedule
    from keras_nalu.layers import Piecewise

    keras.utils.set_random_seed(seed)
    if experiment == "comparisons":
        inputs = keras.Input((2,))
        outputs = nsr_layer(2, units)(inputs)
        callbacks = []
    else:
        inputs = keras.Input((5,))
        layer = Piecewise(
            nsr_layer(5, units, "condition"),
            nau_branch(5, units, "if_true"),
            nau_branch(5, units, "if_false"),
            name="piecewise",
        )
        outputs = layer(inputs)
        callbacks = [RegularizationSchedule()]
    model = keras.Model(inputs, outputs)
    model.compile(
        keras.optimizers.Adam(1e-3, epsilon=1e-8),
        summed_absolute_error,
        steps_per_execution=EXECUTION,
    )
    return model, callbacks


def train(model, callbacks, x, t, steps: int) -> float:
    """Full-batch steps on (x, t); the seconds they took."""
    import tensorflow as tf

    batches = tf.data.Dataset.from_tensors((x, t)).repeat()
    started = time.perf_counter()
    model.fit(batches, steps_per_epoch=steps, epochs=1, callbacks=callbacks, verbose=0)
    return time.perf_counter() - started


def evaluate(model, tests, units: slice) -> list[dict]:
    """Per seed (unit) and magnitude: mean |y − t|, and whether every point is
    within ½ of its target."""
    rows = []
    for magnitude, (x, t) in tests:
        prediction = model.predict(x, batch_size=len(x), verbose=0)[:, units]
        error = np.abs(prediction - t)
        for seed in range(error.shape[1]):
            rows.append(
                {
                    "seed": seed,
                    "magnitude": magnitude,
                    "mae": float(error[:, seed].mean()),
                    "solved": bool(np.all(error[:, seed] < 0.5)),
                }
            )
    return rows


def _data(experiment: str, name: str, rng: np.random.Generator):
    if experiment == "comparisons":
        return comparison_data(name, rng)
    return piecewise_data(name, rng)


def _tests(experiment: str, name: str, rng: np.random.Generator):
    if experiment == "comparisons":
        return [(10**k, comparison_test(name, k, rng)) for k in range(1, 15)]
    return [(2**i, piecewise_test(name, i, rng)) for i in range(3, 15)]


def run(experiment: str, names: tuple, steps: int) -> pd.DataFrame:
    """Trains the tasks `names` (the same training inputs) together, `SEEDS`
    units each, and judges each task's units on its own test points."""
    x, _ = _data(experiment, names[0], np.random.default_rng(0))
    targets = [_data(experiment, name, np.random.default_rng(0))[1] for name in names]
    t = np.concatenate([np.repeat(target, SEEDS, axis=1) for target in targets], 1)
    model, callbacks = build(experiment, len(names) * SEEDS)
    seconds = train(model, callbacks, x, t, steps)
    prediction = model.predict(x, batch_size=len(x), verbose=0)
    frames = []
    for position, name in enumerate(names):
        units = slice(position * SEEDS, (position + 1) * SEEDS)
        train_error = np.abs(prediction[:, units] - targets[position])
        tests = _tests(experiment, name, np.random.default_rng(1 + position))
        rows = pd.DataFrame(evaluate(model, tests, units))
        rows.insert(0, "task", name)
        rows["steps"] = steps
        rows["train_mae"] = [float(train_error[:, s].mean()) for s in rows["seed"]]
        rows["wall_time"] = seconds
        frames.append(rows)
    return pd.concat(frames, ignore_index=True)


# --- the summary ----------------------------------------------------------------


def _rate(successes: int, trials: int) -> str:
    rate, lower, upper = success_rate_interval(successes, trials)
    interval = f"[{100 * lower:.0f}, {100 * upper:.0f}]"
    return f"{successes}/{trials}: {100 * rate:.0f} % {interval}"


def _exponent(magnitude: int, base: int) -> str:
    digits = str(round(math.log(magnitude, base)))
    return f"{base}^{digits}"


def solved_table(rows: pd.DataFrame, names: dict, base: int, table_up_to: int) -> str:
    """Per task: the seeds that solve every magnitude up to `table_up_to`, and
    up to the largest tested, with Wilson intervals."""
    lines = [
        f"| task | seeds | solved up to {_exponent(table_up_to, base)} "
        f"| solved up to {_exponent(int(rows['magnitude'].max()), base)} "
        "| training MAE (mean) | steps | wall time |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, (text, _) in names.items():
        runs = rows[rows["task"] == name]
        if runs.empty:
            continue
        seeds = runs["seed"].nunique()
        early = runs[runs["magnitude"] <= table_up_to].groupby("seed")["solved"].all()
        every = runs.groupby("seed")["solved"].all()
        lines.append(
            f"| {text} | {seeds} | {_rate(int(early.sum()), seeds)} "
            f"| {_rate(int(every.sum()), seeds)} "
            f"| {runs.groupby('seed')['train_mae'].first().mean():.3g} "
            f"| {int(runs['steps'].iloc[0]):,} | {runs['wall_time'].iloc[0]:,.0f} s |"
        )
    return "\n".join(lines)


def error_table(rows: pd.DataFrame, names: dict, magnitudes, base: int) -> str:
    """Mean absolute error ± its standard deviation over seeds, by magnitude."""
    header = " | ".join(_exponent(m, base) for m in magnitudes)
    lines = [f"| task | {header} |", "|---|" + "---|" * len(magnitudes)]
    for name, (text, _) in names.items():
        runs = rows[rows["task"] == name]
        if runs.empty:
            continue
        cells = []
        for magnitude in magnitudes:
            errors = runs[runs["magnitude"] == magnitude]["mae"]
            cells.append(f"{errors.mean():.2f} ± {errors.std(ddof=0):.2f}")
        lines.append(f"| {text} | {' | '.join(cells)} |")
    return "\n".join(lines)


NOTES = (
    "The paper's own numbers are not beside ours: its text could not be read "
    "for this package (only its abstract), and its tables are not in the "
    "authors' repository. From the authors' scripts: their comparison table "
    "prints the mean absolute error ± its standard deviation over 10 seeds at "
    "10¹ … 10⁷ (`parse_comparisons.py`), no count of seeds that solve a "
    "magnitude; the counts here are ours. Differences from the scripts: the "
    "released `comparisons.py` labels a pair op(10⁴·x₀, x₁), under which every "
    "training and test label of > is 1; we label op(x₀, x₁), the comparison "
    "the paper names. Its NSR forces redundancy 1 whatever the flag; so do we. "
    "The seeds share one draw of the training and test inputs (the scripts "
    "draw them per seed), and tasks with the same training inputs train in one "
    "model (>, <, ≥, ≤ together, = with ≠), each seed a unit of its own. "
    "Magnitudes stop at 10¹⁴ (the scripts go to 10¹⁸), where float64 still "
    "holds a ± 5 exactly. The piecewise functions train 10⁵ steps where the "
    "authors' script trains 5·10⁵ (a 2-core CPU); the `steps` column says."
)


def summary_text(out: Path) -> str | None:
    """The tables of the results files in `out`, or None without any."""
    parts = []
    path = out / "comparisons.csv"
    if path.exists():
        rows = pd.read_csv(path)
        parts += [
            "Comparisons, trained on digits (seeds solving every magnitude):\n",
            section("comparisons", solved_table(rows, COMPARISONS, 10, 10**7)),
            "Mean absolute error ± standard deviation over seeds (the authors' "
            "table's measure):\n",
            section(
                "comparisons-error",
                error_table(rows, COMPARISONS, [10, 10**3, 10**5, 10**7, 10**14], 10),
            ),
        ]
    path = out / "piecewise.csv"
    if path.exists():
        rows = pd.read_csv(path)
        parts += [
            "Piecewise functions, NSR → two NAUs (seeds solving every magnitude):\n",
            section("piecewise", solved_table(rows, PIECEWISE, 2, 2**9)),
            "Mean absolute error ± standard deviation over seeds:\n",
            section(
                "piecewise-error",
                error_table(rows, PIECEWISE, [2**3, 2**6, 2**9, 2**14], 2),
            ),
        ]
    if not parts:
        return None
    parts.append(section("notes", NOTES))
    return "\n".join(parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", default="comparisons,piecewise")
    parser.add_argument("--steps", type=int, help="steps instead of the papers'")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--summarize", action="store_true", help="no training")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    experiments = [name.strip() for name in args.experiments.split(",")]
    unknown = set(experiments) - {"comparisons", "piecewise"}
    if unknown:
        raise SystemExit(f"nsr.py: unknown experiments {sorted(unknown)}")
    if not args.summarize:
        import keras

        if keras.backend.backend() != "tensorflow":
            raise SystemExit(
                "nsr.py trains in float64: run with KERAS_BACKEND=tensorflow"
            )
        keras.config.set_floatx("float64")
        for experiment in experiments:
            default = (
                COMPARISON_STEPS if experiment == "comparisons" else PIECEWISE_STEPS
            )
            path = out / f"{experiment}.csv"
            done = pd.read_csv(path) if path.exists() else pd.DataFrame({"task": []})
            for names in GROUPS[experiment]:
                if set(names) <= set(done["task"]):
                    continue
                rows = run(experiment, names, args.steps or default)
                done = pd.concat([done, rows], ignore_index=True)
                with atomic_write(path, encoding="utf-8", newline="") as handle:
                    done.to_csv(handle, index=False)
                print(f"{experiment} {names}: {rows['wall_time'].iloc[0]:.0f} s")
    text = summary_text(out)
    if text is None:
        print(f"No results in {out}", file=sys.stderr)
        return 1
    with atomic_write(out / "summary.md", encoding="utf-8") as handle:
        handle.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
