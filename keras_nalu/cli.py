"""`keras-nalu`: one entry point, thin sub-commands over the package.

The flags of a sub-command are declared only when it is named
(`build_parser(flags=...)`), so `keras-nalu --help` and `--version` import
nothing of Keras; each handler is a few lines over the package's functions.
"""

import argparse
import contextlib
import dataclasses
import json
import sys
import warnings
import zipfile
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line, without the usage dump."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _add_config_flags(parser, config_cls, skip=(), choices=None):
    """One flag per dataclass field, typed by its default.

    `choices` maps a field to the values it accepts; its help lists them.
    """
    choices = choices or {}
    for field in dataclasses.fields(config_cls):
        if field.name in skip:
            continue
        default = field.default
        if isinstance(default, bool):
            parser.add_argument(
                _flag(field.name),
                action="store_true",
                default=default,
                help=f"sets {field.name} (default: {'on' if default else 'off'})",
            )
            continue
        kind = type(default) if default is not None else _none_type(field)
        allowed = choices.get(field.name)
        help_text = f"default: {default}"
        if allowed is not None:
            help_text = f"one of: {', '.join(allowed)} ({help_text})"
        parser.add_argument(
            _flag(field.name),
            type=kind,
            default=default,
            choices=allowed,
            metavar=field.name.upper(),
            help=help_text,
        )


def _none_type(field):
    annotation = str(field.type)
    return int if "int" in annotation else float


def _train(args) -> int:
    from keras_nalu.experiments import ExperimentConfig, check_run_name, run_experiment
    from keras_nalu.export import (
        check_export_format,
        check_output_folder,
        export_onnx,
        export_saved_model,
        latest_version,
        save_keras_model,
        write_record,
    )

    _refuse_backend_without_fit("train")
    fields = {f.name for f in dataclasses.fields(ExperimentConfig)}
    values = {k: v for k, v in vars(args).items() if k in fields}
    with _overlap_warnings_silenced():
        config = ExperimentConfig(**values)
        task = config.task()
    if not args.allow_overlap:
        _refuse_overlap(task, "--interpolation-range", "--extrapolation-range")
    name = config.name if args.name is None else check_run_name(args.name, "--name")
    # Every output location is checked now, not after hours of training.
    run_dir = check_output_folder(args.output_dir, "--output-dir") / name
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(
            f"--output-dir {args.output_dir!r}: {run_dir} is a file, not a run "
            "folder; pass --name to pick another name."
        )
    if run_dir.is_dir() and any(run_dir.iterdir()) and not args.overwrite:
        raise ValueError(
            f"--output-dir {args.output_dir!r}: run {name!r} exists ({run_dir}); "
            "pass --overwrite to replace it, or --name to pick another name."
        )
    export_format = _export_format(args)
    if not args.no_export:
        try:
            check_export_format(export_format)
        except ImportError as error:
            other = "onnx" if export_format == "saved_model" else "saved_model"
            raise ValueError(
                f"{error}, or pass --no-export (the run still saves "
                f"model.keras) or --export-format {other}"
            ) from None
        model_dir = check_output_folder(args.export_dir, "--export-dir") / name
        if model_dir.exists():
            check_output_folder(model_dir, "--export-dir", args.export_dir)
    with _overlap_warnings_silenced():
        model, record = run_experiment(config, verbose=not args.quiet, name=name)
    record.update(_explain_record(model, config))
    record["keras_model"] = str(save_keras_model(model, run_dir / "model.keras"))
    record_path = write_record(record, run_dir / "result.json")
    export_error = None
    served = None if args.no_export else latest_version(model_dir)
    if served is not None and not record["success"] and not args.overwrite:
        # TF Serving serves the highest version: an unsolved run must not
        # take the place of the model a user serves.
        record["not_exported"] = (
            f"the run did not solve the task, and {model_dir} serves version "
            f"{served}; pass --overwrite to export it as version {served + 1}, "
            "the new latest, anyway"
        )
        write_record(record, record_path)
    elif not args.no_export:
        export = export_onnx if export_format == "onnx" else export_saved_model
        try:
            path = export(
                model,
                args.export_dir,
                name,
                manifest={
                    "task": record["task"],
                    "config": record["config"],
                    "result": _result_fields(record),
                },
            )
        except (OSError, ValueError) as error:
            export_error = _one_line(error)
        else:
            record[export_format] = str(path)
            write_record(record, record_path)
    if args.json:
        print(json.dumps(record, indent=2, default=str))
        print(_verdict_line(record), file=sys.stderr)
    else:
        print(_train_summary(record, config, record_path))
    if "not_exported" in record:
        print(
            f"keras-nalu train: note: not exported: {record['not_exported']}",
            file=sys.stderr,
        )
    if export_error is not None:
        label = "ONNX" if export_format == "onnx" else "SavedModel"
        print(
            f"keras-nalu train: error: the {label} export failed "
            f"({export_error}); the record and model.keras are in {run_dir}",
            file=sys.stderr,
        )
        return 1
    return 0


