"""One sequential-MNIST run: its configuration, the fit, the test per length."""

from __future__ import annotations

import dataclasses
import math
import time

import keras
import numpy as np
from keras import ops

from keras_nalu._validation import (
    check_choice,
    check_positive_int,
    check_steps,
)
from keras_nalu.callbacks import ProgressBar
from keras_nalu.experiments.arithmetic import fit_epochs
from keras_nalu.experiments.mnist.models import (
    DEFAULT_UNIT,
    UNITS,
    build_mnist_model,
)
from keras_nalu.keras_utils import optimizer_step
from keras_nalu.tasks.mnist import OPERATIONS, SequentialMnistTask


@dataclasses.dataclass(frozen=True)
class MnistConfig:
    """One sequential-MNIST run; every field is a `keras-nalu mnist` flag.

    `train_length` and `test_lengths` left as None take the paper's values:
    product trains on 2 and tests on 1–20 (Madsen & Johansen 2020, §4.2); sum and count
    train on 10 and test on 1, 10, 100, 1000 (Trask et al. 2018, §4.2). `sparsity`,
    `sparsity_start` and `sparsity_end` left as None take `MNIST_SPARSITY`.
    """

    operation: str = "product"
    unit: str | None = None
    seed: int = 0
    iterations: int = 5_000
    eval_every: int = 500
    batch_size: int = 64
    eval_batch_size: int = 16
    learning_rate: float = 1e-3
    z_strength: float | None = None
    sparsity: float | None = None
    sparsity_start: int | None = None
    sparsity_end: int | None = None
    hidden_size: int = 32
    train_length: int | None = None
    test_lengths: tuple[int, ...] | None = None
    validation_sequences: int = 1_000
    test_sequences: int = 1_000
    source: str = "tfds"
    data_dir: str | None = None
    download: bool = False
    jit_compile: bool = False

    def __post_init__(self):
        check_choice("MnistConfig", "operation", self.operation, OPERATIONS)
        unit = DEFAULT_UNIT[self.operation] if self.unit is None else self.unit
        check_choice("MnistConfig", "unit", unit, UNITS)
        object.__setattr__(self, "unit", unit)
        if self.train_length is None:
            length = 2 if self.operation == "product" else 10
            object.__setattr__(self, "train_length", length)
        if self.test_lengths is None:
            lengths = (
                tuple(range(1, 21))
                if self.operation == "product"
                else (1, 10, 100, 1000)
            )
            object.__setattr__(self, "test_lengths", lengths)
        object.__setattr__(
            self, "test_lengths", tuple(int(n) for n in self.test_lengths)
        )
        for name in ("iterations", "eval_every", "batch_size", "eval_batch_size"):
            check_positive_int("MnistConfig", name, getattr(self, name))
        check_steps("MnistConfig", self.iterations, self.eval_every)
        self.task()

    def task(self) -> SequentialMnistTask:
        return SequentialMnistTask(
            operation=self.operation,
            train_length=self.train_length,
            test_lengths=self.test_lengths,
            batch_size=self.batch_size,
            eval_batch_size=self.eval_batch_size,
            validation_sequences=self.validation_sequences,
            test_sequences=self.test_sequences,
            source=self.source,
            data_dir=self.data_dir,
            download=self.download,
            seed=self.seed,
        )

    def to_config(self) -> dict:
        config = dataclasses.asdict(self)
        config["test_lengths"] = list(self.test_lengths)
        return config

    @property
    def name(self) -> str:
        return f"mnist-{self.operation}-{self.unit}-seed{self.seed}"


class _KeepBest(keras.callbacks.Callback):
    """Keeps the weights of the lowest validation MSE (early stopping)."""

    def __init__(self):
        super().__init__()
        self.best_mse = math.inf
        self.best_step = 0
        self.best_weights = None
        self.history: list[list[float]] = []

    def on_epoch_end(self, epoch, logs=None):
        mse = float((logs or {}).get("val_mse", math.nan))
        step = optimizer_step(self.model)
        self.history.append([step, float((logs or {}).get("mse", math.nan)), mse])
        if math.isfinite(mse) and mse < self.best_mse:
            self.best_mse, self.best_step = mse, step
            self.best_weights = self.model.get_weights()


