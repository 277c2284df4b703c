"""One `TrainingLimits` down the call chain, one default, one state by name."""

import inspect

import keras
import numpy as np
import pytest

from keras_nalu.cli.entry import build_parser
from keras_nalu.sweeps.engines import (
    BACKUP_EVERY,
    EngineState,
    ReplicaRun,
    TrainingLimits,
    train_batched,
    train_replicas,
)
from keras_nalu.sweeps.engines.optimizer import ReplicaOptimizer
from keras_nalu.sweeps.options import SweepOptions
from keras_nalu.sweeps.planning import sweep_within
from keras_nalu.sweeps.runner import run_sweep


@pytest.mark.parametrize("function", [SweepOptions, sweep_within, TrainingLimits])
def test_every_backup_interval_defaults_to_the_one_default(function):
    default = inspect.signature(function).parameters["backup_every"].default
    assert default is BACKUP_EVERY


@pytest.mark.parametrize(
    "function", [run_sweep, train_replicas, train_batched, ReplicaRun.train]
)
def test_backups_and_deadlines_are_one_value_not_loose_arguments(function):
    # a run takes one TrainingLimits, a sweep one SweepOptions (or its
    # fields by name): no loose backup, backup_every or deadline beside them
    parameters = inspect.signature(function).parameters
    assert not {"backup", "backup_every", "deadline", "time_limit"} & set(parameters)
    assert {"limits", "options"} & set(parameters)


def test_the_sweep_command_backs_up_at_the_one_default():
    args = build_parser().parse_args(["sweep", "--results", "r.csv"])
    assert args.backup_every == BACKUP_EVERY == TrainingLimits().backup_every


def test_limits_tell_when_a_run_is_out_of_time():
    assert not TrainingLimits().out_of_time()
    assert TrainingLimits(deadline=0.0).out_of_time()


def test_an_engine_state_flattens_in_a_backups_order_and_back():
    state = EngineState(
        weights=[np.zeros(1), np.ones(1)],
        optimizer=[np.full(1, 2.0)],
        model_state=[],
        active=np.full(1, 3.0),
        diverged=np.full(1, 4.0),
    )
    flat = state.flat()
    assert [float(a[0]) for a in flat] == [0, 1, 2, 3, 4]
    again = state.unflatten([a + 10 for a in flat])
    assert [float(a[0]) for a in again.weights] == [10, 11]
    assert float(again.diverged[0]) == 14
    with pytest.raises(ValueError, match="expected 5 arrays"):
        state.unflatten(flat[:-1])


def test_the_per_replica_rule_takes_the_stacked_moments_and_shares_the_rest():
    stacked = [keras.Variable(np.zeros((3, 2))), keras.Variable(np.zeros((3,)))]
    optimizer = keras.optimizers.Adam()
    optimizer.build(stacked)
    flags = ReplicaOptimizer.per_replica(optimizer, stacked)
    own = [
        tuple(v.shape)
        for v, per_replica in zip(optimizer.variables, flags)
        if per_replica
    ]
    shared = [
        tuple(v.shape)
        for v, per_replica in zip(optimizer.variables, flags)
        if not per_replica
    ]
    assert sorted(own) == [(3,), (3,), (3, 2), (3, 2)]  # m and v of each
    assert all(shape == () for shape in shared)  # the step count, ...