def _export_format(args) -> str:
    """--export-format, by default a SavedModel (ONNX on PyTorch)."""
    if args.export_format is not None:
        return args.export_format
    import keras

    return "onnx" if keras.backend.backend() == "torch" else "saved_model"


@contextlib.contextmanager
def _overlap_warnings_silenced():
    """The CLI refuses overlapping ranges itself, or was told to allow them."""
    from keras_nalu.tasks.ranges import OverlappingRangesWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OverlappingRangesWarning)
        yield


def _refuse_overlap(task, interpolation: str, extrapolation: str) -> None:
    from keras_nalu.tasks.ranges import Range

    shared = task.interpolation_range.overlap(task.extrapolation_range)
    if shared:
        raise ValueError(
            f"{interpolation} {task.interpolation_range} and {extrapolation} "
            f"{task.extrapolation_range} overlap on {Range(shared)}, so the "
            "extrapolation verdict would test inputs of the training range; pick "
            "disjoint ranges, or pass --allow-overlap."
        )


def _refuse_backend_without_fit(command: str) -> None:
    """One line, before anything is made, where Keras' backend cannot train."""
    import keras

    backend = keras.backend.backend()
    if backend in ("numpy", "openvino"):
        raise ValueError(
            f"Keras' {backend} backend (KERAS_BACKEND={backend}) runs models but "
            f"cannot train them; run `keras-nalu {command}` with "
            "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax."
        )


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text or type(error).__name__


def _train_summary(record: dict, config, record_path) -> str:
    """The verdict, the config, the formula and where everything went."""
    from keras_nalu.experiments import NAME_FIELDS, ExperimentConfig

    defaults = ExperimentConfig()
    shown = [f"{key}={getattr(config, key)}" for key in NAME_FIELDS]
    shown += [
        f"{f.name}={getattr(config, f.name)}"
        for f in dataclasses.fields(config)
        if f.name not in NAME_FIELDS
        and getattr(config, f.name) != getattr(defaults, f.name)
    ]
    formula = record.get("formula")
    if formula is None:
        formula = f"(not read: {record.get('formula_error', 'explain unavailable')})"
    elif record.get("formula_verdict"):
        formula = f"{formula}  ({record['formula_verdict']})"
    lines = [
        _verdict_line(record),
        f"  config:      {' '.join(shown)}",
        f"  formula:     {formula}",
        f"  record:      {record_path} (all of it on stdout with --json)",
        f"  model:       {record['keras_model']}",
    ]
    if "saved_model" in record:
        lines.append(f"  saved model: {record['saved_model']}")
    if "onnx" in record:
        lines.append(f"  onnx:        {record['onnx']}")
    return "\n".join(lines)


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
    from keras_nalu.explain import explain

    model = _load_keras_model(args.model)
    print(explain(model, tolerance=args.tolerance))
    return 0


