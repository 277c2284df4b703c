"""Pure tf.data builders of the synthetic tasks: (config, seed) -> data."""

from keras_nalu.tasks.arithmetic import ArithmeticTask, simple_function_task
from keras_nalu.tasks.operations import OPERATIONS
from keras_nalu.tasks.ranges import Range
from keras_nalu.tasks.recurrent import RecurrentArithmeticTask

TASKS = ("arithmetic", "simple", "recurrent")

_BUILDERS = {
    "arithmetic": ArithmeticTask,
    "simple": simple_function_task,
    "recurrent": RecurrentArithmeticTask,
}


def get_task(name: str, **config) -> ArithmeticTask | RecurrentArithmeticTask:
    """Builds a task by name from its config fields.

    Args:
        name: "arithmetic" (`ArithmeticTask`), "simple"
            (`simple_function_task`) or "recurrent" (`RecurrentArithmeticTask`).
        **config: the task's fields, e.g. a `to_config()` dict.

    Returns:
        The task.

    Example:

    >>> from keras_nalu.tasks import get_task
    >>> get_task("arithmetic", operation="sub", seed=3).subsets
    ((51, 76), (64, 89))
    """
    if name not in _BUILDERS:
        raise ValueError(
            f"get_task expects name to be one of {list(TASKS)}. Received: name={name!r}"
        )
    return _BUILDERS[name](**config)


__all__ = [
    "OPERATIONS",
    "TASKS",
    "ArithmeticTask",
    "Range",
    "RecurrentArithmeticTask",
    "get_task",
    "simple_function_task",
]
