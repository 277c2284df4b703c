"""Callbacks that drive the units' training: the regularization schedule."""

import warnings

import keras

from keras_nalu._api import export
from keras_nalu._validation import check_non_negative
from keras_nalu.regularizers import (
    ScheduledRegularizer,
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
        candidates = list(vars(layer).values())
        candidates += [getattr(w, "regularizer", None) for w in layer.weights]
        for candidate in candidates:
            if isinstance(candidate, ScheduledRegularizer):
                found[id(candidate)] = candidate
    return list(found.values())


@export
class RegularizationSchedule(keras.callbacks.Callback):
    """Ramps every scheduled regularizer's strength with the optimizer step.

    Without arguments each regularizer follows its own schedule (the units'
    paper defaults, e.g. `NMU`: λ = 10 over steps 10⁶ → 2·10⁶). With
    `strength` (and optionally `start`, `end`, `mode`) one λ(t) is imposed on
    every scheduled regularizer of the model, as seed 001 does for all layers
    of a network:

        λ(t) = λ · max(min((t - start) / (end - start), 1), 0)      (eq. 14)

    `t` is read from `model.optimizer.iterations`, so a resumed or reloaded
    model continues its schedule and `steps_per_execution > 1` stays exact
    at every execution boundary. The strength in force is written into `logs`
    (key `sparsity_strength` for `Sparsity`), where the progress bar, History
    and a TensorBoard callback listed after this one see it.

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
        self._update()

    def on_train_batch_begin(self, batch, logs=None):
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

    >>> import keras_nalu
    >>> bar = keras_nalu.callbacks.ProgressBar(10_000, keys=("loss",))
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