def _load_keras_model(name: str):
    """The `.keras` model at `name`, or a one-line error saying what to pass."""
    import keras

    import keras_nalu  # noqa: F401  registers the units for loading

    path = Path(name)
    hint = "pass the model.keras file that `keras-nalu train` writes beside result.json"
    if not path.exists():
        raise ValueError(f"no such model file: {name}; {hint}.")
    if path.is_dir():
        served = [path, *path.glob("*")]
        if any((folder / "saved_model.pb").is_file() for folder in served):
            raise ValueError(
                f"{name} is a TF Serving SavedModel folder, which holds no layers "
                f"to read; {hint} (runs/NAME/model.keras)."
            )
        raise ValueError(f"{name} is a folder, not a .keras file; {hint}.")
    if path.suffix != ".h5" and not zipfile.is_zipfile(path):
        raise ValueError(
            f"{name} is not a .keras file (a .keras file is a zip archive; this "
            f"one is corrupt or of another format); {hint}."
        )
    try:
        return keras.saving.load_model(path, compile=False)
    # A damaged archive fails in many ways inside Keras (KeyError, TypeError,
    # JSON and zip errors); each ends here as one line.
    except Exception as error:  # noqa: BLE001
        raise ValueError(
            f"cannot load {name} as a Keras model ({type(error).__name__}: "
            f"{_one_line(error)[:200]}); {hint}."
        ) from None


def _summarize(args) -> int:
    from keras_nalu.export import check_output_folder
    from keras_nalu.sweeps.summary import load_results, pooled_columns, summarize
    from keras_nalu.sweeps.tables import to_markdown, write_summary

    results = load_results(args.results)
    by = None if args.by is None else [c.strip() for c in args.by.split(",")]
    summary = summarize(results, by=by)
    print(to_markdown(summary))
    pooled = {} if by is None else pooled_columns(results, by)
    if pooled:
        what = " and ".join(
            f"{column} ({', '.join(map(str, values))})"
            for column, values in pooled.items()
        )
        print(
            f"keras-nalu summarize: note: --by {args.by} pools runs of different "
            f"{what} in one row; leave --by out for one row per configuration "
            "and engine",
            file=sys.stderr,
        )
    folder = Path(args.results).parent if args.out is None else Path(args.out)
    try:
        check_output_folder(folder, "--out")
        paths = write_summary(args.results, args.out, summary=summary)
    except (ValueError, OSError) as error:
        print(
            "keras-nalu summarize: error: the table above is not saved: "
            f"{_one_line(error)}"
            + ("" if args.out else " (--out defaults to the results file's folder)"),
            file=sys.stderr,
        )
        return 1
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}", file=sys.stderr)
    return 0


def _plot(args) -> int:
    from keras_nalu.export import check_output_folder
    from keras_nalu.sweeps.plots import made_by_plot, plot_results
    from keras_nalu.sweeps.summary import load_results

    results = Path(args.results)
    out = Path(args.out) if args.out else results.with_suffix(f".{args.x}.png")
    table = load_results(results)
    if out.exists():
        if out.is_dir() or out.resolve() == results.resolve():
            what = "a folder" if out.is_dir() else "the results file"
            raise ValueError(f"--out {str(out)!r} is {what}; pass a PNG path.")
        if not args.overwrite and not made_by_plot(out):
            raise ValueError(
                f"--out {str(out)!r} exists and is not a plot keras-nalu made; it "
                "is left untouched. Pass another --out, or --overwrite to replace it."
            )
    check_output_folder(out.parent, "--out", out)
    path = plot_results(table, x=args.x, out_path=out, operation=args.operation)
    print(path)
    return 0


