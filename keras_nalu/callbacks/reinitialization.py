"""`Reinitialization`: re-draws the weights when the loss stalls (iNALU)."""

import keras

from keras_nalu._api import export
from keras_nalu._validation import check_non_negative, check_positive_int
from keras_nalu.callbacks.utils import loss_stalled, reset_optimizer_slots
from keras_nalu.keras_utils import iter_layers, optimizer_step
from keras_nalu.regularizers import find_scheduled_regularizers


def _reseeded(initializer, seed_generator):
    """`initializer` drawing from `seed_generator`: new values at every call.

    Keras initializers with an integer seed, or none, repeat their values.
    """
    config = initializer.get_config()
    if "seed" not in config:
        return initializer  # deterministic (zeros, constants): same values
    config["seed"] = seed_generator
    return type(initializer)(**config)


def _own_trainable_weights(layer) -> list:
    # Keras 3 keeps a layer's own variables apart from its sublayers'.
    return list(getattr(layer, "_trainable_variables", []))


_NAMED_INITIALIZERS = {"recurrent_kernel": "recurrent_initializer"}


def _initializer_of(layer, variable):
    recorded = getattr(layer, "initializer_of", None)
    if callable(recorded) and recorded(variable) is not None:
        return recorded(variable)
    name = _NAMED_INITIALIZERS.get(variable.name, f"{variable.name}_initializer")
    initializer = getattr(layer, name, None)
    if initializer is None:
        raise ValueError(
            f"Reinitialization cannot tell which initializer drew weight "
            f"'{variable.path}' of layer '{layer.name}' "
            f"({type(layer).__name__}); pass initializer=... to draw every "
            "weight from one."
        )
    return initializer


def _worker_count(model) -> int:
    """How many workers (machines) train `model`: 1 outside multi-worker."""
    if keras.backend.backend() != "tensorflow":
        return 1
    import tensorflow as tf

    strategy = getattr(model, "_distribute_strategy", None)
    if strategy is None and tf.distribute.has_strategy():
        strategy = tf.distribute.get_strategy()
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 1
    resolver = strategy.cluster_resolver
    spec = resolver.cluster_spec().as_dict() if resolver is not None else {}
    return max(1, sum(len(tasks) for job, tasks in spec.items() if job != "ps"))


