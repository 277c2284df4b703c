"""Callbacks that drive the units' training: regularization, reinitialization."""

import warnings

import keras
import numpy as np

from keras_nalu._api import export
from keras_nalu._validation import check_non_negative, check_positive_int
from keras_nalu.regularizers import (
    ScheduledRegularizer,
    held_scheduled_regularizers,
    schedule_factor,
    validate_schedule,
)


def iter_layers(model):
    """Every layer in `model`, nested ones included, each once."""
    seen = set()
    stack = [model]
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        yield layer
        stack.extend(getattr(layer, "_layers", []) or [])
        stack.extend(
            value
            for value in vars(layer).values()
            if isinstance(value, keras.layers.Layer)
        )


def find_scheduled_regularizers(model) -> list[ScheduledRegularizer]:
    """All `ScheduledRegularizer`s the model's layers and weights hold."""
    found = {}
    for layer in iter_layers(model):
        for regularizer in held_scheduled_regularizers(layer, layer.weights):
            found[id(regularizer)] = regularizer
    return list(found.values())


@export
class RegularizationSchedule(keras.callbacks.Callback):
    """Ramps every scheduled regularizer's strength with the optimizer step.

    Without arguments each regularizer follows its own schedule (the units'
    paper defaults, e.g. `NMU`: λ = 10 over steps 10⁶ → 2·10⁶). With
    `strength` (and optionally `start`, `end`, `mode`) one λ(t) is imposed on
    every scheduled regularizer of the model, as Madsen & Johansen (2020) does for all
    layers of a network:

        λ(t) = λ · max(min((t - start) / (end - start), 1), 0)      (eq. 14)

    `t` is read from `model.optimizer.iterations`, so a resumed or reloaded
    model continues its schedule and `steps_per_execution > 1` stays exact
    at every execution boundary. The strength in force is written into `logs`
    (key `sparsity_strength` for `Sparsity`), where the progress bar, History
    and a TensorBoard callback listed after this one see it. On the JAX
    backend it schedules the regularizers of keras_nalu units (they list the
    strength among their variables) and warns about any other.

    Args:
        strength: λ to impose on every regularizer, or None for their own.
        start: step at which the ramp begins (with `strength`).
        end: step at which the ramp ends (with `strength`).
        mode: "linear" or "exp" (with `strength`).

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((4,)), keras_nalu.layers.NAU(2),
    ...                           keras_nalu.layers.NMU(1)])
    >>> model.compile("adam", "mse")
    >>> schedule = keras_nalu.callbacks.RegularizationSchedule(10.0, 2, 4)
    >>> history = model.fit(np.ones((8, 4)), np.ones((8, 1)), epochs=3,
    ...                     batch_size=4, callbacks=[schedule], verbose=0)
    >>> history.history["sparsity_strength"]
    [0.0, 5.0, 10.0]

    Reference: Madsen & Johansen (2020), §2.7 (eq. 14) and App. C.6.
    """

    def __init__(
        self,
        strength: float | None = None,
        start: int | None = None,
        end: int | None = None,
        mode: str = "linear",
    ):
        super().__init__()
        if strength is not None:
            check_non_negative("RegularizationSchedule", "strength", strength)
        elif start is not None or end is not None:
            raise ValueError(
                "RegularizationSchedule takes start and end only with strength. "
                f"Received: strength=None, start={start!r}, end={end!r}"
            )
        validate_schedule("RegularizationSchedule", start, end, mode)
        self.strength = strength
        self.start = start
        self.end = end
        self.mode = mode
        self._regularizers = []
        self._values = {}

    def strength_for(self, regularizer: ScheduledRegularizer, step: int) -> float:
        """λ(t) for one regularizer: the imposed schedule, or its own."""
        if self.strength is None:
            return regularizer.strength_at(step)
        if self.start is None:
            return float(self.strength)
        return self.strength * schedule_factor(step, self.start, self.end, self.mode)

    def on_train_begin(self, logs=None):
        self._regularizers = find_scheduled_regularizers(self.model)
        self._values = {}
        if not self._regularizers:
            warnings.warn(
                "RegularizationSchedule found no scheduled regularizer in the "
                "model (keras_nalu.regularizers.Sparsity/OutOfBounds); it does "
                "nothing.",
                stacklevel=2,
            )
        self._warn_if_frozen()
        self._update()

    def _warn_if_frozen(self):
        # Keras' JAX trainer compiles the train step with the model's
        # variables as arguments; any other variable is read once, at trace
        # time. keras_nalu units list their regularizers' strengths among
        # their variables (ArithmeticLayer.variables); other layers do not.
        if keras.backend.backend() != "jax":
            return
        state = {id(variable) for variable in self.model.variables}
        frozen = [r for r in self._regularizers if id(r.current_strength) not in state]
        if frozen:
            warnings.warn(
                f"RegularizationSchedule cannot change {len(frozen)} scheduled "
                "regularizer(s) of this model under the JAX backend: "
                f"{sorted({type(r).__name__ for r in frozen})} held by a layer "
                "that is not a keras_nalu unit (e.g. a Dense kernel_regularizer), "
                "so the compiled train step keeps the strength it had when "
                "traced. Put them on keras_nalu units, or use the TensorFlow "
                "backend.",
                stacklevel=2,
            )

    def on_train_batch_begin(self, batch, logs=None):
        self._update()

    def on_train_end(self, logs=None):
        # The last update ran before the last execution; after fit the
        # strength is λ(optimizer.iterations), the next step's (evaluate, save).
        self._update()

    def _update(self):
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        for regularizer in self._regularizers:
            value = self.strength_for(regularizer, step)
            if self._values.get(id(regularizer)) != value:
                regularizer.assign_strength(value)
                self._values[id(regularizer)] = value

    def current_strengths(self) -> dict[str, float]:
        """{log name: largest strength in force} over the found regularizers."""
        report = {}
        for regularizer in self._regularizers:
            value = self._values.get(id(regularizer), 0.0)
            name = regularizer.log_name
            report[name] = max(report.get(name, 0.0), value)
        return report

    def on_train_batch_end(self, batch, logs=None):
        if logs is not None:
            logs.update(self.current_strengths())

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs.update(self.current_strengths())

    def get_config(self):
        return {
            "strength": self.strength,
            "start": self.start,
            "end": self.end,
            "mode": self.mode,
        }