def _sweep(args) -> int:
    from keras_nalu.export import check_output_folder
    from keras_nalu.sweeps.grid import (
        grid_configs,
        load_grid_file,
        parse_grid,
        parse_seeds,
    )
    from keras_nalu.sweeps.local import filling_options
    from keras_nalu.sweeps.runner import run_sweep, summary_markdown

    filling = filling_options(args)  # XLA's flags, before JAX starts
    _refuse_backend_without_fit("sweep")
    grid = load_grid_file(args.grid_file) if args.grid_file else {}
    grid.update(parse_grid(args.grid or []))
    with _overlap_warnings_silenced():
        configs = grid_configs(grid)
        tasks = [config.task() for config in configs]
    if not args.allow_overlap:
        for task in tasks:
            _refuse_overlap(task, "interpolation_range", "extrapolation_range")
    parse_seeds(args.seeds)
    results = Path(args.results)
    if results.is_dir():
        raise ValueError(f"--results {args.results!r} is a folder; pass a CSV path.")
    check_output_folder(results.parent, "--results", args.results)
    if args.time_limit is not None and (args.no_backup or args.ray_address):
        raise ValueError(
            "--time-limit stops a sweep trained here at a backup: it takes "
            "neither --no-backup nor --ray-address."
        )
    from keras_nalu.sweeps.ray_connection import ClusterError

    try:
        with _overlap_warnings_silenced(), _sweep_messages():
            outcome = run_sweep(
                grid,
                args.seeds,
                args.results,
                chunk_size=args.chunk_size,
                ray_address=args.ray_address,
                progress=not args.quiet,
                backup_every=None if args.no_backup else args.backup_every,
                backup_dir=args.backup_dir,
                gpus_per_chunk=args.gpus_per_chunk,
                time_limit=args.time_limit,
                chunks_per_device=args.chunks_per_device,
                **filling,
            )
    except ClusterError as error:  # not the user's input: exit 1, one line
        print(f"keras-nalu sweep: error: {error}", file=sys.stderr)
        return 1
    if not outcome.complete:
        print(
            "keras-nalu sweep: stopped at --time-limit with runs left, the chunk "
            "in training backed up; run the same command again to continue",
            file=sys.stderr,
        )
    print(summary_markdown(outcome))
    print(
        f"results: {outcome.path} ({len(outcome.results)} rows of this sweep: "
        f"{outcome.new_rows} new, {outcome.skipped} already there)",
        file=sys.stderr,
    )
    return 0


@contextlib.contextmanager
def _sweep_messages():
    """The sweep's notes (a chunk continued, no backup folder) as one line each."""
    import logging

    class OneLine(logging.Formatter):
        def format(self, record):
            kind = "warning: " if record.levelno >= logging.WARNING else ""
            return f"keras-nalu sweep: {kind}{record.getMessage()}"

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLine())
    sweeps = logging.getLogger("keras_nalu.sweeps")
    level, propagate = sweeps.level, sweeps.propagate
    sweeps.addHandler(handler)
    sweeps.setLevel(logging.INFO)
    sweeps.propagate = False
    try:
        yield
    finally:
        sweeps.removeHandler(handler)
        sweeps.setLevel(level)
        sweeps.propagate = propagate


def _progress(args) -> int:
    import pandas as pd

    target = Path(args.results)
    if target.suffix == ".npz":
        if not target.is_file():
            raise FileNotFoundError(f"no such backup file: {target}")
        files = [target]
    else:
        folder = target.with_name(target.name + ".backup")
        if target.is_dir():
            if target.suffix != ".backup":
                raise ValueError(
                    f"{target} is a folder; pass a sweep's results CSV or one "
                    "backup .npz."
                )
            folder = target
        files = sorted(folder.glob("*.npz"))
        if not files and not target.exists():
            raise FileNotFoundError(
                f"no such results file: {target}, and no backups in {folder}/; "
                "pass the --results path of a sweep."
            )
        if not files:
            raise FileNotFoundError(
                f"no chunk of {target} is in training: {folder}/ holds no backup "
                "(a sweep writes one every --backup-every seconds)."
            )
    columns = ["seed", "success", "solved_at", "best_step", "interpolation_mse"]
    columns += ["extrapolation_mse", "sparsity_error", "diverged"]
    for path in files:
        records = _read_backup(path)
        # A chunk of the JAX engine may hold several configurations: one line
        # (and table) each, never one verdict over runs of different tasks.
        parts: dict[tuple, list[dict]] = {}
        for record in records:
            key = tuple(
                record[k] for k in ("model", "operation", "iterations", "threshold")
            )
            parts.setdefault(key, []).append(record)
        for (model, operation, iterations, threshold), part in parts.items():
            solved = sum(bool(r["success"]) for r in part)
            print(
                f"{path.name}: {model} {operation}, step {part[0]['step']:,} of "
                f"{iterations:,}: {solved} of {len(part)} seeds solved so far "
                f"(threshold {threshold:.3g}; {part[0]['engine']} engine)"
            )
            if not args.brief:
                table = pd.DataFrame(part, columns=columns)
                for column in ("solved_at", "best_step"):
                    table[column] = table[column].astype("Int64")
                print(table.to_string(index=False, float_format="{:.3g}".format))
    return 0


