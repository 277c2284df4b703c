"""`LossGatedRegularization`: the iNALU's regularizer, on while the loss is low."""

import warnings

import keras

from keras_nalu._api import export
from keras_nalu.keras_utils import optimizer_step
from keras_nalu.regularizers import find_scheduled_regularizers


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
        found = find_scheduled_regularizers(self.model)
        self._regularizers = [r for r in found if r.loss_gated]
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
        step = optimizer_step(self.model)
        report = {}
        for regularizer in self._regularizers:
            regularizer.set_enabled(regularizer.wanted(epoch + 1, loss), step)
            name = regularizer.log_name
            value = regularizer.strength_at(step)
            report[name] = max(report.get(name, 0.0), value)
        logs.update(report)

    def get_config(self):
        return {"monitor": self.monitor}