@export
class ProgressBar(keras.callbacks.Callback):
    """One tqdm progress bar over all optimizer steps of a run, with an ETA.

    Unlike Keras' per-epoch bar it counts optimizer steps (so it is right with
    `steps_per_execution > 1`) and shows the latest values of `keys` from
    `logs` (loss, extrapolation MSE, λ, ...).

    Args:
        total_steps: the number of optimizer steps the run will take.
        keys: log keys to show after the bar.
        description: text before the bar.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.NAU(1)])
    >>> model.compile("adam", "mse", steps_per_execution=2)
    >>> bar = keras_nalu.callbacks.ProgressBar(4, keys=("loss",))
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2,
    ...               callbacks=[bar], verbose=0)  # the bar goes to stderr
    >>> int(model.optimizer.iterations) == bar.total_steps  # steps, not calls
    True
    """

    def __init__(
        self,
        total_steps: int,
        keys=("loss", "extrapolation_mse", "sparsity_strength"),
        description: str = "train",
    ):
        super().__init__()
        self.total_steps = int(total_steps)
        self.keys = tuple(keys)
        self.description = description
        self._bar = None
        self._seen = 0

    def _step(self) -> int:
        return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def on_train_begin(self, logs=None):
        from tqdm.auto import tqdm

        self._seen = self._step()
        self._bar = tqdm(
            total=self.total_steps,
            initial=self._seen,
            desc=self.description,
            unit="step",
            mininterval=0.5,
            dynamic_ncols=True,
        )

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        self._bar.update(step - self._seen)
        self._seen = step
        if logs:
            shown = {k: f"{float(logs[k]):.3g}" for k in self.keys if k in logs}
            self._bar.set_postfix(shown, refresh=False)

    def on_train_end(self, logs=None):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def get_config(self):
        return {
            "total_steps": self.total_steps,
            "keys": list(self.keys),
            "description": self.description,
        }


def _loss_gated_regularizers(layers) -> list:
    found = {}
    for layer in layers:
        candidates = list(vars(layer).values())
        candidates += [getattr(w, "regularizer", None) for w in layer.weights]
        for candidate in candidates:
            if getattr(candidate, "loss_gated", False):
                found[id(candidate)] = candidate
    return list(found.values())


def _optimizer_step(model) -> int:
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))


