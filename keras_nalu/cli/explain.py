"""`keras-nalu explain`: the formula a saved model computes."""

import json
import zipfile
from pathlib import Path

from keras_nalu.cli.messages import one_line

HELP = "print the formula a model computes"
DESCRIPTION = None


def add_flags(explain) -> None:
    explain.add_argument("model", help="a .keras file, e.g. runs/NAME/model.keras")
    explain.add_argument(
        "--tolerance",
        type=float,
        default=0.01,
        help="largest distance of a weight from its discrete value (-1, 0, 1) "
        "that still counts as discrete, in [0, 0.5); farther weights make the "
        "formula approximate and are listed. A formula must also match the "
        "model's predictions within it (relative), on inputs from the task's "
        "ranges (read from result.json beside the model; U[1, 2] and U[2, 6] "
        "without it), or explain says there is none (default: 0.01)",
    )


def run(args) -> int:
    from keras_nalu.explain import explain

    model = _load_keras_model(args.model)
    ranges = _task_ranges(Path(args.model).parent / "result.json")
    print(explain(model, tolerance=args.tolerance, **ranges))
    return 0


def _task_ranges(record_path: Path) -> dict:
    """`input_ranges=` the run's interpolation and extrapolation ranges, from
    the record `train` writes beside its model; none (explain's defaults)
    without one."""
    from keras_nalu.tasks import Range

    try:
        task = json.loads(record_path.read_text())["task"]
        ranges = tuple(
            Range.parse(task[key], key)
            for key in ("interpolation_range", "extrapolation_range")
        )
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {"input_ranges": ranges}


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
            f"{one_line(error)[:200]}); {hint}."
        ) from None
