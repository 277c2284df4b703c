"""Replicas' starting weights drawn without building a model per seed.

Runs on the TensorFlow backend (the first pass of `make test`) and on JAX
(its JAX pass), the two backends with a replica engine.
"""

import keras
import numpy as np
import pytest

from keras_nalu.experiments import ExperimentConfig
from keras_nalu.presets import PRESETS
from keras_nalu.sweeps.engines import setup
from keras_nalu.sweeps.engines.seeding import SeedPlan, default_seeds

VECTORIZABLE = [
    name for name in PRESETS if setup.vectorizable(ExperimentConfig(model=name))
]
SEEDS = (0, 3, 77, 123_456)


def _config(model, seed):
    return ExperimentConfig(model=model, seed=seed, input_size=6)


def _built(config):
    model, _ = setup.build_replica(config)
    return (
        [keras.ops.convert_to_numpy(v) for v in model.trainable_variables],
        [keras.ops.convert_to_numpy(v) for v in setup.model_state(model)],
    )


@pytest.mark.parametrize("model", VECTORIZABLE)
def test_each_replica_starts_where_its_own_model_starts(model):
    template, _ = setup.build_replica(_config(model, SEEDS[0]))
    plan = SeedPlan.find(
        template,
        SEEDS[0],
        list(template.trainable_variables),
        setup.model_state(template),
    )
    assert plan is not None, f"no plan for {model}"
    weights, state = plan.draw(SEEDS)
    for replica, seed in enumerate(SEEDS):
        own_weights, own_state = _built(_config(model, seed))
        assert len(weights) == len(own_weights) and len(state) == len(own_state)
        for drawn, own in zip([*weights, *state], [*own_weights, *own_state]):
            np.testing.assert_array_equal(drawn[replica], own)


def test_replicas_of_different_seeds_start_apart():
    template, _ = setup.build_replica(_config("nmu", 0))
    variables = list(template.trainable_variables)
    weights, _ = SeedPlan.find(template, 0, variables, []).draw([0, 1])
    for stacked in weights:
        assert not np.array_equal(stacked[0], stacked[1])


def test_the_setup_builds_two_models_not_one_per_seed(monkeypatch):
    built = []
    build = setup.build_replica

    def counting(config):
        built.append(config.seed)
        return build(config)

    monkeypatch.setattr(setup, "build_replica", counting)
    configs = [_config("snmu", seed) for seed in range(30)]
    result = setup.ReplicaSetup.build(configs, "test", supports_state=True)
    assert built == [0, 29]  # the template and the replica it is checked on
    monkeypatch.undo()
    for replica in (0, 13, 29):
        own_weights, own_state = _built(configs[replica])
        for drawn, own in zip(
            [*result.initial_weights, *result.initial_state],
            [*own_weights, *own_state],
        ):
            np.testing.assert_array_equal(drawn[replica], own)


def test_a_plan_that_misses_the_template_gives_way_to_built_models(monkeypatch):
    def wrong(self, seeds):
        weights, state = original(self, seeds)
        return [w + 1 for w in weights], state

    original = SeedPlan.draw
    monkeypatch.setattr(SeedPlan, "draw", wrong)
    configs = [_config("nau", seed) for seed in (4, 5, 6)]
    result = setup.ReplicaSetup.build(configs, "test", supports_state=False)
    for replica, config in enumerate(configs):
        own_weights, _ = _built(config)
        for drawn, own in zip(result.initial_weights, own_weights):
            np.testing.assert_array_equal(drawn[replica], own)


def test_an_initializer_it_cannot_place_means_no_plan():
    # A plain function draws from NumPy's global generator: nothing to replay.
    def drawn_by_numpy(shape, dtype=None):
        return np.random.uniform(size=shape).astype("float32")

    keras.utils.set_random_seed(2)
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(1, kernel_initializer=drawn_by_numpy)]
    )
    variables = list(model.trainable_variables)
    assert SeedPlan.find(model, 2, variables, []) is None


def test_default_seeds_are_what_keras_draws_after_seeding():
    keras.utils.set_random_seed(11)
    drawn = [keras.initializers.RandomNormal().seed for _ in range(3)]
    assert drawn == default_seeds(11, 3)
