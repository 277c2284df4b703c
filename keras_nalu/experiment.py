"""The former home of `run_experiment`, kept so that its imports keep working.

The arithmetic experiment lives in `keras_nalu.experiments.arithmetic`; import
it from `keras_nalu.experiments`.
"""

from keras_nalu.experiments.arithmetic import (
    NAME_FIELDS,
    TASK_FIELDS,
    ExperimentConfig,
    check_run_name,
    run_experiment,
)

__all__ = [
    "NAME_FIELDS",
    "TASK_FIELDS",
    "ExperimentConfig",
    "check_run_name",
    "run_experiment",
]