def evaluate_lengths(model, task: SequentialMnistTask, lengths=None) -> dict:
    """Test MSE and MAE per length, and the digit accuracy at length 1.

    The accuracy (Trask et al. 2018, Table 2, "classification") rounds the length-1
    prediction (sum, product) or takes its argmax (count).

    Returns:
        `{"test_lengths": [...], "test_mse": [...], "test_mae": [...],
        "digit_accuracy": float or None}`.
    """
    import tensorflow as tf

    lengths = task.test_lengths if lengths is None else tuple(lengths)

    # One graph per sequence length; eager would step the RNN op by op.
    @tf.function(autograph=False)
    def predict(images):
        return model(images, training=False)

    result = {"test_lengths": list(lengths), "test_mse": [], "test_mae": []}
    result["digit_accuracy"] = None
    for length in lengths:
        squared = absolute = 0.0
        count = correct = total = 0
        for images, targets in task.test_dataset(length):
            predictions = np.asarray(predict(images))
            targets = targets.numpy()
            error = predictions.astype(np.float64) - targets
            squared += float(np.sum(error**2))
            absolute += float(np.sum(np.abs(error)))
            count += error.size
            if length == 1:
                if task.operation == "count":
                    hits = predictions.argmax(-1) == targets.argmax(-1)
                else:
                    hits = np.round(predictions) == targets
                correct += int(hits.sum())
                total += hits.size
        result["test_mse"].append(squared / count)
        result["test_mae"].append(absolute / count)
        if length == 1 and total:
            result["digit_accuracy"] = correct / total
    return result


def run_mnist(
    config: MnistConfig, verbose: bool = True, callbacks=()
) -> tuple[keras.Model, dict]:
    """Trains `config`, restores the best-validation weights, tests every length.

    Returns:
        `(model, record)`; the JSON-able record holds the config, the task,
        `best_step` and `validation_mse` (early stopping on the validation
        MSE, evaluated every `eval_every` steps), `test_lengths`, `test_mse`,
        `test_mae`, `digit_accuracy`, the recurrent unit's effective weights
        (`ArithmeticLayer.effective_weights`: `kernel`, and `mul_kernel` for
        a NALU; `kernel` is None for the LSTM), wall time and the evaluation
        `history` as `[step, train_mse, validation_mse]` rows.
    """
    task = config.task()
    keras.utils.set_random_seed(config.seed)
    model, unit_callbacks = build_mnist_model(
        config.operation,
        config.unit,
        learning_rate=config.learning_rate,
        z_strength=config.z_strength,
        sparsity=config.sparsity,
        sparsity_start=config.sparsity_start,
        sparsity_end=config.sparsity_end,
        hidden_size=config.hidden_size,
        jit_compile=config.jit_compile,
    )
    keep_best = _KeepBest()
    all_callbacks = [*unit_callbacks, keep_best, *callbacks]
    if verbose:
        all_callbacks.append(
            ProgressBar(config.iterations, keys=("loss",), description=config.name)
        )
    steps_per_epoch, epochs = fit_epochs(config)
    started = time.perf_counter()
    model.fit(
        task.train_dataset(),
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        validation_data=task.validation_dataset(),
        callbacks=all_callbacks,
        shuffle=False,
        verbose=0,
    )
    train_time = time.perf_counter() - started
    if keep_best.best_weights is not None:
        model.set_weights(keep_best.best_weights)
    unit = model.unit
    record = {
        "name": config.name,
        "config": config.to_config(),
        "task": task.to_config(),
        "best_step": keep_best.best_step,
        "validation_mse": keep_best.best_mse,
        **evaluate_lengths(model, task),
        "kernel": None,
        **{
            name: ops.convert_to_numpy(weights).tolist()
            for name, weights in (
                {} if unit is None else unit.effective_weights()
            ).items()
        },
        "iterations": optimizer_step(model),
        "train_time": train_time,
        "wall_time": time.perf_counter() - started,
        "history": keep_best.history,
    }
    return model, record
