"""Madsen & Johansen's (2020) Figure 3 on ×: success by hidden size and input range.

    python benchmarks/fig3.py hidden_size        # every model, hidden size 2–10
    python benchmarks/fig3.py range              # every model, the seven ranges
    python benchmarks/fig3.py hidden_size --models nmu --values 10 \\
        --iterations 2000000 --seeds 0-9
    python benchmarks/fig3.py range --summarize  # only the table and the PNG
    python benchmarks/fig3.py range --iterations 50000,2000000 --summarize
    python benchmarks/fig3.py hidden_size --models nmu --values 4 --epsilon keras,1e-8

Each (model, value) point is one configuration of the default × task with
that hidden size, or that interpolation → extrapolation range pair (written
`INTERPOLATION>EXTRAPOLATION` in `--values`), trained `--iterations` steps as
vectorized replicas through `run_sweep`: the same results file and resume
rules as `keras-nalu sweep`. Points that the `--reuse` files (`REUSE`:
`benchmarks/results/table2/`, `table6/`, `fig3-full/` and `paper/`) already
hold for every requested seed (hidden size 2 on U[1,2] → U[2,6] is the
default task) are taken from there, not trained again.

Writes `benchmarks/results/fig3/results.csv`, and per panel `<panel>.md`
(success with a Wilson 95 % interval, solved-at, sparsity error) and
`<panel>.png` (the figure's three panels, drawn by `keras-nalu plot`). A
point trained on two engines is two rows (the `engine` column; a line each
in the PNG, which names the engine), never pooled: rows without an engine
were trained on TensorFlow.
"""

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TF's start-up lines
sys.path.insert(0, str(Path(__file__).resolve().parent))

from paper import OUT as PAPER_OUT  # noqa: E402
from paper import RESULTS  # noqa: E402
from published import FIG_3_MODELS, FIG_3_RANGES, power  # noqa: E402
from table2 import OUT as TABLE_2_OUT  # noqa: E402
from table6 import OUT as TABLE_6_OUT  # noqa: E402

from keras_nalu.reports.plots import plot_results  # noqa: E402
from keras_nalu.reports.summary import load_results, summarize  # noqa: E402
from keras_nalu.sweeps.grid import grid_configs, parse_seeds  # noqa: E402
from keras_nalu.sweeps.results import config_id  # noqa: E402
from keras_nalu.sweeps.runner import run_sweep  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "fig3"
REUSE = tuple(
    folder / "results.csv"
    for folder in (TABLE_2_OUT, TABLE_6_OUT, RESULTS / "fig3-full", PAPER_OUT)
)
"""The results files whose points are not trained again (`--reuse`)."""
RUN = ["config_id", "engine", "seed"]
MODELS = ",".join(FIG_3_MODELS)
# Madsen & Johansen (2020), Fig. 3 and Appendix C.4: interpolation > extrapolation
RANGES = ";".join(f"{a}>{b}" for a, b in FIG_3_RANGES)
PANELS = {
    # panel: (grid key, default values, separator, results column on the x-axis)
    "hidden_size": ("hidden_size", "2,4,6,8,10", ",", "hidden_size"),
    "range": (
        "interpolation_range:extrapolation_range",
        RANGES,
        ";",
        "interpolation_range",
    ),
}


def panel_grid(args: argparse.Namespace) -> dict:
    """The sweep grid of one panel: models × swept values on ×."""
    key, _, separator, _ = PANELS[args.panel]
    values = [value.strip() for value in args.values.split(separator)]
    if args.panel == "range":
        values = [tuple(value.split(">")) for value in values]
    else:
        values = [int(value) for value in values]
    return {
        "model": args.models.split(","),
        "operation": ["mul"],
        "iterations": [int(steps) for steps in args.iterations.split(",")],
        key: values,
        "epsilon": [
            None if value == "keras" else float(value)
            for value in args.epsilon.split(",")
        ],
    }


