"""RecurrentArithmeticTask: sequences, sums over time, long test sequences."""

import itertools
import json
import warnings

import numpy as np
import pytest
import tensorflow as tf

from keras_nalu.tasks import ArithmeticTask, RecurrentArithmeticTask

SMALL = {"validation_size": 64, "test_size": 16, "batch_size": 8}


def numpy_target(operation, x, subsets):
    """t from float64 sums over time, then over each subset."""
    steps = np.asarray(x, dtype=np.float64).sum(axis=-2)
    a = [steps[..., start:end].sum(axis=-1, keepdims=True) for start, end in subsets]
    if operation == "add":
        return sum(a)
    if operation == "sub":
        return a[0] - sum(a[1:])
    if operation == "mul":
        return np.prod(a, axis=0)
    if operation == "div":
        return a[0] / np.prod(a[1:], axis=0)
    if operation == "squared":
        return a[0] ** 2
    return np.sqrt(a[0])


def first_batches(task, count):
    return [
        (x.numpy(), t.numpy()) for x, t in itertools.islice(task.train_dataset(), count)
    ]


def test_default_shapes():
    task = RecurrentArithmeticTask(test_size=8)
    assert (task.train_length, task.test_length, task.input_size) == (10, 1000, 10)
    assert task.input_shape == (None, 10)
    x, t = first_batches(task, 1)[0]
    assert x.shape == (128, 10, 10) and t.shape == (128, 1)
    x_val, t_val = task.validation_data()
    assert x_val.shape == (1000, 10, 10) and t_val.shape == (1000, 1)
    x_test, t_test = task.test_data()
    assert x_test.shape == (8, 1000, 10) and t_test.shape == (8, 1)
    assert x_test.dtype == np.float32 and t_test.dtype == np.float32
    spec = task.train_dataset().element_spec
    assert spec[0].shape == (128, 10, 10) and spec[1].shape == (128, 1)


@pytest.mark.parametrize("seed", range(6))
def test_geometry_is_the_arithmetic_tasks(seed):
    task = RecurrentArithmeticTask(seed=seed)
    static = ArithmeticTask(input_size=10, seed=seed)
    assert (task.subset_length, task.overlap_length) == (2, 1)
    assert 0 <= task.offset <= 7
    assert task.subsets == static.subsets
    k = task.offset
    assert task.subsets == ((k, k + 2), (k + 1, k + 3))


@pytest.mark.parametrize("operation", ["add", "sub", "mul", "div", "squared", "root"])
def test_targets_are_subset_sums_over_time(operation):
    task = RecurrentArithmeticTask(operation, test_length=100, seed=3, **SMALL)
    sets = first_batches(task, 2) + [task.validation_data(), task.test_data()]
    sets.append(tuple(v.numpy() for v in task.sample(4, "interpolation", 1, 37)))
    for x, t in sets:
        scale = np.abs(x).sum(axis=(-2, -1)).max()
        np.testing.assert_allclose(
            t, numpy_target(operation, x, task.subsets), rtol=2e-5, atol=1e-6 * scale
        )
    assert sets[-1][0].shape == (4, 37, 10)


def test_samples_lie_in_their_ranges():
    task = RecurrentArithmeticTask(
        "sub",
        interpolation_range="U[-2,2]",
        extrapolation_range="U[-6,-2] ∪ U[2,6]",
        **SMALL,
    )
    for x, _ in first_batches(task, 2) + [task.validation_data()]:
        assert task.interpolation_range.contains(x).all()
    x_test, _ = task.test_data()
    assert x_test.shape == (16, 1000, 10)
    assert task.extrapolation_range.contains(x_test).all()
    assert (x_test < 0).any() and (x_test > 0).any()


def test_seeds_and_fixed_sets():
    first, same = RecurrentArithmeticTask(seed=1), RecurrentArithmeticTask(seed=1)
    for (x1, t1), (x2, t2) in zip(first_batches(first, 2), first_batches(same, 2)):
        np.testing.assert_array_equal(x1, x2)
        np.testing.assert_array_equal(t1, t2)
    other = RecurrentArithmeticTask(seed=2)
    assert not np.array_equal(
        first_batches(other, 1)[0][0], first_batches(first, 1)[0][0]
    )
    assert len({RecurrentArithmeticTask(seed=seed).offset for seed in range(8)}) > 1
    small = {"test_size": 4}
    np.testing.assert_array_equal(
        RecurrentArithmeticTask(seed=1, **small).test_data()[0],
        RecurrentArithmeticTask(seed=9, **small).test_data()[0],
    )
    np.testing.assert_array_equal(
        first.validation_data()[0], RecurrentArithmeticTask(seed=5).validation_data()[0]
    )


def test_evaluation_datasets():
    task = RecurrentArithmeticTask(**SMALL)
    batches = list(task.test_dataset(batch_size=5))
    assert [x.shape for x, _ in batches] == [(5, 1000, 10)] * 3 + [(1, 1000, 10)]
    assert len(list(task.validation_dataset())) == 1


def test_target_accepts_any_length():
    task = RecurrentArithmeticTask("add", seed=0)
    x = np.ones((2, 1000, 10), np.float32)
    np.testing.assert_array_equal(task.target(x), np.full((2, 1), 4000.0))
    assert tf.is_tensor(task.target(tf.ones((1, 3, 10))))


def test_long_multiplication_warns():
    with pytest.warns(UserWarning, match="test_length=1000"):
        RecurrentArithmeticTask("mul")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RecurrentArithmeticTask("mul", test_length=100)
        RecurrentArithmeticTask("add")


@pytest.mark.parametrize(
    "config, fragments",
    [
        ({"train_length": 0}, ["train_length=0"]),
        ({"test_length": 1.5}, ["test_length=1.5"]),
        ({"input_size": 3}, ["input_size=3", "subset_ratio=0.25"]),
        ({"operation": "max"}, ["operation='max'"]),
        ({"interpolation_range": "U[1,0]"}, ["interpolation_range=U[1, 0]"]),
        (
            {"operation": "div", "extrapolation_range": "U[-6,-2]∪U[2,6]"},
            ["extrapolation_range=U[-6, -2] ∪ U[2, 6]"],
        ),
        ({"explicit_subsets": ((0, 11),)}, ["explicit_subsets=((0, 11),)"]),
        (  # (2 · 10 · 1e18)² over the 10 training steps
            {"operation": "mul", "interpolation_range": "U[1,1e18]"},
            ["up to 4e+38 over train_length=10 steps", "interpolation_range=U[1,"],
        ),
        (
            {"operation": "mul", "test_length": 10**6, "extrapolation_range": "1,1e13"},
            ["over test_length=1000000 steps", "=U[1, 10000000000000]"],
        ),
    ],
)
def test_bad_configs(config, fragments):
    with pytest.raises(ValueError) as info:
        RecurrentArithmeticTask(**config)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_sample_checks_length_and_split():
    task = RecurrentArithmeticTask()
    with pytest.raises(ValueError, match="length=0"):
        task.sample(2, "interpolation", 0, length=0)
    with pytest.raises(ValueError, match="which='test'"):
        task.sample(2, "test", 0)


def test_config_round_trip():
    task = RecurrentArithmeticTask(
        "sub", train_length=20, test_length=50, seed=4, interpolation_range="1,3"
    )
    config = json.loads(json.dumps(task.to_config()))
    assert config["train_length"] == 20 and config["test_length"] == 50
    restored = RecurrentArithmeticTask.from_config(config)
    assert restored == task and restored.subsets == task.subsets
    changed = task.replace(test_length=100)
    assert changed.test_length == 100 and changed.subsets == task.subsets
