"""`RegularizationSchedule`: λ(t) of every scheduled regularizer from the step."""

import warnings

import keras

from keras_nalu._api import export
from keras_nalu._validation import check_non_negative
from keras_nalu.keras_utils import optimizer_step
from keras_nalu.regularizers import ScheduledPenalty, find_scheduled_regularizers
from keras_nalu.regularizers.schedules import (
    Schedule,
    strength_schedule,
    validate_schedule,
)


def _penalty_names() -> str:
    """The scheduled penalties of `keras_nalu.regularizers`, in words."""
    from keras_nalu import regularizers

    names = [
        name
        for name in sorted(regularizers.__all__)
        if isinstance(getattr(regularizers, name), type)
        and issubclass(getattr(regularizers, name), ScheduledPenalty)
        and name not in ("ScheduledPenalty", "ScheduledRegularizer")  # bases
    ]
    return f"{', '.join(names[:-1])} or {names[-1]}"


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
        self._imposed = None
        if strength is not None:
            self._imposed = strength_schedule(float(strength), start, end, mode)
        self._regularizers = []
        self._values = {}

    def schedule_for(self, regularizer: ScheduledPenalty) -> Schedule:
        """λ(t) of one regularizer: the imposed schedule, or its own."""
        return regularizer.schedule if self._imposed is None else self._imposed

    def strength_for(self, regularizer: ScheduledPenalty, step: int) -> float:
        """λ(t) of one regularizer at `step` (`schedule_for(regularizer)(step)`)."""
        return self.schedule_for(regularizer)(step)

    def on_train_begin(self, logs=None):
        self._regularizers = find_scheduled_regularizers(self.model)
        self._values = {}
        if not self._regularizers:
            warnings.warn(
                "RegularizationSchedule found no scheduled regularizer in the "
                "model (a keras_nalu.regularizers.ScheduledPenalty: "
                f"{_penalty_names()}); it does nothing.",
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
        step = optimizer_step(self.model)
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
