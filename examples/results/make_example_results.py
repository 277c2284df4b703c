"""Writes `example_results.csv`: a SYNTHETIC results file, not experimental data.

Every number in the file is drawn from NumPy with a fixed seed, shaped to look
like a small hidden-size sweep of Madsen & Johansen's (2020) arithmetic task (models nmu,
nac_mul and nalu on "mul"; nau, nac and linear on "add"; hidden_size 2, 4 and
8; 10 seeds each). It exists only to exercise `keras_nalu.reports.summary` and
`keras_nalu.reports.plots` (tests, docs, examples); never quote it as a result.

Run from anywhere: `python examples/results/make_example_results.py`.
"""

from pathlib import Path

import numpy as np
import pandas as pd

ITERATIONS = 5_000_000
EVAL_EVERY = 1_000
HIDDEN_SIZES = (2, 4, 8)
SEEDS = range(10)
# Success thresholds of the default configuration (Madsen & Johansen 2020, §4.1.1).
THRESHOLDS = {"mul": 0.16001, "add": 1.4786e-5}
# model: (operation, success probability per hidden size, mean solved-at step,
# mean sparsity error of solved seeds), loosely after Madsen & Johansen (2020), Table 2 / Fig. 3.
MODELS = {
    "nmu": ("mul", (0.95, 0.9, 0.8), 1.5e6, 4e-7),
    "nac_mul": ("mul", (0.5, 0.3, 0.1), 2.5e6, 6e-4),
    "nalu": ("mul", (0.2, 0.1, 0.0), 1.6e6, 0.17),
    "nau": ("add", (1.0, 1.0, 1.0), 4e4, 3e-5),
    "nac": ("add", (1.0, 1.0, 0.9), 5e5, 0.23),
    "linear": ("add", (1.0, 0.9, 0.8), 6e4, 0.25),
}


def make_results(seed: int = 2020) -> pd.DataFrame:
    """One row per (model, hidden_size, seed) run, drawn at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, (operation, success_rates, mean_step, mean_error) in MODELS.items():
        threshold = THRESHOLDS[operation]
        for hidden_size, success_rate in zip(HIDDEN_SIZES, success_rates):
            slowdown = 1.0 + 0.25 * np.log2(hidden_size / 2)
            for run_seed in SEEDS:
                success = bool(rng.random() < success_rate)
                if success:
                    step = rng.gamma(2.0, mean_step * slowdown / 2.0)
                    step = EVAL_EVERY * max(1, int(np.ceil(step / EVAL_EVERY)))
                    solved_at = min(step, ITERATIONS)
                    unit_mean = 2.0 * mean_error * slowdown
                    error = 0.5 * rng.beta(2.0, 2.0 * (1.0 - unit_mean) / unit_mean)
                    extrapolation = threshold * 10.0 ** rng.uniform(-6.0, -0.5)
                    interpolation = extrapolation * 10.0 ** rng.uniform(-3.0, -1.0)
                else:
                    solved_at = None
                    error = rng.uniform(0.05, 0.5)
                    extrapolation = threshold * 10.0 ** rng.uniform(0.3, 4.0)
                    interpolation = extrapolation * 10.0 ** rng.uniform(-4.0, -1.0)
                rows.append(
                    {
                        "model": model,
                        "operation": operation,
                        "hidden_size": hidden_size,
                        "interpolation_range": "U[1,2]",
                        "extrapolation_range": "U[2,6]",
                        "seed": run_seed,
                        "success": success,
                        "solved_at": solved_at,
                        "sparsity_error": float(f"{error:.4g}"),
                        "interpolation_mse": float(f"{interpolation:.4g}"),
                        "extrapolation_mse": float(f"{extrapolation:.4g}"),
                        "iterations": ITERATIONS,
                    }
                )
    results = pd.DataFrame(rows)
    results["solved_at"] = results["solved_at"].astype("Int64")
    return results


if __name__ == "__main__":
    path = Path(__file__).with_name("example_results.csv")
    make_results().to_csv(path, index=False)
    print(f"wrote {path}")
