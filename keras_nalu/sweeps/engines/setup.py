"""What replicas trained together share: the recipe, the template, the start."""

from __future__ import annotations

import dataclasses
import gc
import threading
from collections.abc import Callable, Sequence

import keras
import numpy as np

from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.experiments import ExperimentConfig, build_experiment_model
from keras_nalu.keras_utils import set_random_seed
from keras_nalu.presets import get_preset
from keras_nalu.regularizers import find_scheduled_regularizers
from keras_nalu.sweeps.engines.optimizer import ReplicaOptimizer
from keras_nalu.sweeps.engines.seeding import SeedPlan
from keras_nalu.tasks.arithmetic import stacked_targets

RECIPE_FIELDS = (
    "model",
    "iterations",
    "hidden_size",
    "learning_rate",
    "optimizer",
    "epsilon",
    "sparsity",
    "sparsity_start",
    "sparsity_end",
    "input_size",
    "batch_size",
    "eval_every",
    "stop_on_success",
    "steps_per_execution",
)
"""The config fields replicas trained together agree on (the model, its
training, the loop); they may differ in their task's data and seeds."""


class NotVectorizableError(ValueError):
    """A preset that an engine cannot train as replicas (sweeps then train its
    seeds one after the other with `run_experiment`)."""


def vectorizable(config: ExperimentConfig) -> bool:
    """Whether `train_replicas` can train `config`'s preset as replicas: not
    one whose callbacks act on one model at a time (the iNALU's).

    Example:

    >>> from keras_nalu.experiments import ExperimentConfig
    >>> vectorizable(ExperimentConfig(model="nmu"))
    True
    >>> vectorizable(ExperimentConfig(model="inalu"))
    False
    """
    return not get_preset(config.model).callbacks


def recipe(config: ExperimentConfig) -> tuple:
    """The values of `RECIPE_FIELDS`: equal recipes can train as one run."""
    return tuple(getattr(config, name) for name in RECIPE_FIELDS)


def check_configs(configs: Sequence[ExperimentConfig]) -> list[ExperimentConfig]:
    """The runs of one replica run: at least one distinct `ExperimentConfig`,
    of one recipe (`RECIPE_FIELDS`), or a ValueError saying why not."""
    configs = list(configs)
    if not configs:
        raise ValueError("ReplicaRun expects at least one config. Received: []")
    for config in configs:
        if not isinstance(config, ExperimentConfig):
            raise ValueError(
                f"ReplicaRun expects ExperimentConfig objects. Received: {config!r}"
            )
    first = recipe(configs[0])
    for config in configs[1:]:
        theirs = recipe(config)
        if theirs != first:
            differ = [n for n, a, b in zip(RECIPE_FIELDS, first, theirs) if a != b]
            raise ValueError(
                "ReplicaRun trains configs together only if they share the model "
                f"and its training; these differ in {differ}. Received: "
                f"{configs[0].name} and {config.name}"
            )
    keys = [(c.seed, *dataclasses.astuple(c)) for c in configs]
    if len(set(keys)) != len(keys):
        raise ValueError("ReplicaRun expects distinct runs; a config repeats.")
    return configs


_BUILD_LOCK = threading.Lock()


def build_replica(config: ExperimentConfig):
    """The model and callbacks `run_experiment` builds for `config`.

    Seeding Keras is process-wide: runs built in several threads take turns.
    """
    with _BUILD_LOCK:
        set_random_seed(config.seed)
        return build_experiment_model(config)


def model_state(model) -> list:
    """The model's non-trainable variables other than the λ strengths (e.g. a
    noise layer's `SeedGenerator` state), carried per replica."""
    strengths = {id(r.current_strength) for r in find_scheduled_regularizers(model)}
    return [v for v in model.non_trainable_variables if id(v) not in strengths]


