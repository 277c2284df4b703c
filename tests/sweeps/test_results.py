"""The results file of a sweep: its configuration ids."""

import pytest

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.results import config_id


def test_epsilon_enters_the_config_id_only_when_set():
    default = ExperimentConfig()
    assert config_id(default) == "c15431c47713f"  # the id before epsilon existed
    assert config_id(default) == config_id(ExperimentConfig(epsilon=None))
    assert config_id(default) != config_id(ExperimentConfig(epsilon=1e-8))
    with pytest.raises(ValueError, match="epsilon"):
        ExperimentConfig(epsilon=0.0)
