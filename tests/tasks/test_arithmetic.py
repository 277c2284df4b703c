"""ArithmeticTask and the simple function task: geometry, data, checks, config."""

import dataclasses
import itertools
import json
import warnings

import numpy as np
import pytest
import tensorflow as tf

from keras_nalu.tasks import (
    OPERATIONS,
    TASKS,
    ArithmeticTask,
    Range,
    RecurrentArithmeticTask,
    get_task,
    simple_function_task,
)
from keras_nalu.tasks.arithmetic import stacked_targets
from keras_nalu.tasks.operations import apply_operation

SMALL = {"validation_size": 300, "test_size": 300, "batch_size": 32}


def numpy_target(operation, x, subsets):
    """t recomputed in float64 from the inputs and the declared subsets."""
    x = np.asarray(x, dtype=np.float64)
    a = [x[..., start:end].sum(axis=-1, keepdims=True) for start, end in subsets]
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


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("seed", [0, 7])
def test_targets_match_numpy(operation, seed):
    task = ArithmeticTask(operation, seed=seed, **SMALL)
    data = {
        "train": first_batches(task, 2),
        "validation": [task.validation_data()],
        "test": [task.test_data()],
        "sample": [tuple(v.numpy() for v in task.sample(64, "extrapolation", 5))],
    }
    for name, batches in data.items():
        for x, t in batches:
            assert x.dtype == np.float32 and t.dtype == np.float32, name
            assert t.shape == (x.shape[0], 1), name
            # float32 sums: a - b cancels, so allow float32 rounding of the sums.
            scale = np.abs(x).sum(axis=-1, keepdims=True)
            np.testing.assert_allclose(
                t,
                numpy_target(operation, x, task.subsets),
                rtol=2e-5,
                atol=1e-6 * scale.max(),
                err_msg=name,
            )


def test_target_keeps_the_input_kind():
    task = ArithmeticTask("mul")
    x = np.ones((3, 100), np.float64)
    assert isinstance(task.target(x), np.ndarray)
    assert task.target(x).dtype == np.float64
    np.testing.assert_array_equal(task.target(x), np.full((3, 1), 625.0))
    assert tf.is_tensor(task.target(tf.ones((3, 100))))
    # Leading axes are kept.
    assert task.target(np.ones((2, 3, 100))).shape == (2, 3, 1)


@pytest.mark.parametrize(
    "interpolation_range, extrapolation_range",
    [
        ("U[1,2]", "U[2,6]"),
        ("U[-2,-1]", "U[-6,-2]"),
        ("U[0.1,0.2]", "U[0.2,2]"),
        ("U[10,20]", "U[20,40]"),
    ],
)
def test_samples_lie_in_their_ranges(interpolation_range, extrapolation_range):
    task = ArithmeticTask(
        "mul",
        interpolation_range=interpolation_range,
        extrapolation_range=extrapolation_range,
        **SMALL,
    )
    for x, _ in first_batches(task, 3) + [task.validation_data()]:
        assert task.interpolation_range.contains(x).all()
    assert task.extrapolation_range.contains(task.test_data()[0]).all()


def test_union_range_uses_every_part():
    task = ArithmeticTask(
        "mul",
        interpolation_range="U[-2,2]",
        extrapolation_range="U[-6,-2] ∪ U[2,6]",
        **SMALL,
    )
    x, _ = task.test_data()
    assert task.extrapolation_range.contains(x).all()
    assert (x < 0).any() and (x > 0).any()
    assert not ((x > -2) & (x < 2)).any()
    train_x = np.concatenate([x for x, _ in first_batches(task, 3)])
    assert (train_x < 0).any() and (train_x > 0).any()


@pytest.mark.parametrize("seed", range(12))
def test_default_geometry(seed):
    task = ArithmeticTask(seed=seed)
    k = task.offset
    assert (task.subset_length, task.overlap_length, task.total_length) == (25, 12, 38)
    assert 0 <= k <= 62
    assert task.subsets == ((k, k + 25), (k + 13, k + 38))
    expected = np.random.default_rng(seed).integers(0, 62, endpoint=True)
    assert k == expected
    assert task.input_shape == (100,)


def test_offsets_cover_their_interval():
    offsets = {ArithmeticTask(seed=seed).offset for seed in range(600)}
    assert min(offsets) == 0 and max(offsets) == 62
    assert len(offsets) == 63


