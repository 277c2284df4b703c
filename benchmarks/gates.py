"""Where the gates go: Madsen & Johansen's (2020) gating experiment, App. C.5.

Their Fig. 9 and Table 5.

    python benchmarks/gates.py                      # 3 presets × {×, +}, 20 seeds
    python benchmarks/gates.py --plot-only          # redraw from the CSV

Trains the `gated_nau_nmu` (NAU → gated NAU/NMU), `nalu_separate` and
`nalu_shared` (NAC → NALU) presets on the default arithmetic task for `×` and
`+`, `--seeds` seeds each as vectorized replicas (`ReplicaRun`), then reads
each seed's output-layer gate: g = σ(xG), averaged over the 10⁴ validation inputs
(g = 1 selects the additive unit, g = 0 the multiplicative one). Writes one
row per (preset, operation, seed) with the gate and the run's success to
`benchmarks/results/gates/gates.csv`, and Fig. 9's histogram (one panel per
preset, rows per operation, colour by solved) to `gates.png`.

The paper trains 5·10⁶ steps; this uses `--iterations` (default 5·10⁴) with
each preset's sparsity schedule scaled to fit (`--sparsity-start/-end`),
which the table states. The gate decides early, so the histogram's shape is
what the claim is about: the gate's choice is close to random and does not
follow the task.
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up lines

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from keras_nalu.experiments import ExperimentConfig  # noqa: E402
from keras_nalu.sweeps.engines import replica_run  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "gates"
PRESETS = ("gated_nau_nmu", "nalu_separate", "nalu_shared")
OPERATIONS = ("mul", "add")
SYMBOL = {"mul": "×", "add": "+"}


def output_gate(model, x) -> float:
    """Mean gate value of the model's last gated layer over the inputs `x`."""
    gated = [layer for layer in model.layers if hasattr(layer, "gate_values")]
    if not gated:
        raise ValueError(f"model {model.name!r} has no gated layer")
    # The gate is input dependent: feed it what that layer sees.
    features = keras.Model(model.inputs, gated[-1].input)
    hidden = features(x, training=False)
    return float(np.mean(gated[-1].gate_values(hidden)))


def train_gates(preset, operation, seeds, args) -> list[dict]:
    config = ExperimentConfig(
        model=preset,
        operation=operation,
        iterations=args.iterations,
        sparsity_start=args.sparsity_start,
        sparsity_end=args.sparsity_end,
    )
    run = replica_run(config, seeds)
    run.train(progress=True)
    x = run._validation[0]
    rows = []
    for r, record in enumerate(run.results()):
        rows.append(
            {
                "model": preset,
                "operation": operation,
                "seed": seeds[r],
                "gate": output_gate(run.model_for(r), x),
                "success": record["success"],
                "solved_at": record["solved_at"],
                "extrapolation_mse": record["extrapolation_mse"],
                "max_iterations": args.iterations,
                "sparsity_start": args.sparsity_start,
                "sparsity_end": args.sparsity_end,
                "wall_time": run.wall_time,
            }
        )
    return rows


def histogram(table: pd.DataFrame, path: Path) -> None:
    """Fig. 9: gate histograms, one column per preset, one row per operation."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    presets = list(dict.fromkeys(table["model"]))
    operations = list(dict.fromkeys(table["operation"]))
    figure = Figure(figsize=(3.2 * len(presets), 2.4 * len(operations)))
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(operations), len(presets), squeeze=False)
    bins = np.linspace(0, 1, 21)
    for i, operation in enumerate(operations):
        for j, preset in enumerate(presets):
            ax = axes[i, j]
            rows = table[(table["model"] == preset) & (table["operation"] == operation)]
            solved = rows["success"].astype(bool)
            ax.hist(
                [rows.loc[~solved, "gate"], rows.loc[solved, "gate"]],
                bins=bins,
                stacked=True,
                label=["not solved", "solved"],
                color=["#bbbbbb", "#1f77b4"],
            )
            ax.set_title(f"{preset}, {SYMBOL.get(operation, operation)}", fontsize=9)
            ax.set_xlim(0, 1)
            ax.set_xticks([0, 0.5, 1], ["0 (mul)", "0.5", "1 (add)"], fontsize=8)
            if j == 0:
                ax.set_ylabel("seeds")
    axes[0, -1].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def summary_text(table: pd.DataFrame) -> str:
    """Per (preset, op): seeds, solved, and how many gates chose add / mul."""
    lines = [
        "| op | preset | seeds | solved | gate > 0.9 (add) | gate < 0.1 (mul) "
        "| between |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for (operation, preset), rows in table.groupby(["operation", "model"], sort=False):
        gate = rows["gate"]
        lines.append(
            f"| {SYMBOL.get(operation, operation)} | {preset} | {len(rows)} | "
            f"{int(rows['success'].astype(bool).sum())} | {int((gate > 0.9).sum())} "
            f"| {int((gate < 0.1).sum())} | "
            f"{int(((gate >= 0.1) & (gate <= 0.9)).sum())} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--operations", default=",".join(OPERATIONS))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=50_000)
    parser.add_argument("--sparsity-start", type=int, default=10_000)
    parser.add_argument("--sparsity-end", type=int, default=30_000)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--plot-only", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "gates.csv"
    if not args.plot_only:
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")  # each run traces its own loop
        started = time.perf_counter()
        rows = []
        for preset in args.presets.split(","):
            for operation in args.operations.split(","):
                rows += train_gates(preset, operation, list(range(args.seeds)), args)
                pd.DataFrame(rows).to_csv(csv, index=False)
        print(f"wall time: {time.perf_counter() - started:.0f} s")
    table = pd.read_csv(csv)
    histogram(table, out / "gates.png")
    text = summary_text(table)
    (out / "summary.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"histogram: {out / 'gates.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