@export
class LossGatedRegularization(keras.callbacks.Callback):
    """Switches loss-gated regularizers on while the loss is low enough.

    A loss-gated regularizer (`keras_nalu.regularizers.Saturation` with a
    `loss_threshold`, the iNALU's default) starts switched off. At the end of
    every epoch this callback switches each one on for the next epoch if at
    least its `warmup_epochs` epochs are done and the monitored value of the
    epoch is below its `loss_threshold`, and off otherwise. This is the
    iNALU recipe (the authors regularize after epoch 10 whenever the MSE is
    below 1) at epoch rather than step granularity.

    Monitor a loss without the regularizer itself — compile with
    `metrics=["mse"]` and pass `monitor="mse"` — or the regularizer's own
    contribution to `"loss"` can switch it off again. The strength in force
    is written into `logs` (key `saturation_strength`).

    Args:
        monitor: the `logs` key to read, default `"loss"`.

    Example:

    >>> import numpy as np, keras, keras_nalu
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.iNALU(1)])
    >>> model.compile("adam", "mse", metrics=["mse"])
    >>> switch = keras_nalu.callbacks.LossGatedRegularization(monitor="mse")
    >>> history = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2,
    ...                     callbacks=[switch], verbose=0)
    >>> history.history["saturation_strength"]  # off during the 10 warm-up epochs
    [0.0, 0.0]

    Reference: Schlör, Ring, Hotho, "iNALU" (2020), the authors' training
    script.
    """

    def __init__(self, monitor: str = "loss"):
        super().__init__()
        self.monitor = monitor
        self._regularizers = []

    def on_train_begin(self, logs=None):
        self._regularizers = _loss_gated_regularizers(iter_layers(self.model))
        if not self._regularizers:
            warnings.warn(
                "LossGatedRegularization found no loss-gated regularizer in the "
                "model (keras_nalu.regularizers.Saturation with a "
                "loss_threshold); it does nothing.",
                stacklevel=2,
            )

    def on_epoch_end(self, epoch, logs=None):
        if not self._regularizers:
            return
        logs = {} if logs is None else logs
        if self.monitor not in logs:
            raise ValueError(
                f"LossGatedRegularization monitors '{self.monitor}', which is "
                f"not in the logs. Available: {sorted(logs)}"
            )
        loss = float(logs[self.monitor])
        step = _optimizer_step(self.model)
        report = {}
        for regularizer in self._regularizers:
            regularizer.set_enabled(regularizer.wanted(epoch + 1, loss), step)
            name = regularizer.log_name
            value = regularizer.strength_at(step)
            report[name] = max(report.get(name, 0.0), value)
        logs.update(report)

    def get_config(self):
        return {"monitor": self.monitor}


#: Optimizer state per variable, by optimizer class: the attributes holding
#: one slot variable per trainable variable (Keras 3 optimizers).
_SLOT_ATTRIBUTES = (
    (keras.optimizers.Adam, ("_momentums", "_velocities", "_velocity_hats")),
    (keras.optimizers.SGD, ("momentums",)),
    (keras.optimizers.RMSprop, ("_velocities", "_momentums", "_average_gradients")),
)


def optimizer_slots(optimizer, variable) -> list:
    """The optimizer's per-variable state for `variable` (Adam m, v; ...).

    Handles Adam (and AdamW), SGD (its momentum) and RMSprop, also inside a
    `LossScaleOptimizer`; an unbuilt optimizer has none yet. Other optimizers
    raise a ValueError rather than be reset half-way.

    Example:

    >>> import keras
    >>> from keras_nalu.callbacks import optimizer_slots
    >>> variable = keras.Variable([1.0, 2.0])
    >>> adam = keras.optimizers.Adam()
    >>> adam.build([variable])
    >>> [slot.name for slot in optimizer_slots(adam, variable)]
    ['variable_momentum', 'variable_velocity']
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    attributes = next(
        (names for cls, names in _SLOT_ATTRIBUTES if isinstance(optimizer, cls)),
        None,
    )
    if attributes is None:
        supported = ", ".join(cls.__name__ for cls, _ in _SLOT_ATTRIBUTES)
        raise ValueError(
            "Cannot reset the state of optimizer "
            f"{type(optimizer).__name__}; supported: {supported}."
        )
    if not optimizer.built:
        return []
    try:
        index = optimizer._get_variable_index(variable)
    except KeyError:
        return []  # not trained by this optimizer
    slots = []
    for attribute in attributes:
        per_variable = getattr(optimizer, attribute, None) or []
        if index < len(per_variable) and per_variable[index] is not None:
            slots.append(per_variable[index])
    return slots


def reset_optimizer_slots(optimizer, variables) -> None:
    """Sets the optimizer's state of `variables` to zero (see `optimizer_slots`)."""
    for variable in variables:
        for slot in optimizer_slots(optimizer, variable):
            # zeros_like(slot) fails on a JAX variable; zeros of its shape do not.
            slot.assign(keras.ops.zeros(slot.shape, dtype=slot.dtype))


def loss_stalled(losses, loss_threshold: float) -> bool:
    """The iNALU reinitialization test on a loss history.

    With the history split into a first and a second half, the loss stalls
    above the threshold if mean(first) <= mean(second) + std(second) and
    mean(second) > loss_threshold. A non-finite loss in the second half counts
    as stalled.

    Example:

    >>> from keras_nalu.callbacks import loss_stalled
    >>> loss_stalled([5.0, 4.9, 5.1, 5.0], loss_threshold=1.0)
    True
    >>> loss_stalled([9.0, 7.0, 5.0, 3.0], loss_threshold=1.0)
    False
    """
    losses = np.asarray(losses, dtype=np.float64)
    if losses.size < 2:
        return False
    first, second = losses[: losses.size // 2], losses[losses.size // 2 :]
    if not np.all(np.isfinite(second)):
        return True
    return bool(
        np.mean(first) <= np.mean(second) + np.std(second)
        and np.mean(second) > loss_threshold
    )


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
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.NAU(1)])
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
        step = _optimizer_step(self.model) if optimizer is not None else 0
        for regularizer in _loss_gated_regularizers(layers):
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
