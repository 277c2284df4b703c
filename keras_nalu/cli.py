"""`keras-nalu`: one entry point, thin sub-commands over the package."""

import argparse
import dataclasses
import json
import sys
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line, without the usage dump."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _add_config_flags(parser, config_cls, skip=()):
    """One flag per dataclass field, typed by its default."""
    for field in dataclasses.fields(config_cls):
        if field.name in skip:
            continue
        default = field.default
        if isinstance(default, bool):
            parser.add_argument(_flag(field.name), action="store_true", default=default)
            continue
        kind = type(default) if default is not None else _none_type(field)
        parser.add_argument(
            _flag(field.name),
            type=kind,
            default=default,
            metavar=field.name.upper(),
            help=f"default: {default}",
        )


def _none_type(field):
    annotation = str(field.type)
    return int if "int" in annotation else float


def _train(args) -> int:
    from keras_nalu.experiment import ExperimentConfig, run_experiment
    from keras_nalu.export import export_saved_model, save_keras_model, write_record

    fields = {f.name for f in dataclasses.fields(ExperimentConfig)}
    config = ExperimentConfig(**{k: v for k, v in vars(args).items() if k in fields})
    name = args.name or config.name
    model, record = run_experiment(config, verbose=not args.quiet)
    record.update(_explain_record(model, config))
    run_dir = Path(args.output_dir) / name
    record["keras_model"] = str(save_keras_model(model, run_dir / "model.keras"))
    if not args.no_export:
        path = export_saved_model(
            model,
            args.export_dir,
            name,
            manifest={
                "task": record["task"],
                "config": record["config"],
                "result": _result_fields(record),
            },
        )
        record["saved_model"] = str(path)
    write_record(record, run_dir / "result.json")
    print(json.dumps(record, indent=2, default=str))
    print(_verdict_line(record), file=sys.stderr)
    return 0


def _explain_record(model, config) -> dict:
    try:
        from keras_nalu.explain import compare_with_task, explain
    except ImportError:
        return {}
    try:
        explanation = explain(model)
        comparison = compare_with_task(explanation, config.task())
    except (ValueError, ImportError) as error:
        return {"formula": None, "formula_error": str(error)}
    return {"formula": str(explanation), "formula_verdict": comparison.verdict}


def _result_fields(record: dict) -> dict:
    keys = (
        "success",
        "solved_at",
        "best_step",
        "interpolation_mse",
        "extrapolation_mse",
        "threshold",
        "sparsity_error",
        "final_step",
        "final_interpolation_mse",
        "final_extrapolation_mse",
        "final_sparsity_error",
        "solved_at_end",
        "iterations",
        "diverged",
        "formula",
        "formula_verdict",
    )
    return {key: record.get(key) for key in keys}


def _verdict_line(record: dict) -> str:
    if record["diverged"]:
        verdict = "DIVERGED"
    elif record["success"]:
        verdict = f"SOLVED (first at step {record['solved_at']})"
    else:
        verdict = "NOT SOLVED"
    return (
        f"{record['name']}: {verdict}; extrapolation MSE "
        f"{record['extrapolation_mse']:.3g} vs threshold {record['threshold']:.3g} "
        f"at step {record['best_step']} (final weights: "
        f"{record['final_extrapolation_mse']:.3g}); {record['iterations']} steps "
        f"in {record['wall_time']:.0f} s"
    )


def _explain(args) -> int:
    import keras

    import keras_nalu  # noqa: F401  registers the units for loading
    from keras_nalu.explain import explain

    if not Path(args.model).exists():
        raise ValueError(f"no such model file: {args.model}")
    model = keras.saving.load_model(args.model, compile=False)
    print(explain(model, tolerance=args.tolerance))
    return 0


def _summarize(args) -> int:
    from keras_nalu.sweeps.summary import (
        load_results,
        summarize,
        to_markdown,
        write_summary,
    )

    by = tuple(args.by.split(","))
    paths = write_summary(args.results, args.out or Path(args.results).parent, by=by)
    print(to_markdown(summarize(load_results(args.results), by=by)))
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}", file=sys.stderr)
    return 0


def _plot(args) -> int:
    from keras_nalu.sweeps.plots import plot_results
    from keras_nalu.sweeps.summary import load_results

    out = args.out or str(Path(args.results).with_suffix(f".{args.x}.png"))
    path = plot_results(
        load_results(args.results), x=args.x, out_path=out, operation=args.operation
    )
    print(path)
    return 0


def _sweep(args) -> int:
    from keras_nalu.sweeps.runner import (
        load_grid_file,
        parse_grid,
        run_sweep,
        summary_markdown,
    )

    grid = load_grid_file(args.grid_file) if args.grid_file else {}
    grid.update(parse_grid(args.grid or []))
    outcome = run_sweep(
        grid,
        args.seeds,
        args.results,
        chunk_size=args.chunk_size,
        ray_address=args.ray_address,
        progress=not args.quiet,
        backup_every=None if args.no_backup else args.backup_every,
    )
    print(summary_markdown(outcome))
    print(
        f"results: {outcome.path} ({len(outcome.results)} rows of this sweep: "
        f"{outcome.new_rows} new, {outcome.skipped} already there)",
        file=sys.stderr,
    )
    return 0


