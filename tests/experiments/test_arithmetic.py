"""The main job (`keras-nalu train` with no arguments) solves and is exact.

This is the README's promise: the default experiment succeeds within its
iteration budget and its weights read back as the task's exact formula.
"""

from keras_nalu.experiments import ExperimentConfig, run_experiment
from keras_nalu.explain import compare_with_task, explain


def test_default_experiment_solves_with_an_exact_formula():
    config = ExperimentConfig()
    model, record = run_experiment(config, verbose=False)
    assert record["diverged"] is False
    assert record["success"] is True, record["history"][-5:]
    assert record["solved_at"] is not None
    assert record["iterations"] == config.iterations
    comparison = compare_with_task(explain(model), config.task())
    assert comparison.verdict == "exact", str(comparison)