@dataclasses.dataclass
class ReplicaSetup:
    """The template model of a replica run and the replicas' starting point.

    `model` is the first run's compiled model, whose `stateless_call`
    computes any replica's output and losses; `state_variables` its
    `model_state`; `initial_*` the values stacked over replicas `[R, ...]`;
    `loss(targets, outputs)` a batch's scalar loss.
    """

    model: keras.Model
    schedule: RegularizationSchedule | None
    regularizers: list
    variables: list
    constraints: list
    state_variables: list
    initial_weights: list[np.ndarray]
    initial_state: list[np.ndarray]
    optimizer: ReplicaOptimizer
    loss: Callable

    @classmethod
    def build(cls, configs: Sequence[ExperimentConfig], engine, supports_state):
        """Builds the first run's model, the template, and stacks every run's
        starting weights (`initial_values`); `engine` names the engine in
        messages, `supports_state` says whether it carries model state.

        Raises:
            NotVectorizableError: the preset trains with callbacks that act
                on one model at a time, or has model state the engine does
                not carry.
            ValueError: the optimizer mixes the replicas.
        """
        template, template_callbacks = build_replica(configs[0])
        preset = configs[0].model
        extra = [
            c for c in template_callbacks if not isinstance(c, RegularizationSchedule)
        ]
        if extra:
            raise NotVectorizableError(
                f"train_replicas cannot vectorize preset {preset!r}: it trains "
                f"with {[type(c).__name__ for c in extra]}, which act on one "
                "model at a time. Use run_experiment for each seed."
            )
        schedule = next(iter(template_callbacks), None)  # none but schedules left
        state_variables = model_state(template)
        if state_variables and not supports_state:
            raise NotVectorizableError(
                f"The {engine} engine trains models without non-trainable "
                f"state; preset {preset!r} has "
                f"{[v.path for v in state_variables]}. Use the JAX engine "
                "(KERAS_BACKEND=jax) or run_experiment for each seed."
            )
        variables = list(template.trainable_variables)
        initial_weights, initial_state = initial_values(
            configs, template, variables, state_variables
        )
        loss = keras.losses.get(template.loss)
        if not isinstance(loss, keras.losses.Loss):
            # a per-sample function, e.g. "mse": the mean over the batch
            loss = _batch_mean(loss)
        return cls(
            model=template,
            schedule=schedule,
            regularizers=find_scheduled_regularizers(template) if schedule else [],
            variables=variables,
            constraints=[v.constraint for v in variables],
            state_variables=state_variables,
            initial_weights=initial_weights,
            initial_state=initial_state,
            optimizer=ReplicaOptimizer.from_optimizer(template.optimizer),
            loss=loss,
        )

    @property
    def strength_dtype(self) -> str:
        """The dtype of the regularizers' strengths λ, as the step reads them."""
        if not self.regularizers:
            return "float32"
        return self.regularizers[0].current_strength.dtype


def initial_values(configs, template, variables, state_variables):
    """Every replica's starting weights and state, stacked: `([R, ...], ...)`
    (docs/architecture.md, "Starting weights")."""
    first = _values(variables), _values(state_variables)
    plan = SeedPlan.find(template, configs[0].seed, variables, state_variables)
    if plan is not None and len(configs) > 1:
        weights, state = plan.draw([c.seed for c in configs])
        last = _built_values(configs[-1])
        if _agree(weights, state, 0, first) and _agree(weights, state, -1, last):
            return weights, state
    per_replica = [first, *map(_built_values, configs[1:])]
    gc.collect()
    return (
        _stacked([w for w, _ in per_replica], len(variables)),
        _stacked([s for _, s in per_replica], len(state_variables)),
    )


def _values(variables) -> list[np.ndarray]:
    return [keras.ops.convert_to_numpy(v) for v in variables]


def _built_values(config) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The starting weights and state of `config`'s model, built (then freed)."""
    model, _ = build_replica(config)
    return _values(model.trainable_variables), _values(model_state(model))


def _agree(weights, state, replica, built) -> bool:
    """Whether the drawn values of one replica are those its model has."""
    drawn = [w[replica] for w in weights] + [s[replica] for s in state]
    expected = [*built[0], *built[1]]
    return len(drawn) == len(expected) and all(
        a.shape == b.shape and np.array_equal(a, b) for a, b in zip(drawn, expected)
    )


def _stacked(per_replica: list[list[np.ndarray]], count: int) -> list[np.ndarray]:
    return [np.stack([replica[i] for replica in per_replica]) for i in range(count)]


def _batch_mean(loss):
    return lambda t, y: keras.ops.mean(loss(t, y))


def eval_groups(tasks) -> list[tuple[np.ndarray, tuple, tuple]]:
    """`(replicas, (x_val, t_val), (x_test, t_test))` per group of replicas
    sharing their validation and test inputs, targets `(n, size, 1)`."""
    groups = {}
    for r, task in enumerate(tasks):
        key = (
            task.interpolation_range,
            task.extrapolation_range,
            task.validation_size,
            task.test_size,
            task.validation_seed,
            task.test_seed,
        )
        groups.setdefault(key, []).append(r)
    result = []
    for members in groups.values():
        group = [tasks[r] for r in members]
        x_val, x_test = group[0].validation_data()[0], group[0].test_data()[0]
        result.append(
            (
                np.array(members),
                (x_val, stacked_targets(group, x_val)),
                (x_test, stacked_targets(group, x_test)),
            )
        )
    return result