def _read_backup(path: Path) -> list[dict]:
    """`read_backup`, with every damaged file reported in one line."""
    from keras_nalu.sweeps.engines import read_backup

    try:
        records = read_backup(path)
    except ValueError:
        raise
    # read_backup lets some damage through as other errors (an empty file:
    # EOFError; a damaged state: TypeError, KeyError); still one line here.
    except Exception as error:  # noqa: BLE001
        raise ValueError(
            f"{path} is not a readable sweep backup ({type(error).__name__}: "
            f"{_one_line(error)[:200]}); wait for the sweep's next backup."
        ) from None
    if not records:
        raise ValueError(f"{path} is a sweep backup of no seeds.")
    return records


def _mnist(args) -> int:
    from keras_nalu.experiments.mnist import (
        MnistConfig,
        judge,
        mae_table,
        mse_bound,
        plot_success_rate,
        run_mnist,
        success_rates,
    )
    from keras_nalu.export import check_output_folder, write_record
    from keras_nalu.sweeps.grid import parse_seeds
    from keras_nalu.tasks.mnist import parse_lengths

    _refuse_backend_without_fit("mnist")
    fields = {f.name for f in dataclasses.fields(MnistConfig)}
    common = {k: v for k, v in vars(args).items() if k in fields}
    common["data_dir"] = args.data_dir
    if args.test_lengths is not None:
        common["test_lengths"] = parse_lengths(args.test_lengths)
    seeds = parse_seeds(args.seeds, owner="mnist --seeds")
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
    output = check_output_folder(args.output_dir, "--output-dir")

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


def _train_flags(train) -> None:
    from keras_nalu.experiments import STATIC_TASKS, ExperimentConfig
    from keras_nalu.presets import PRESETS
    from keras_nalu.tasks import OPERATIONS

    _add_config_flags(
        train,
        ExperimentConfig,
        choices={
            "model": sorted(PRESETS),
            "operation": list(OPERATIONS),
            "task_name": list(STATIC_TASKS),
        },
    )
    train.add_argument(
        "--name",
        default=None,
        help="run name, one folder name (default MODEL-OP-seedN, plus a hash of "
        "the other settings that differ from their defaults)",
    )
    train.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing run of --name, and export even a run that did "
        "not solve the task as the new latest version",
    )
    train.add_argument(
        "--allow-overlap",
        action="store_true",
        help="accept extrapolation and interpolation ranges that overlap",
    )
    train.add_argument(
        "--output-dir", default="runs", help="result.json and model.keras"
    )
    train.add_argument("--export-dir", default="saved_models", help="SavedModel base")
    train.add_argument(
        "--export-format",
        choices=["saved_model", "onnx"],
        default=None,
        help="saved_model (TF Serving; TensorFlow and JAX backends) or onnx "
        "(any backend; the [onnx] extra); default saved_model, onnx on PyTorch",
    )
    train.add_argument("--no-export", action="store_true", help="skip the export")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument(
        "--json", action="store_true", help="print the whole result record as JSON"
    )


def _explain_flags(explain) -> None:
    explain.add_argument("model", help="a .keras file, e.g. runs/NAME/model.keras")
    explain.add_argument(
        "--tolerance",
        type=float,
        default=0.01,
        help="largest distance of a weight from its discrete value (-1, 0, 1) "
        "that still counts as discrete, in [0, 0.5); farther weights make the "
        "formula approximate and are listed (default: 0.01)",
    )


def _summarize_flags(summarize) -> None:
    summarize.add_argument("results", help="a results CSV")
    summarize.add_argument(
        "--by",
        default=None,
        metavar="COLUMNS",
        help="comma list of columns to group by, e.g. operation,model: runs "
        "that differ in other columns are pooled, and a note says which "
        "(default: one row per configuration and engine)",
    )
    summarize.add_argument(
        "--out",
        default=None,
        help="folder for RESULTS_STEM.summary.md/.tex/.csv (default: beside RESULTS)",
    )


