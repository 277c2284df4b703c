"""One run of a task: configuration → model → fit → JSON-able record.

- `arithmetic`: `run_experiment(ExperimentConfig(...))`, one run of the
  arithmetic task of Madsen & Johansen (2020) with one of the papers' presets;
  its names are importable from here, `keras_nalu.experiments`;
- `saved_run`: `train_and_save`, one such run explained, saved and exported,
  as `keras-nalu train` does it (importable from here too);
- `mnist`: sequential MNIST (`keras_nalu.experiments.mnist.run_mnist`), the
  recurrent task of Madsen & Johansen (2020), §4.2; import its names from its
  package, `keras_nalu.experiments.mnist`.
"""

from keras_nalu.experiments.arithmetic import (
    LATER_FIELDS,
    NAME_FIELDS,
    REFERENCE_SETTINGS,
    STATIC_TASKS,
    TASK_FIELDS,
    ExperimentConfig,
    build_experiment_model,
    check_run_memory,
    check_run_name,
    execution_size,
    fit_epochs,
    make_record,
    run_experiment,
    run_memory,
    total_steps,
    without_later_defaults,
)
from keras_nalu.experiments.saved_run import SavedRun, explain_record, train_and_save

__all__ = [
    "LATER_FIELDS",
    "NAME_FIELDS",
    "REFERENCE_SETTINGS",
    "STATIC_TASKS",
    "TASK_FIELDS",
    "ExperimentConfig",
    "SavedRun",
    "build_experiment_model",
    "check_run_memory",
    "check_run_name",
    "execution_size",
    "explain_record",
    "fit_epochs",
    "make_record",
    "run_experiment",
    "run_memory",
    "total_steps",
    "train_and_save",
    "without_later_defaults",
]
