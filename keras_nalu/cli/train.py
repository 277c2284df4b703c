"""`keras-nalu train`: one preset on the arithmetic task, judged and exported."""

import dataclasses
import json
import sys

from keras_nalu.cli.checks import (
    overlap_warnings_silenced,
    refuse_backend_without_fit,
    refuse_overlap,
)
from keras_nalu.cli.messages import one_line
from keras_nalu.cli.parsing import add_config_flags

HELP = "train one preset on the arithmetic task, judge it, export it"
DESCRIPTION = (
    "Train a preset on Madsen & Johansen's (2020) arithmetic task; print "
    "the verdict, the formula and where the files went; save the result "
    "record, the .keras model and a TF Serving SavedModel. The export "
    "becomes the model's latest version (the one TF Serving serves) when "
    "the run solved the task or the model has no version yet; an unsolved "
    "run is not exported over a served model unless --overwrite."
)


def add_flags(train) -> None:
    from keras_nalu.experiments import STATIC_TASKS, ExperimentConfig
    from keras_nalu.presets import PRESETS
    from keras_nalu.tasks import OPERATIONS

    add_config_flags(
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


def run(args) -> int:
    from keras_nalu.experiments import train_and_save

    config = _config(args)
    name, run_dir = _run_folder(args, config)
    export_format = _check_export(args, name)
    with overlap_warnings_silenced():
        saved = train_and_save(
            config,
            run_dir,
            name=name,
            export_dir=args.export_dir,
            export_format=export_format,
            overwrite=args.overwrite,
            verbose=not args.quiet,
        )
    _print_record(args, saved.record, config, saved.record_path)
    if saved.export_error is not None:
        label = "ONNX" if export_format == "onnx" else "SavedModel"
        print(
            f"keras-nalu train: error: the {label} export failed "
            f"({one_line(saved.export_error)}); the record and model.keras are in "
            f"{run_dir}",
            file=sys.stderr,
        )
        return 1
    return 0


def _config(args):
    """The run's `ExperimentConfig`, its memory and ranges checked."""
    from keras_nalu.experiments import ExperimentConfig, check_run_memory

    refuse_backend_without_fit("train")
    fields = {f.name for f in dataclasses.fields(ExperimentConfig)}
    values = {k: v for k, v in vars(args).items() if k in fields}
    with overlap_warnings_silenced():
        config = ExperimentConfig(**values)
        task = config.task()
        check_run_memory(config)
    if not args.allow_overlap:
        refuse_overlap(task, "--interpolation-range", "--extrapolation-range")
    return config


def _run_folder(args, config):
    """`(name, run folder)`, checked now, not after hours of training."""
    from keras_nalu._files import check_output_folder
    from keras_nalu.experiments import check_run_name

    name = config.name if args.name is None else check_run_name(args.name, "--name")
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
    return name, run_dir


def _check_export(args, name: str) -> str | None:
    """The export format, checked before training; None with --no-export."""
    from keras_nalu._files import check_output_folder
    from keras_nalu.export import check_export_format, check_model_folder

    if args.no_export:
        return None
    export_format = _export_format(args)
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
        check_model_folder(args.export_dir, name, export_format)
    return export_format


def _export_format(args) -> str:
    """--export-format, by default a SavedModel (ONNX on PyTorch)."""
    if args.export_format is not None:
        return args.export_format
    import keras

    return "onnx" if keras.backend.backend() == "torch" else "saved_model"


def _print_record(args, record: dict, config, record_path) -> None:
    """The summary (or with --json the record) on stdout; a note on stderr."""
    if args.json:
        print(json.dumps(record, indent=2, default=str))
        print(verdict_line(record), file=sys.stderr)
    else:
        print(train_summary(record, config, record_path))
    if "not_exported" in record:
        print(
            f"keras-nalu train: note: not exported: {record['not_exported']}",
            file=sys.stderr,
        )


def train_summary(record: dict, config, record_path) -> str:
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
    if record.get("formula_verdict") == "no formula":
        formula = record["formula_error"]  # what `explain` prints
    elif formula is None:
        formula = f"(not read: {record.get('formula_error', 'explain unavailable')})"
    elif record.get("formula_verdict"):
        formula = f"{formula}  ({record['formula_verdict']})"
    lines = [
        verdict_line(record),
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


def verdict_line(record: dict) -> str:
    """`NAME: SOLVED (first at step N); extrapolation MSE ...` in one line.

    The MSE at the best-validation step (the paper's verdict), then at the
    last evaluation (the weights the run ends with, which it saves).
    """
    if record["diverged"]:
        verdict = "DIVERGED"
    elif record["success"]:
        verdict = f"SOLVED (first at step {record['solved_at']})"
    else:
        verdict = "NOT SOLVED"
    final = (
        f"{record['final_extrapolation_mse']:.3g} at the last evaluation, step "
        f"{record['final_step']}"
        if record.get("final_step") is not None
        else "no evaluation"
    )
    return (
        f"{record['name']}: {verdict}; extrapolation MSE "
        f"{record['extrapolation_mse']:.3g} vs threshold {record['threshold']:.3g} "
        f"at step {record['best_step']} (best validation), {final}; "
        f"{record['iterations']} steps in {record['wall_time']:.0f} s"
    )