@pytest.mark.parametrize(
    "config, subsets",
    [
        ({"num_subsets": 3, "seed": 0}, None),
        ({"input_size": 20, "subset_ratio": 0.5, "overlap_ratio": 1.0}, None),
        ({"input_size": 10, "subset_ratio": 0.3, "overlap_ratio": 0.0}, None),
        ({"explicit_subsets": [[0, 3], [5, 9]]}, ((0, 3), (5, 9))),
    ],
)
def test_other_geometries(config, subsets):
    task = ArithmeticTask(**config)
    if subsets is None:
        length = task.subset_length
        stride = length - task.overlap_length
        subsets = tuple(
            (task.offset + i * stride, task.offset + i * stride + length)
            for i in range(task.num_subsets)
        )
        assert subsets[-1][1] <= task.input_size
    assert task.subsets == subsets


def test_same_seed_same_data():
    first, second = ArithmeticTask("sub", seed=3), ArithmeticTask("sub", seed=3)
    assert first.subsets == second.subsets
    for (x1, t1), (x2, t2) in zip(first_batches(first, 3), first_batches(second, 3)):
        np.testing.assert_array_equal(x1, x2)
        np.testing.assert_array_equal(t1, t2)


def test_different_seeds_different_offsets_and_streams():
    offsets = [ArithmeticTask(seed=seed).offset for seed in range(8)]
    assert len(set(offsets)) > 1
    streams = [first_batches(ArithmeticTask(seed=seed), 2) for seed in range(3)]
    for a, b in itertools.combinations(streams, 2):
        assert not np.array_equal(a[0][0], b[0][0])
    # Consecutive batches of one stream differ too.
    assert not np.array_equal(streams[0][0][0], streams[0][1][0])


def test_train_stream_shapes_and_resumption():
    task = ArithmeticTask("div", batch_size=16)
    dataset = task.train_dataset()
    assert dataset.element_spec[0].shape == (16, 100)
    assert dataset.element_spec[1].shape == (16, 1)
    assert dataset.element_spec[0].dtype == tf.float32
    batches = first_batches(task, 4)
    resumed = list(itertools.islice(task.train_dataset(initial_batch=2), 2))
    for (x, t), (rx, rt) in zip(batches[2:], resumed):
        np.testing.assert_array_equal(x, rx.numpy())
        np.testing.assert_array_equal(t, rt.numpy())


def test_validation_and_test_sets_are_fixed():
    task = ArithmeticTask("mul", seed=0)
    x_val, t_val = task.validation_data()
    x_test, t_test = task.test_data()
    assert x_val.shape == (10_000, 100) and x_test.shape == (10_000, 100)
    assert task.interpolation_range.contains(x_val).all()
    assert task.extrapolation_range.contains(x_test).all()
    # Identical across calls, instances and experiment seeds (inputs).
    for other in (task, ArithmeticTask("mul", seed=0), ArithmeticTask("add", seed=1)):
        np.testing.assert_array_equal(other.validation_data()[0], x_val)
        np.testing.assert_array_equal(other.test_data()[0], x_test)
    np.testing.assert_array_equal(task.validation_data()[1], t_val)
    np.testing.assert_array_equal(task.test_data()[1], t_test)
    # Targets follow the seed's subsets.
    other = ArithmeticTask("mul", seed=1)
    assert other.subsets != task.subsets
    assert not np.array_equal(other.validation_data()[1], t_val)
    # Independent of the training stream and of each other.
    train_x = first_batches(task, 1)[0][0]
    val_rows = {row.tobytes() for row in x_val}
    assert not any(row.tobytes() in val_rows for row in train_x)
    # Different seeds: the underlying uniform draws differ too.
    assert not np.allclose((x_test - 2) / 4, x_val - 1, atol=1e-3)
    # Fixed seeds are what pin them.
    moved = ArithmeticTask("mul", validation_seed=1).validation_data()[0]
    assert not np.array_equal(moved, x_val)
    # The shared inputs cannot be changed in place by one caller.
    with pytest.raises(ValueError):
        x_val[0, 0] = 0.0


def test_evaluation_datasets_batch_the_fixed_sets():
    task = ArithmeticTask("add")
    batches = list(task.validation_dataset())
    assert [len(x) for x, _ in batches] == [2500] * 4
    np.testing.assert_array_equal(
        np.concatenate([x for x, _ in batches]), task.validation_data()[0]
    )
    small = ArithmeticTask("add", **SMALL)
    test_batches = list(small.test_dataset(batch_size=128))
    assert [len(x) for x, _ in test_batches] == [128, 128, 44]
    np.testing.assert_array_equal(
        np.concatenate([t for _, t in test_batches]), small.test_data()[1]
    )


