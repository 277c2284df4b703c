"""Why NMU and sNMU runs stop at step 2 on U[10, 20] with 10 inputs: Adam in float32.

    KERAS_BACKEND=jax python benchmarks/overflow.py                 # both ranges
    KERAS_BACKEND=jax python benchmarks/overflow.py --seeds 0-4 --steps 300

The NALM benchmark's × task with 10 inputs (t = x₁·x₂, eight distractors):
the unit (the package's `NMU` layer, plain and with the sNMU's noise U[1, 5])
starts from its initializer's weights and takes `--steps` Adam steps
(learning rate 10⁻³, batch 128, weights clipped to [0, 1] after each step,
the sparsity regularizer still off, as in the first 5·10⁴ steps of the
benchmark). The gradient comes from the layer (JAX); Adam's update is
written out twice, as each library computes its second moment v:

- `keras`: v ← v + (1 − β₂)(g² − v), as Keras 3's `Adam` (this package);
- `torch`: v ← β₂v + (1 − β₂)g², as PyTorch's `Adam` (the authors' code).

Each runs in float32 (both libraries' default, and the authors'
`--pytorch-precision 32`) and in float64. Where g² overflows float32 (above
3.4·10³⁸), v is inf: the Keras form then computes inf − inf = NaN at the
second step, so the weights turn NaN and the run stops at step 2; the
PyTorch form divides by √inf, and the weights never move again. In float64
nothing overflows. Either way the authors' float32 run cannot solve the
task: counted as a failure, as ours.

Writes `benchmarks/results/nalm/overflow.csv`, one row per (unit, range,
dtype, Adam form, seed), and prints a summary per (unit, range, dtype, form).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pandas as pd

if __name__ == "__main__":  # the script's backend; an import changes no setting
    os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import keras  # noqa: E402

from keras_nalu.layers import NMU  # noqa: E402
from keras_nalu.sweeps.grid import parse_seeds  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "nalm" / "overflow.csv"
RANGES = {"U[10,20]": (10.0, 20.0), "U[-20,-10]": (-20.0, -10.0)}
UNITS = {"nmu": None, "snmu": (1.0, 5.0)}
INPUTS, BATCH, LEARNING_RATE, BETA_1, BETA_2 = 10, 128, 1e-3, 0.9, 0.999
EPSILON = {"keras": 1e-7, "torch": 1e-8}  # each library's default


def adam(form: str, weights, gradient, m, v, step: int):
    """One Adam step, the second moment as `form` ("keras" or "torch") has it."""
    one = weights.dtype.type(1)
    m = m + (one - BETA_1) * (gradient - m)
    if form == "keras":
        v = v + (one - BETA_2) * (gradient * gradient - v)
    else:
        v = BETA_2 * v + (one - BETA_2) * (gradient * gradient)
    m_hat = m / (one - BETA_1**step)
    v_hat = v / (one - BETA_2**step)
    weights = weights - LEARNING_RATE * m_hat / (np.sqrt(v_hat) + EPSILON[form])
    return np.clip(weights, 0.0, 1.0).astype(weights.dtype), m, v


def initial_weights(seed: int) -> np.ndarray:
    """The NMU initializer's float32 weights of `seed`."""
    keras.utils.set_random_seed(seed)
    layer = NMU(1)
    layer.build((None, INPUTS))
    return np.asarray(layer.kernel.value)


def run(unit, bounds, dtype, form, seed, steps) -> dict:
    """Trains one unit `steps` steps; what its gradient and weights did."""
    layer = NMU(1, noise=UNITS[unit], seed=seed, kernel_regularizer=None, dtype=dtype)
    layer.build((None, INPUTS))
    state = [v.value for v in layer.non_trainable_variables]

    def loss(kernel, state, x, t):
        y, state = layer.stateless_call([kernel], state, x, training=True)
        return keras.ops.mean((y - t) ** 2), state

    gradient_of = jax.jit(jax.value_and_grad(loss, has_aux=True))
    rng = np.random.RandomState(seed)

    def batch(size):  # drawn in float64 as the authors' NumPy, then cast
        x = rng.uniform(*bounds, size=(size, INPUTS))
        return x.astype(dtype), (x[:, :1] * x[:, 1:2]).astype(dtype)

    x_valid, t_valid = batch(10_000)

    def interpolation_mse(kernel):
        y = layer.stateless_call([kernel], state, x_valid, training=False)[0]
        return float(np.mean((np.asarray(y, np.float64) - t_valid) ** 2))

    weights = initial_weights(seed).astype(dtype)  # the same in every variant
    start = weights.copy()
    m, v = np.zeros_like(weights), np.zeros_like(weights)
    first_gradient, overflowed, non_finite_at = None, None, None
    mse_start = interpolation_mse(weights)
    for step in range(1, steps + 1):
        x, t = batch(BATCH)
        (_, state), gradient = gradient_of(weights, state, x, t)
        gradient = np.asarray(gradient)
        if first_gradient is None:
            first_gradient = float(np.max(np.abs(gradient)))
            with np.errstate(over="ignore"):
                overflowed = int(np.sum(~np.isfinite(gradient * gradient)))
        with np.errstate(over="ignore", invalid="ignore"):
            weights, m, v = adam(form, weights, gradient, m, v, step)
        if not np.all(np.isfinite(weights)):
            non_finite_at = step + 1  # the loss at the next step is NaN
            break
    with np.errstate(invalid="ignore"):
        moved = float(np.max(np.abs(weights - start)))
    return {
        "unit": unit,
        "dtype": dtype,
        "adam": form,
        "seed": seed,
        "first_gradient_max": first_gradient,
        "squares_overflowed": overflowed,
        "stopped_at_step": non_finite_at,
        "steps": steps,
        "largest_weight_change": moved,
        "interpolation_mse_start": mse_start,
        "interpolation_mse_end": interpolation_mse(weights),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranges", default=";".join(RANGES), help="';'-separated")
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # float64 beside float32
    names = [name.strip() for name in args.ranges.split(";")]
    unknown = [name for name in names if name not in RANGES]
    if unknown:
        raise SystemExit(
            f"error: unknown --ranges {unknown}; choose from {list(RANGES)}"
        )
    if args.steps < 2:
        raise SystemExit(f"error: --steps must be >= 2. Received: {args.steps}")
    rows = []
    for name in names:
        for unit in UNITS:
            for dtype in ("float32", "float64"):
                for form in ("keras", "torch"):
                    for seed in parse_seeds(args.seeds):
                        row = run(unit, RANGES[name], dtype, form, seed, args.steps)
                        rows.append({"range": name, **row})
    table = pd.DataFrame(rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    summary = table.groupby(["range", "unit", "dtype", "adam"], sort=False).agg(
        seeds=("seed", "size"),
        first_gradient_max=("first_gradient_max", "max"),
        squares_overflowed=("squares_overflowed", "sum"),
        stopped=("stopped_at_step", "count"),
        largest_weight_change=("largest_weight_change", "max"),
    )
    print(summary.to_string(float_format=lambda value: f"{value:.3g}"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
