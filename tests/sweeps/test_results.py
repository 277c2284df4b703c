"""The results file of a sweep: its configuration ids, its lock."""

import pytest

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.results import config_id, results_lock


def test_epsilon_enters_the_config_id_only_when_set():
    default = ExperimentConfig()
    assert config_id(default) == "c15431c47713f"  # the id before epsilon existed
    assert config_id(default) == config_id(ExperimentConfig(epsilon=None))
    assert config_id(default) != config_id(ExperimentConfig(epsilon=1e-8))
    with pytest.raises(ValueError, match="epsilon"):
        ExperimentConfig(epsilon=0.0)


def test_the_lock_file_is_held_during_the_sweep_and_gone_after_it(tmp_path):
    path = tmp_path / "results.csv"
    with results_lock(path):
        assert (tmp_path / "results.csv.lock").exists()
        with pytest.raises(ValueError, match="another sweep is writing"):
            with results_lock(path):
                pass
        assert (tmp_path / "results.csv.lock").exists()  # the refused one kept it
    assert not (tmp_path / "results.csv.lock").exists()