def test_sample_rejects_unknown_split():
    with pytest.raises(ValueError, match="which='training'"):
        ArithmeticTask().sample(4, "training", seed=0)


def test_simple_function_task():
    task = simple_function_task(seed=2, **SMALL)
    assert task.input_shape == (4,)
    assert task.subsets == ((0, 2), (0, 4))
    assert task.offset == 0
    sets = first_batches(task, 2) + [task.validation_data(), task.test_data()]
    for x, t in sets:
        x64 = x.astype(np.float64)
        expected = (x64[:, 0] + x64[:, 1]) * x64.sum(axis=1)
        np.testing.assert_allclose(t[:, 0], expected, rtol=1e-5)
    np.testing.assert_allclose(task.target(np.array([[1.0, 2.0, 3.0, 4.0]])), [[30]])
    assert simple_function_task(seed=2) == simple_function_task(seed=2)
    # The seed moves the training stream only.
    other = simple_function_task(seed=3, **SMALL)
    assert other.subsets == task.subsets
    assert not np.array_equal(first_batches(other, 1)[0][0], sets[0][0])
    assert simple_function_task(interpolation_range="U[-2,2]").interpolation_range == (
        Range.parse("U[-2,2]")
    )


BAD_CONFIGS = [
    ({"operation": "pow"}, ["operation", "'pow'"]),
    ({"input_size": 0}, ["input_size=0"]),
    ({"input_size": 2.5}, ["input_size=2.5"]),
    ({"input_size": True}, ["input_size=True"]),
    ({"batch_size": 0}, ["batch_size=0"]),
    ({"num_subsets": 0}, ["num_subsets=0"]),
    ({"validation_size": -1}, ["validation_size=-1"]),
    ({"test_size": "10"}, ["test_size='10'"]),
    ({"subset_ratio": 0}, ["subset_ratio=0"]),
    ({"subset_ratio": 1.5}, ["subset_ratio=1.5"]),
    ({"subset_ratio": float("nan")}, ["subset_ratio=nan"]),
    ({"overlap_ratio": -0.1}, ["overlap_ratio=-0.1"]),
    ({"overlap_ratio": 1.1}, ["overlap_ratio=1.1"]),
    ({"seed": -1}, ["seed=-1"]),
    ({"validation_seed": 1.5}, ["validation_seed=1.5"]),
    ({"test_seed": None}, ["test_seed=None"]),
    (
        {"subset_ratio": 0.6, "overlap_ratio": 0.0},
        ["input_size=100", "subset_ratio=0.6", "overlap_ratio=0.0", "num_subsets=2"],
    ),
    ({"num_subsets": 7}, ["num_subsets=7", "input_size=100"]),
    ({"input_size": 3}, ["subset_ratio=0.25", "input_size=3"]),
    ({"explicit_subsets": ()}, ["explicit_subsets=()"]),
    ({"explicit_subsets": ((0, 101),)}, ["explicit_subsets=((0, 101),)"]),
    ({"explicit_subsets": ((-1, 3),)}, ["explicit_subsets=((-1, 3),)"]),
    ({"explicit_subsets": ((2, 2),)}, ["explicit_subsets=((2, 2),)"]),
    ({"explicit_subsets": ((0, 1, 2),)}, ["explicit_subsets=((0, 1, 2),)"]),
    ({"explicit_subsets": ((0.0, 2.0),)}, ["explicit_subsets=((0.0, 2.0),)"]),
    ({"explicit_subsets": 3}, ["explicit_subsets=3"]),
    ({"interpolation_range": "U[2,1]"}, ["interpolation_range=U[2, 1]"]),
    ({"extrapolation_range": "U[3,3]"}, ["extrapolation_range=U[3, 3]"]),
    ({"extrapolation_range": "nonsense"}, ["extrapolation_range='nonsense'"]),
    (
        {"operation": "div", "interpolation_range": "U[-1,1]"},
        ["interpolation_range=U[-1, 1]", "div"],
    ),
    (
        {"operation": "div", "interpolation_range": "U[0,1]"},
        ["interpolation_range=U[0, 1]"],
    ),
    (
        {"operation": "div", "extrapolation_range": "U[-6,-2] ∪ U[2,6]"},
        ["extrapolation_range=U[-6, -2] ∪ U[2, 6]"],
    ),
    (
        {"operation": "root", "extrapolation_range": "U[-6,-2]"},
        ["extrapolation_range=U[-6, -2]", "root"],
    ),
    (
        {"operation": "root", "interpolation_range": "U[-2,2]"},
        ["interpolation_range to hold no negative numbers", "Received: inter"],
    ),
    (
        {"operation": "mul", "interpolation_range": "U[1e20,1e21]"},
        ["interpolation_range to give targets within float32", "6.25e+44"],
    ),
    (
        {"operation": "mul", "extrapolation_range": "U[1e21,1e22]"},
        ["Received: extrapolation_range=U[1e+21, 1e+22]", "inf in float32"],
    ),
    (
        {"operation": "squared", "extrapolation_range": "U[-1e18,1]"},
        ["extrapolation_range=U[-1e+18, 1]", "6.25e+38"],
    ),
    (
        {"operation": "add", "extrapolation_range": "U[1e37,3e38]"},
        ["extrapolation_range=U[1e+37, 3e+38]", "1.5e+40"],
    ),
]