def _plot_flags(plot) -> None:
    from keras_nalu.sweeps.results import CONFIG_COLUMNS

    swept = [c for c in CONFIG_COLUMNS if c not in ("model", "operation", "seed")]
    plot.add_argument("results", help="a results CSV")
    plot.add_argument(
        "--x",
        required=True,
        metavar="COLUMN",
        help="the swept column on the x-axis, one the runs differ in: "
        f"{', '.join(swept)}, engine, or an extra column of RESULTS (not "
        "model or operation, which make the lines, nor an outcome)",
    )
    plot.add_argument("--operation", default=None, help="plot only this operation")
    plot.add_argument(
        "--out", default=None, help="PNG path (default: RESULTS_STEM.X.png)"
    )
    plot.add_argument(
        "--overwrite",
        action="store_true",
        help="write over a file at --out that is not a plot keras-nalu made",
    )


def _sweep_flags(sweep) -> None:
    sweep.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2",
        help="the values of one ExperimentConfig field, or K1:K2=A1:B1,A2:B2; "
        "repeat it for each field",
    )
    sweep.add_argument("--grid-file", default=None, help="JSON {field: [values]}")
    sweep.add_argument(
        "--seeds", default="0-9", help="e.g. 0-99 or 0,3,7-9 (default: 0-9)"
    )
    sweep.add_argument(
        "--chunk-size", type=int, default=100, help="seeds per run (default: 100)"
    )
    sweep.add_argument(
        "--results",
        default="results/sweep.csv",
        help="results CSV (default: results/sweep.csv)",
    )
    sweep.add_argument(
        "--ray-address",
        default=None,
        help="local (a Ray runtime of its own), auto, HOST:PORT or ray://HOST:PORT",
    )
    sweep.add_argument("--quiet", action="store_true", help="no progress bar")
    sweep.add_argument(
        "--backup-every",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="back up the chunk in training this often to RESULTS.backup/ (on "
        "Ray: to --backup-dir), and at its next evaluation after Ctrl-C; a rerun "
        "continues it (default: 600)",
    )
    sweep.add_argument("--no-backup", action="store_true", help="never back up a chunk")
    sweep.add_argument(
        "--backup-dir",
        default=None,
        metavar="FOLDER_OR_URL",
        help="with --ray-address: back up the chunks in training to this folder, "
        "which every node must reach (a shared mount, or an fsspec URL such as "
        "s3://bucket/sweep); without it, chunks on Ray are not backed up",
    )
    sweep.add_argument(
        "--gpus-per-chunk",
        type=float,
        default=0.0,
        metavar="GPUS",
        help="with --ray-address: GPUs each chunk asks Ray for (1: a GPU each; "
        "0.25: four chunks share a GPU; default 0)",
    )
    sweep.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this many seconds: no chunk starts after it, and the "
        "chunk in training stops at its next evaluation after a backup; the same "
        "command again continues (a local sweep with backups; default: none)",
    )
    sweep.add_argument(
        "--chunks-per-device",
        type=int,
        default=1,
        metavar="N",
        help="JAX engine: chunks trained side by side on each device, for chunks "
        "too small to fill an accelerator (on Ray: --gpus-per-chunk; default 1)",
    )
    from keras_nalu.sweeps.local import add_filling_flags

    add_filling_flags(sweep)
    sweep.add_argument(
        "--allow-overlap",
        action="store_true",
        help="accept extrapolation and interpolation ranges that overlap",
    )


def _progress_flags(progress) -> None:
    progress.add_argument("results", help="a sweep's results CSV, or one backup .npz")
    progress.add_argument(
        "--brief", action="store_true", help="one line per configuration of a chunk"
    )