def reusable_rows(ids: set[str], seeds: list[int], reuse: list[Path]) -> pd.DataFrame:
    """Rows of the `reuse` files for the configurations `ids`: every seed an
    engine holds of a configuration, where it holds each of `seeds`."""
    tables = [with_engine(load_results(path)) for path in reuse if path.exists()]
    if not tables:
        return pd.DataFrame(columns=RUN)
    table = pd.concat(tables, ignore_index=True).drop_duplicates(RUN)
    table = table[table["config_id"].isin(ids)]
    point = ["config_id", "engine"]
    held = table[table["seed"].isin(seeds)].groupby(point)["seed"].nunique()
    complete = held[held == len(seeds)].index
    return table[table.set_index(point).index.isin(complete)]


def with_engine(results: pd.DataFrame) -> pd.DataFrame:
    """`results` with every row's engine: rows without one ran on TensorFlow."""
    engine = results.get("engine", pd.Series(index=results.index, dtype=object))
    return results.assign(engine=engine.fillna("tensorflow"))


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("panel", choices=sorted(PANELS))
    options.add_argument("--models", default=MODELS, help="presets, comma-separated")
    options.add_argument("--values", help="hidden sizes '2,4' or ranges 'A>B;C>D'")
    options.add_argument(
        "--iterations", default="2000000", help="steps; '50000,2000000' for both"
    )
    options.add_argument("--seeds", default="0-19")
    options.add_argument("--chunk-size", type=int, default=20)
    options.add_argument("--out", default=str(OUT))
    options.add_argument(
        "--reuse",
        default=",".join(str(path) for path in REUSE),
        help="results files whose points are not trained again, comma-separated",
    )
    options.add_argument(
        "--epsilon",
        default="keras",
        help="Adam's ε: 'keras' (its 1e-7), a number (the reference PyTorch "
        "code's is 1e-8), or both: 'keras,1e-8'",
    )
    options.add_argument("--summarize", action="store_true", help="no training")
    args = options.parse_args(argv)
    key, default_values, _, x = PANELS[args.panel]
    args.values = args.values or default_values

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.csv"
    grid = panel_grid(args)
    seeds = parse_seeds(args.seeds)
    configs = {config_id(config): config for config in grid_configs(grid)}
    reuse = [Path(path) for path in args.reuse.split(",")]
    reused = reusable_rows(set(configs), seeds, reuse)
    if not args.summarize:
        for identifier, config in configs.items():
            if identifier in set(reused["config_id"]):
                continue  # reused points are not trained again
            point = config.to_config()
            fields = ("model", "operation", "iterations", "epsilon", *key.split(":"))
            run_sweep(
                {field: [point[field]] for field in fields if point[field] is not None},
                seeds,
                results_path,
                chunk_size=args.chunk_size,
            )
    trained = load_results(results_path) if results_path.exists() else pd.DataFrame()
    if len(trained):
        trained = with_engine(trained[trained["config_id"].isin(configs)])
    results = pd.concat([trained, reused], ignore_index=True)
    if results.empty:
        raise SystemExit(f"fig3: no results for this panel in {results_path}")
    results = results.drop_duplicates(RUN)  # the same run in a reused file
    by = ["model", x, "max_iterations", "engine"]
    if "epsilon" in results and results["epsilon"].notna().any():
        # rows at Keras' default ε read as empty: name it, as a group of its own
        results["epsilon"] = results["epsilon"].fillna(1e-7)
        by.append("epsilon")
    table = summarize(results, by=by)
    text = table.to_string(index=False, float_format=lambda v: f"{v:.3g}")
    (out / f"{args.panel}.md").write_text(text + "\n", encoding="utf-8")
    hue = "model"
    if results["max_iterations"].nunique() > 1:  # one line per model and budget
        steps = results["max_iterations"].map(power)
        results = results.assign(series=results["model"] + " " + steps)
        hue = "series"
    if "epsilon" in by:
        series = results[hue] + results["epsilon"].map(lambda e: f", ε {e:.0e}")
        results = results.assign(series=series)
        hue = "series"
    # the lines: `hue` (model, budget, ε) and the engine, nothing else
    drawn = results[[hue, x, "engine", "success", "solved_at", "sparsity_error"]]
    png = plot_results(drawn, x=x, out_path=out / f"{args.panel}.png", hue=hue)
    print(text)
    print(f"wrote {out / f'{args.panel}.md'} and {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