def _progress(args) -> int:
    import pandas as pd

    from keras_nalu.sweeps.replicas import read_backup

    target = Path(args.results)
    if target.suffix == ".npz":
        files = [target]
    else:
        folder = target.with_name(target.name + ".backup")
        files = sorted(folder.glob("*.npz"))
        if not files:
            raise FileNotFoundError(
                f"no chunk of {target} is in training: {folder}/ holds no backup "
                "(a sweep writes one every --backup-every seconds)."
            )
    columns = ["seed", "success", "solved_at", "best_step", "interpolation_mse"]
    columns += ["extrapolation_mse", "sparsity_error", "diverged"]
    for path in files:
        records = read_backup(path)
        first = records[0]
        solved = sum(bool(r["success"]) for r in records)
        print(
            f"{path.name}: {first['model']} {first['operation']}, "
            f"step {first['step']:,} of {first['iterations']:,}: {solved} of "
            f"{len(records)} seeds solved so far (threshold {first['threshold']:.3g})"
        )
        if not args.brief:
            table = pd.DataFrame(records, columns=columns)
            for column in ("solved_at", "best_step"):
                table[column] = table[column].astype("Int64")
            print(table.to_string(index=False, float_format="{:.3g}".format))
    return 0


def _seed_list(text: str) -> list[int]:
    seeds: list[int] = []
    try:
        for part in str(text).split(","):
            first, _, last = part.strip().partition("-")
            seeds.extend(range(int(first), int(last or first) + 1))
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise ValueError(f"Expected seeds like '0-4' or '0,3'. Received: {text!r}")
    return list(dict.fromkeys(seeds))


def _mnist(args) -> int:
    from keras_nalu.export import write_record
    from keras_nalu.mnist import (
        MnistConfig,
        judge,
        mae_table,
        mse_bound,
        plot_success_rate,
        run_mnist,
        success_rates,
    )
    from keras_nalu.tasks.mnist import parse_lengths

    fields = {f.name for f in dataclasses.fields(MnistConfig)}
    common = {k: v for k, v in vars(args).items() if k in fields}
    common["data_dir"] = args.data_dir
    if args.test_lengths is not None:
        common["test_lengths"] = parse_lengths(args.test_lengths)
    seeds = _seed_list(args.seeds)
    if args.baseline_seeds == 1 or args.baseline_seeds < 0:
        raise ValueError(
            "The bound needs --baseline-seeds >= 2 (or 0 for no bound). "
            f"Received: --baseline-seeds {args.baseline_seeds}"
        )
    units = args.units.split(",") if args.units else [None]
    configs = [
        MnistConfig(unit=unit, seed=seed, **common) for unit in units for seed in seeds
    ]
    baselines = [
        MnistConfig(unit="exact", seed=seed, **common)
        for seed in range(args.baseline_seeds)
    ]
    output = Path(args.output_dir)

    def run(config):
        _, record = run_mnist(config, verbose=not args.quiet)
        write_record(record, output / config.name / "result.json")
        return record

    baseline_records = [run(config) for config in baselines]
    bound = mse_bound(baseline_records) if len(baseline_records) >= 2 else {}
    records = [judge(run(config), bound) for config in configs]
    operation = configs[0].operation
    summary = {
        "operation": operation,
        "bound": {str(length): value for length, value in bound.items()},
        "success_rate": {
            unit: {str(n): rate for n, rate in rates.items()}
            for unit, rates in success_rates(records).items()
        },
        "baselines": baseline_records,
        "runs": records,
    }
    write_record(summary, output / f"mnist-{operation}.json")
    if len(seeds) > 1:
        plot = plot_success_rate(records, output / f"mnist-{operation}.png")
        print(f"wrote plot: {plot}", file=sys.stderr)
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k != "baselines"}
            | {"runs": [_mnist_line(r) for r in records]},
            indent=2,
        )
    )
    if operation == "sum":
        print(mae_table(records))
    return 0


def _mnist_line(record: dict) -> dict:
    keys = (
        "name",
        "best_step",
        "validation_mse",
        "test_lengths",
        "test_mse",
        "test_mae",
        "digit_accuracy",
        "bound",
        "success",
        "kernel",
        "wall_time",
    )
    return {key: record.get(key) for key in keys}