@pytest.mark.parametrize("config, fragments", BAD_CONFIGS)
def test_bad_configs_raise_naming_parameter_and_value(config, fragments):
    with pytest.raises(ValueError) as info:
        ArithmeticTask(**config)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_targets_up_to_float32s_largest_number_are_accepted():
    # a·b over 25 inputs of U[1e17, 7e17]: up to (25 · 7e17)² = 3.06e38
    with pytest.warns(UserWarning, match="2\\*\\*24"):
        ArithmeticTask("mul", extrapolation_range="U[1e17,7e17]")
    with pytest.raises(ValueError, match="up to 4e\\+38"):
        ArithmeticTask("mul", extrapolation_range="U[1e17,8e17]")


@pytest.mark.parametrize(
    "config",
    [
        {"operation": operation}
        for operation in OPERATIONS
        if operation not in ("div", "root")
    ]
    + [
        {"operation": "div"},
        {"operation": "div", "interpolation_range": "U[-2,-1]"},
        {"operation": "div", "extrapolation_range": "U[-6,-2]"},
        {"operation": "root"},
        {"operation": "mul", "interpolation_range": "U[10,20]"},
        {"operation": "mul", "extrapolation_range": "U[20,40]"},
        {"operation": "div", "num_subsets": 1, "interpolation_range": "U[-1,1]"},
    ],
)
def test_supported_setups_do_not_warn(config):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ArithmeticTask(**config)


def test_huge_targets_warn():
    with pytest.warns(UserWarning, match="2\\*\\*24"):
        ArithmeticTask("mul", extrapolation_range="U[500,1000]")


ROUND_TRIP_TASKS = [
    ArithmeticTask(),
    ArithmeticTask("div", seed=11, batch_size=7, interpolation_range="U[-2,-1]"),
    ArithmeticTask(
        "mul", interpolation_range="U[-2,2]", extrapolation_range="U[-6,-2]∪U[2,6]"
    ),
    ArithmeticTask("squared", num_subsets=3, subset_ratio=0.1, overlap_ratio=0.0),
    simple_function_task(seed=4),
]


@pytest.mark.parametrize("task", ROUND_TRIP_TASKS)
def test_config_round_trip(task):
    config = task.to_config()
    assert {field.name for field in dataclasses.fields(task)} == set(config)
    restored = ArithmeticTask.from_config(json.loads(json.dumps(config)))
    assert restored == task
    assert restored.subsets == task.subsets
    assert restored.to_config() == config
    assert hash(restored) == hash(task)


def test_constructor_normalizes_values():
    task = ArithmeticTask(
        interpolation_range=(1, 2),
        extrapolation_range="2,6",
        input_size=np.int64(100),
        explicit_subsets=[[0, 2], [1, 3]],
    )
    assert task == ArithmeticTask(explicit_subsets=((0, 2), (1, 3)))
    assert isinstance(task.interpolation_range, Range)
    assert type(task.input_size) is int


def test_replace_normalizes_and_validates():
    task = ArithmeticTask("add", seed=5)
    changed = task.replace(operation="mul", interpolation_range="U[0,1]")
    assert changed.operation == "mul" and task.operation == "add"
    assert changed.interpolation_range == Range(((0.0, 1.0),))
    assert changed.subsets == task.subsets
    assert task.replace(seed=6).offset == ArithmeticTask(seed=6).offset
    with pytest.raises(ValueError, match="batch_size=0"):
        task.replace(batch_size=0)


def test_tasks_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        ArithmeticTask().seed = 3


