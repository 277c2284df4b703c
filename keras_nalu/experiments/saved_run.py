"""One run trained, explained, saved and exported: what `keras-nalu train` does.

`train_and_save` runs an `ExperimentConfig`, adds the formula the trained
model computes to its record (`explain_record`), saves `model.keras` and
`result.json` in the run's folder and exports the model (a TF Serving
SavedModel or ONNX, `keras_nalu.export.export_run`); a script gets the
same files as the command.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from keras_nalu.experiments.arithmetic import ExperimentConfig, run_experiment


@dataclasses.dataclass(frozen=True)
class SavedRun:
    """What `train_and_save` made.

    Attributes:
        model: the trained Keras model.
        record: the run's record (`run_experiment`'s, plus the formula
            fields, `keras_model`, and the export's fields where it exported).
        record_path: the `result.json` written.
        export_error: the `OSError` or `ValueError` the export raised (the
            record and `model.keras` are saved all the same); None if it
            exported or was not asked.
    """

    model: object
    record: dict
    record_path: Path
    export_error: Exception | None = None


def train_and_save(
    config: ExperimentConfig,
    run_dir: str | os.PathLike,
    *,
    name: str | None = None,
    export_dir: str | os.PathLike = "saved_models",
    export_format: str | None = "saved_model",
    overwrite: bool = False,
    verbose: bool = True,
) -> SavedRun:
    """Trains `config`, explains the model, saves the run and exports it.

    Args:
        config: the run.
        run_dir: the run's folder, for `result.json` and `model.keras`.
        name: the run's name (default: `config.name`).
        export_dir: where the exported versions of the model go.
        export_format: `"saved_model"`, `"onnx"`, or None: no export.
        overwrite: export even an unsolved run as the model's latest version
            (`keras_nalu.export.export_run`).
        verbose: show a progress bar while it trains.

    Returns:
        A `SavedRun`. The record is written before the export and again after
        it, with the export's fields.

    Example:

    >>> import tempfile, pathlib
    >>> from keras_nalu.experiments import ExperimentConfig, train_and_save
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> saved = train_and_save(
    ...     ExperimentConfig(iterations=1_000, eval_every=1_000),
    ...     folder / "run", export_format=None, verbose=False)
    >>> saved.record_path.name, saved.export_error
    ('result.json', None)
    """
    from keras_nalu._files import save_keras_model, write_record
    from keras_nalu.export import export_run

    run_dir = Path(run_dir)
    model, record = run_experiment(config, verbose=verbose, name=name)
    record.update(explain_record(model, config))
    record["keras_model"] = str(save_keras_model(model, run_dir / "model.keras"))
    record_path = write_record(record, run_dir / "result.json")
    if export_format is None:
        return SavedRun(model, record, record_path)
    try:
        export_run(model, record, export_dir, record["name"], export_format, overwrite)
    except (OSError, ValueError) as error:
        return SavedRun(model, record, record_path, export_error=error)
    write_record(record, record_path)
    return SavedRun(model, record, record_path)


def explain_record(model, config: ExperimentConfig) -> dict:
    """The formula fields of a run's record: what `keras-nalu explain` prints.

    `formula` (None where it could not be read, `formula_error` then says
    why) and, with SymPy, `formula_verdict`: whether the formula is the
    task's (`keras_nalu.explain.compare_with_task`); `"no formula"` where
    the model computes none. Empty without the `explain` extra.
    """
    try:
        from keras_nalu.explain import compare_with_task, explain
    except ImportError:
        return {}
    task = config.task()
    try:
        explanation = explain(
            model, input_ranges=(task.interpolation_range, task.extrapolation_range)
        )
    except (ValueError, ImportError) as error:
        return {"formula": None, "formula_error": str(error)}
    if not explanation.matches_model:
        return {
            "formula": None,
            "formula_error": str(explanation),
            "formula_verdict": "no formula",
        }
    try:  # the verdict needs SymPy; the formula does not
        verdict = compare_with_task(explanation, task).verdict
    except ImportError:
        return {"formula": str(explanation)}
    return {"formula": str(explanation), "formula_verdict": verdict}