def build_parser() -> argparse.ArgumentParser:
    from keras_nalu.experiment import ExperimentConfig

    parser = _Parser(
        prog="keras-nalu",
        description="Neural arithmetic units: train, judge, explain, summarize.",
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser
    )

    train = commands.add_parser(
        "train",
        help="train one preset on the arithmetic task, judge it, export it",
        description="Train a preset on Madsen & Johansen's (2020) arithmetic "
        "task; print the result record; save the .keras model and a TF Serving "
        "SavedModel.",
    )
    _add_config_flags(train, ExperimentConfig)
    train.add_argument("--name", default=None, help="run name (default MODEL-OP-seedN)")
    train.add_argument(
        "--output-dir", default="runs", help="result.json and model.keras"
    )
    train.add_argument("--export-dir", default="saved_models", help="SavedModel base")
    train.add_argument("--no-export", action="store_true", help="skip the SavedModel")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(handler=_train)

    explain = commands.add_parser("explain", help="print the formula a model computes")
    explain.add_argument("model", help="a .keras file")
    explain.add_argument("--tolerance", type=float, default=0.01)
    explain.set_defaults(handler=_explain)

    summarize = commands.add_parser("summarize", help="paper-style table of results")
    summarize.add_argument("results", help="a results CSV")
    summarize.add_argument("--by", default="operation,model")
    summarize.add_argument("--out", default=None, help="folder for md/tex/csv")
    summarize.set_defaults(handler=_summarize)

    plot = commands.add_parser(
        "plot", help="the panels of Madsen & Johansen's (2020) Fig. 3 against --x"
    )
    plot.add_argument("results", help="a results CSV")
    plot.add_argument("--x", required=True, help="the swept column, e.g. hidden_size")
    plot.add_argument("--operation", default=None)
    plot.add_argument("--out", default=None, help="PNG path")
    plot.set_defaults(handler=_plot)

    sweep = commands.add_parser(
        "sweep",
        help="train a grid of configs × seeds into a resumable results CSV",
        description="Train every (config, seed) of a grid as vectorized "
        "replicas, chunk by chunk, appending to a results CSV that a rerun "
        "resumes; print the paper-style summary. Grid: --grid KEY=V1,V2 per "
        "ExperimentConfig field (a single value fixes it), --grid "
        "K1:K2=A1:B1,A2:B2 for fields that change together, or --grid-file "
        "with the same as JSON.",
    )
    sweep.add_argument("--grid", action="append", metavar="KEY=V1,V2")
    sweep.add_argument("--grid-file", default=None, help="JSON {field: [values]}")
    sweep.add_argument("--seeds", default="0-9", help="e.g. 0-99 or 0,3,7-9")
    sweep.add_argument("--chunk-size", type=int, default=100, help="seeds per run")
    sweep.add_argument("--results", default="results/sweep.csv", help="results CSV")
    sweep.add_argument(
        "--ray-address", default=None, help="local, auto or a Ray address"
    )
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.add_argument(
        "--backup-every",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="back up the chunk in training this often to RESULTS.backup/; a "
        "rerun continues it (default: 600)",
    )
    sweep.add_argument("--no-backup", action="store_true", help="never back up a chunk")
    sweep.set_defaults(handler=_sweep)

    progress = commands.add_parser(
        "progress",
        help="how far the chunks of a running (or killed) sweep have got",
        description="Read the backups a sweep writes beside RESULTS (in "
        "RESULTS.backup/) and print each chunk's step and each seed's verdict "
        "so far, without disturbing the sweep.",
    )
    progress.add_argument("results", help="a sweep's results CSV, or one backup .npz")
    progress.add_argument("--brief", action="store_true", help="one line per chunk")
    progress.set_defaults(handler=_progress)

    from keras_nalu.mnist import MnistConfig

    mnist = commands.add_parser(
        "mnist",
        help="sequential MNIST sum / product / count with the exact-unit bound",
        description="Train recurrent arithmetic units on sequences of MNIST "
        "digits (Madsen & Johansen 2020, §4.2, App. D; Trask et al. 2018, §4.2); "
        "judge each length "
        "against the MSE bound of the exact-unit baseline.",
    )
    _add_config_flags(
        mnist, MnistConfig, skip=("unit", "seed", "test_lengths", "data_dir")
    )
    mnist.add_argument("--units", default=None, help="comma list, e.g. nmu,nac")
    mnist.add_argument("--seeds", default="0", help="e.g. 0-4 or 0,3")
    mnist.add_argument(
        "--baseline-seeds",
        type=int,
        default=3,
        help="exact-unit runs that set the bound (>= 2; 0: no bound)",
    )
    mnist.add_argument(
        "--test-lengths", default=None, help="e.g. 1-20 or 1,10,100,1000"
    )
    mnist.add_argument("--data-dir", default=None, help="prepared tfds folder")
    mnist.add_argument("--output-dir", default="runs", help="records and plot")
    mnist.add_argument("--quiet", action="store_true", help="no progress bar")
    mnist.set_defaults(handler=_mnist)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, FileExistsError, FileNotFoundError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"keras-nalu {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("keras-nalu: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
