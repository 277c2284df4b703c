"""The main job (`keras-nalu train` with no arguments) solves and is exact.

This is the README's promise: the default experiment succeeds within its
iteration budget and its weights read back as the task's exact formula.
"""

import pytest

from keras_nalu.experiments import ExperimentConfig, run_experiment
from keras_nalu.explain import compare_with_task, explain

#: The default run is solved first at step 17,000 (saved_models/reference-nau-add
#: records it) and reads as its exact formula by step 20,000: its first 25,000
#: steps check both; the whole run of 10⁵ steps is a slow test.
FIRST_STEPS = 25_000


@pytest.mark.parametrize(
    "iterations",
    [FIRST_STEPS, pytest.param(ExperimentConfig().iterations, marks=pytest.mark.slow)],
)
def test_default_experiment_solves_with_an_exact_formula(iterations):
    config = ExperimentConfig(iterations=iterations)
    model, record = run_experiment(config, verbose=False)
    assert record["diverged"] is False
    assert record["success"] is True, record["history"][-5:]
    assert record["solved_at"] is not None
    assert record["iterations"] == config.iterations
    comparison = compare_with_task(explain(model), config.task())
    assert comparison.verdict == "exact", str(comparison)


def test_a_single_module_run_is_judged_by_the_single_module_threshold():
    from keras_nalu.evaluation import single_module_threshold, success_threshold
    from keras_nalu.tasks.nalm import single_module_geometry

    fields = dict(operation="add", **single_module_geometry(2))
    single = ExperimentConfig(model="single_nau", **fields)
    two_layer = ExperimentConfig(model="nau", **fields)
    assert single.success_threshold() == single_module_threshold(single.task())
    assert two_layer.success_threshold() == success_threshold(two_layer.task())
    # Madsen & Johansen's W^ε adds two one-input subsets exactly.
    assert single.success_threshold() > 100 * two_layer.success_threshold()
    # A single unit on the two-layer task keeps the two-layer rule.
    wide = ExperimentConfig(model="single_nau", input_size=10)
    assert wide.success_threshold() == success_threshold(wide.task())
    _, record = run_experiment(
        ExperimentConfig(model="single_nau", iterations=100, eval_every=50, **fields),
        verbose=False,
    )
    assert record["threshold"] == single.success_threshold()
