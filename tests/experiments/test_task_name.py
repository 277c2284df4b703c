"""`ExperimentConfig.task_name`: the simple 10-parameter task beside the default one."""

import numpy as np
import pytest

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.grid import grid_configs, parse_grid
from keras_nalu.sweeps.results import config_id


def test_the_simple_task_is_the_ten_parameter_function():
    config = ExperimentConfig(
        model="nmu", operation="mul", task_name="simple", input_size=4
    )
    task = config.task()
    assert task.subsets == ((0, 2), (0, 4))
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(task.target(x), [[(1 + 2) * (1 + 2 + 3 + 4)]])
    assert config.name != ExperimentConfig(model="nmu", operation="mul").name


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"task_name": "simple"}, "expects input_size to be 4"),
        ({"task_name": "recurrent", "input_size": 4}, "task_name"),
    ],
)
def test_a_task_it_cannot_train_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        ExperimentConfig(**fields)


def test_the_default_task_keeps_the_ids_of_older_rows():
    # The id of the Fig. 3 point NMU × at hidden size 4 and 5·10⁶ steps,
    # from before `task_name` existed.
    config = ExperimentConfig(
        model="nmu", operation="mul", iterations=5_000_000, hidden_size=4
    )
    assert config_id(config) == "c4fe4c6f2ab27"
    simple = ExperimentConfig(
        model="nmu",
        operation="mul",
        iterations=5_000_000,
        task_name="simple",
        input_size=4,
    )
    assert config_id(simple) != config_id(
        ExperimentConfig(
            model="nmu", operation="mul", iterations=5_000_000, input_size=4
        )
    )


def test_a_sweep_grid_names_the_task():
    (config,) = grid_configs(parse_grid(["task_name=simple", "input_size=4"]))
    assert config.task_name == "simple" and config.task().input_size == 4