def _mnist_flags(mnist) -> None:
    from keras_nalu.experiments.mnist import MnistConfig
    from keras_nalu.tasks.mnist import OPERATIONS as MNIST_OPERATIONS
    from keras_nalu.tasks.mnist import SOURCES

    _add_config_flags(
        mnist,
        MnistConfig,
        skip=("unit", "seed", "test_lengths", "data_dir"),
        choices={"operation": list(MNIST_OPERATIONS), "source": list(SOURCES)},
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


#: Every sub-command: its handler, the function that adds its flags (and
#: imports what their choices need), its one-line help and its description.
_COMMANDS = {
    "train": (
        _train,
        _train_flags,
        "train one preset on the arithmetic task, judge it, export it",
        "Train a preset on Madsen & Johansen's (2020) arithmetic task; print "
        "the verdict, the formula and where the files went; save the result "
        "record, the .keras model and a TF Serving SavedModel. The export "
        "becomes the model's latest version (the one TF Serving serves) when "
        "the run solved the task or the model has no version yet; an unsolved "
        "run is not exported over a served model unless --overwrite.",
    ),
    "explain": (
        _explain,
        _explain_flags,
        "print the formula a model computes",
        None,
    ),
    "summarize": (
        _summarize,
        _summarize_flags,
        "paper-style table of results",
        "Print and write (Markdown, LaTeX, CSV) the success rate, solved-at "
        "step and sparsity error of a results CSV, one row per configuration "
        "and engine; a run listed twice is refused.",
    ),
    "plot": (
        _plot,
        _plot_flags,
        "the panels of Madsen & Johansen's (2020) Fig. 3 against --x",
        None,
    ),
    "sweep": (
        _sweep,
        _sweep_flags,
        "train a grid of configs × seeds into a resumable results CSV",
        "Train every (config, seed) of a grid as vectorized replicas, chunk by "
        "chunk, appending to a results CSV that a rerun resumes; print the "
        "paper-style summary. Grid: --grid KEY=V1,V2 per ExperimentConfig "
        "field (a single value fixes it), --grid K1:K2=A1:B1,A2:B2 for fields "
        "that change together, or --grid-file with the same as JSON. Ctrl-C "
        "backs up the chunk in training at its next evaluation and exits with "
        "status 130; a second Ctrl-C stops at once.",
    ),
    "progress": (
        _progress,
        _progress_flags,
        "how far the chunks of a running (or killed) sweep have got",
        "Read the backups a sweep writes beside RESULTS (in RESULTS.backup/) "
        "and print each chunk's step and each seed's verdict so far, without "
        "disturbing the sweep.",
    ),
    "mnist": (
        _mnist,
        _mnist_flags,
        "sequential MNIST sum / product / count with the exact-unit bound",
        "Train recurrent arithmetic units on sequences of MNIST digits "
        "(Madsen & Johansen 2020, §4.2, App. D; Trask et al. 2018, §4.2); "
        "judge each length against the MSE bound of the exact-unit baseline.",
    ),
}


def build_parser(flags: bool = True) -> argparse.ArgumentParser:
    """The `keras-nalu` parser.

    Args:
        flags: False gives the sub-commands without their flags: enough for
            `keras-nalu --help` and `--version`, and nothing of Keras is
            imported.
    """
    from keras_nalu import __version__

    parser = _Parser(
        prog="keras-nalu",
        description="Neural arithmetic units: train, judge, explain, summarize.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser
    )
    for name, (handler, add_flags, help_text, description) in _COMMANDS.items():
        command = commands.add_parser(
            name, help=help_text, description=description or help_text
        )
        if flags:
            add_flags(command)
        command.set_defaults(handler=handler)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else [str(arg) for arg in argv]
    # Without a sub-command (--help, --version) no flags are needed, and so
    # nothing of Keras: the answer comes at once (see keras_nalu/_startup.py).
    parser = build_parser(flags=any(not arg.startswith("-") for arg in argv))
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    # Bad input (ValueError), a path the system refuses (OSError) or a missing
    # optional package (ImportError): one line, never a traceback.
    except (ValueError, OSError, ImportError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"keras-nalu {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        detail = f": {_one_line(interrupt)}" if str(interrupt) else ""
        print(f"keras-nalu {args.command}: interrupted{detail}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