@export
class Reinitialization(keras.callbacks.Callback):
    """Re-draws the weights when the loss stalls above a threshold (iNALU).

    Every `every` epochs, with the per-epoch values of `monitor` recorded since
    the start (or the last reinitialization), the test of `loss_stalled`:

        mean(first half) <= mean(second half) + std(second half)
        and mean(second half) > loss_threshold

    (or a non-finite loss) re-draws every trainable weight of the chosen
    layers from the initializer that drew it (`ArithmeticLayer`s record it;
    Keras layers' `<weight>_initializer` attributes), re-seeded so the draw is
    new, applies the weight's constraint, and zeroes the optimizer's state of
    those weights (Adam's m and v, SGD's momentum, RMSprop's accumulators;
    see `optimizer_slots`). Loss-gated regularizers of those layers are
    switched off, the history is cleared, and the number of
    reinitializations so far is written into `logs["reinitializations"]`.

    The authors test the per-step losses of the last ≥ 10⁴ steps every 10
    epochs of 10³ steps and re-draw all weights from U[-2, 2]; here the
    history holds epoch means (pass `initializer=keras.initializers.
    RandomUniform(-2, 2)` for their draw).

    Args:
        every: test every this many epochs (and only with at least this many
            recorded); default 10.
        loss_threshold: the loss above which a stall triggers; default 1.
        monitor: the `logs` key of the loss; default `"loss"` (`"mse"` with
            `metrics=["mse"]` leaves regularizers out).
        layers: names of the layers to re-draw (nested layers are found by
            name); None for every layer with trainable weights.
        initializer: one initializer for every weight instead of their own.
        seed: seed of the re-draws (None: nondeterministic; an integer is
            required when several workers train the model, so that they all
            draw the same weights).

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.NAU(1)])
    >>> model.compile(keras.optimizers.SGD(0.0), "mse")  # the loss cannot fall
    >>> reinit = keras_nalu.callbacks.Reinitialization(every=2, seed=0)
    >>> before = keras.ops.convert_to_numpy(model.layers[0].kernel)
    >>> history = model.fit(np.ones((4, 2)), np.full((4, 1), 100.0), epochs=2,
    ...                     callbacks=[reinit], verbose=0)
    >>> after = keras.ops.convert_to_numpy(model.layers[0].kernel)
    >>> reinit.reinitializations, bool((after != before).any())
    (1, True)

    Reference: a NALU course report, §5.1; Schlör, Ring, Hotho, "iNALU" (2020), §3 and
    the authors' training script.
    """

    def __init__(
        self,
        every: int = 10,
        loss_threshold: float = 1.0,
        monitor: str = "loss",
        layers=None,
        initializer=None,
        seed: int | None = None,
    ):
        super().__init__()
        self.every = check_positive_int("Reinitialization", "every", every)
        self.loss_threshold = check_non_negative(
            "Reinitialization", "loss_threshold", loss_threshold
        )
        self.monitor = monitor
        self.layers = None if layers is None else [str(name) for name in layers]
        self.initializer = (
            None if initializer is None else keras.initializers.get(initializer)
        )
        self.seed = seed
        self.history = []
        self.reinitializations = 0
        self._seed_generator = None

    def target_layers(self) -> list:
        """The layers whose weights a reinitialization re-draws."""
        layers = [layer for layer in iter_layers(self.model) if layer is not self.model]
        if self.layers is None:
            return [layer for layer in layers if _own_trainable_weights(layer)]
        by_name = {layer.name: layer for layer in layers}
        missing = [name for name in self.layers if name not in by_name]
        if missing:
            raise ValueError(
                f"Reinitialization: no layer named {missing} in model "
                f"'{self.model.name}'. Layers: {sorted(by_name)}"
            )
        return [by_name[name] for name in self.layers]

    def on_train_begin(self, logs=None):
        self.history = []
        if self.seed is None and _worker_count(self.model) > 1:
            # Each worker would draw its own weights: the workers' copies of
            # the model would silently part.
            raise ValueError(
                "Reinitialization needs an integer seed when training on "
                f"{_worker_count(self.model)} workers, so that every worker "
                "re-draws the same weights. Received: seed=None"
            )
        if self._seed_generator is None:
            self._seed_generator = keras.random.SeedGenerator(self.seed)
        self.target_layers()  # fails now, not after `every` epochs, on bad names

    def on_epoch_end(self, epoch, logs=None):
        logs = {} if logs is None else logs
        if self.monitor not in logs:
            raise ValueError(
                f"Reinitialization monitors '{self.monitor}', which is not in "
                f"the logs. Available: {sorted(logs)}"
            )
        self.history.append(float(logs[self.monitor]))
        if (
            (epoch + 1) % self.every == 0
            and len(self.history) >= self.every
            and loss_stalled(self.history, self.loss_threshold)
        ):
            self.reinitialize()
        logs["reinitializations"] = self.reinitializations

    def reinitialize(self) -> None:
        """Re-draws the weights and zeroes their optimizer state now."""
        if self._seed_generator is None:
            self._seed_generator = keras.random.SeedGenerator(self.seed)
        layers = self.target_layers()
        variables = []
        for layer in layers:
            for variable in _own_trainable_weights(layer):
                initializer = self.initializer or _initializer_of(layer, variable)
                initializer = _reseeded(initializer, self._seed_generator)
                value = initializer(variable.shape, dtype=variable.dtype)
                if getattr(variable, "constraint", None) is not None:
                    value = variable.constraint(value)
                variable.assign(value)
                variables.append(variable)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            reset_optimizer_slots(optimizer, variables)
        step = optimizer_step(self.model) if optimizer is not None else 0
        for layer in layers:
            for regularizer in find_scheduled_regularizers(layer, sublayers=False):
                if regularizer.loss_gated:
                    regularizer.set_enabled(False, step)
        self.history = []
        self.reinitializations += 1

    def get_config(self):
        return {
            "every": self.every,
            "loss_threshold": self.loss_threshold,
            "monitor": self.monitor,
            "layers": self.layers,
            "initializer": (
                None
                if self.initializer is None
                else keras.initializers.serialize(self.initializer)
            ),
            "seed": self.seed,
        }
