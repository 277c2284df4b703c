"""`ProgressBar`: one tqdm bar over the optimizer steps of a run."""

import keras

from keras_nalu._api import export
from keras_nalu.keras_utils import optimizer_step


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
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.NAU(1)])
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

    def on_train_begin(self, logs=None):
        from tqdm.auto import tqdm

        self._seen = optimizer_step(self.model)
        self._bar = tqdm(
            total=self.total_steps,
            initial=self._seen,
            desc=self.description,
            unit="step",
            mininterval=0.5,
            dynamic_ncols=True,
        )

    def on_train_batch_end(self, batch, logs=None):
        step = optimizer_step(self.model)
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