def test_get_task():
    assert TASKS == ("arithmetic", "simple", "recurrent")
    assert get_task("arithmetic", operation="sub") == ArithmeticTask("sub")
    assert get_task("simple", seed=3) == simple_function_task(seed=3)
    assert get_task("recurrent", seed=2) == RecurrentArithmeticTask(seed=2)
    config = simple_function_task(seed=1).to_config()
    assert get_task("simple", **config) == simple_function_task(seed=1)
    with pytest.raises(ValueError, match="name='static'"):
        get_task("static")


@pytest.mark.parametrize("operation", OPERATIONS)
def test_apply_operation_on_arrays_and_tensors(operation):
    sums = [np.array([[6.0], [9.0]]), np.array([[2.0], [3.0]])]
    expected = numpy_target(operation, np.concatenate(sums, axis=-1), ((0, 1), (1, 2)))
    result = apply_operation(operation, sums)
    assert isinstance(result, np.ndarray)
    np.testing.assert_allclose(result, expected)
    tensor = apply_operation(operation, [tf.constant(a) for a in sums])
    assert tf.is_tensor(tensor)
    np.testing.assert_allclose(tensor.numpy(), expected)


def test_apply_operation_rejects_unknown():
    with pytest.raises(ValueError, match="operation='pow'"):
        apply_operation("pow", [1.0, 2.0])


@pytest.mark.parametrize("seed", [0, 3, 1001, 2**40 + 5, 2**63 - 1])
@pytest.mark.parametrize("data", [0, 5, 2**33])
def test_fold_in_is_tensorflows(seed, data):
    from keras_nalu.tasks._philox import fold_in

    key = tf.constant([seed, 1], tf.int64)
    expected = tf.random.experimental.stateless_fold_in(
        key, tf.constant(data, tf.int64)
    )
    assert fold_in((seed, 1), data) == tuple(int(v) for v in expected.numpy())


@pytest.mark.parametrize(
    "task",
    [
        ArithmeticTask(input_size=10, seed=3),
        ArithmeticTask(
            seed=5,
            interpolation_range="U[-2,2]",
            extrapolation_range="U[-6,-2] ∪ U[2,6]",
        ),
        ArithmeticTask(
            operation="div",
            seed=2**33,
            interpolation_range="U[2,6]",
            extrapolation_range="U[6,10]",
        ),
        simple_function_task(seed=7),
    ],
    ids=["add", "union", "div", "simple"],
)
def test_the_numpy_stream_draws_the_tf_data_inputs(task):
    """`train_batches` (no TensorFlow) yields the inputs of `train_dataset`
    bit for bit; the targets, summed in float64, agree to float32 rounding."""
    pairs = zip(task.train_dataset(initial_batch=7), task.train_batches(7))
    for index, ((x, t), (x_numpy, t_numpy)) in enumerate(itertools.islice(pairs, 4)):
        np.testing.assert_array_equal(x.numpy(), x_numpy)
        np.testing.assert_allclose(t.numpy(), t_numpy, rtol=2e-6)
        np.testing.assert_array_equal(task.train_inputs_numpy(7 + index), x_numpy)
        assert x_numpy.dtype == t_numpy.dtype == np.float32


def test_the_numpy_stream_refuses_a_negative_start_at_once():
    with pytest.raises(ValueError, match="initial_batch"):
        ArithmeticTask().train_batches(-1)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_stacked_targets_are_each_tasks_own_value_for_value(operation):
    rng = np.random.default_rng(0)
    tasks = [
        ArithmeticTask(operation=operation, input_size=12, seed=seed)
        for seed in range(6)
    ]
    tasks.append(ArithmeticTask(operation=operation, input_size=12, subset_ratio=0.5))
    x = rng.uniform(-3, 3, size=(50, 12)).astype(np.float32)
    own = np.stack([task.target(x) for task in tasks])
    np.testing.assert_array_equal(stacked_targets(tasks, x), own)
    # tasks that sum over time steps compute their own
    tasks = [
        RecurrentArithmeticTask(operation=operation, input_size=12, seed=seed)
        for seed in range(3)
    ]
    x = rng.uniform(-3, 3, size=(50, 4, 12)).astype(np.float32)
    own = np.stack([task.target(x) for task in tasks])
    np.testing.assert_array_equal(stacked_targets(tasks, x), own)


def test_a_task_that_sums_over_steps_says_so():
    # stacked_targets asks the class attribute, not whether a method is overridden
    from keras_nalu.tasks.subset_sum import SubsetSumTask

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    classes = set(subclasses(SubsetSumTask))
    assert {ArithmeticTask, RecurrentArithmeticTask} <= classes
    for cls in classes:
        overrides = cls._reduce_steps is not SubsetSumTask._reduce_steps
        assert cls.sums_over_steps is overrides, cls.__name__
