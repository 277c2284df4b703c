"""Short fits whose results must not depend on the Keras backend.

Each scenario builds its model from hand-set weights (backends draw different
random numbers from the same seed), trains with plain SGD on fixed data in a
fixed order, and returns what it measured as JSON-native values. The test
(tests/test_backend_parity.py) runs them here and, in a fresh process, under
the other backend: `python -m tests._parity OUT.json` with KERAS_BACKEND set.
"""

import json
import sys
import traceback

import keras
import numpy as np

from keras_nalu.callbacks import RegularizationSchedule, Reinitialization
from keras_nalu.evaluation import SuccessCriterion
from keras_nalu.layers import NAU, NMU, ArithmeticCell
from keras_nalu.regularizers import Sparsity

#: 40 SGD steps of batch 4: the λ ramp of `Sparsity(start=10, end=20)` lies
#: inside the run, and both kernels reach their clamps.
STEPS, BATCH = 40, 4
NAU_KERNEL = [[0.4, -0.2], [0.9, 0.1], [-0.3, 0.55], [0.05, 0.45]]
NMU_KERNEL = [[0.7], [0.4]]


def _data(size, low=0.5, high=1.0, seed=0):
    x = np.random.default_rng(seed).uniform(low, high, (size, 4)).astype("float32")
    target = (x[:, :1] + x[:, 1:2]) * (x[:, 2:3] + x[:, 3:4])
    return x, target.astype("float32")


def _nau_nmu(regularized=True):
    def sparsity(domain):
        return Sparsity(1.0, start=10, end=20, domain=domain) if regularized else None

    nau = NAU(2, kernel_regularizer=sparsity("signed"), name="nau")
    nmu = NMU(1, kernel_regularizer=sparsity("unsigned"), name="nmu")
    model = keras.Sequential([keras.Input((4,)), nau, nmu])
    nau.kernel.assign(np.array(NAU_KERNEL, "float32"))
    nmu.kernel.assign(np.array(NMU_KERNEL, "float32"))
    return model


def _weights(model):
    return [keras.ops.convert_to_numpy(w).tolist() for w in model.trainable_weights]


def schedule(steps_per_execution=1, with_schedule=True):
    """NAU(2) → NMU(1), λ ramped over steps 10 → 20 by RegularizationSchedule."""
    model = _nau_nmu()
    model.compile(
        keras.optimizers.SGD(0.05), "mse", steps_per_execution=steps_per_execution
    )
    x, t = _data(STEPS * BATCH)
    callbacks = [RegularizationSchedule()] if with_schedule else []
    history = model.fit(
        x, t, batch_size=BATCH, epochs=1, shuffle=False, callbacks=callbacks, verbose=0
    )
    return {"weights": _weights(model), "loss": history.history["loss"]}


def recurrent_schedule():
    """An NAU in a recurrent cell, its λ ramped over steps 2 → 6 of 10."""
    unit = NAU(1, kernel_regularizer=Sparsity(1.0, start=2, end=6), name="unit")
    rnn = keras.layers.RNN(ArithmeticCell(unit), return_sequences=True)
    model = keras.Sequential([keras.Input((3, 1)), rnn])
    unit.kernel.assign(np.array([[0.7], [0.6]], "float32"))
    model.compile(keras.optimizers.SGD(0.01), "mse")
    x = np.random.default_rng(3).uniform(0.5, 1.0, (10 * BATCH, 3, 1))
    x = x.astype("float32")
    history = model.fit(
        x,
        np.cumsum(x, axis=1),
        batch_size=BATCH,
        shuffle=False,
        callbacks=[RegularizationSchedule()],
        verbose=0,
    )
    return {"weights": _weights(model), "loss": history.history["loss"]}


def reinitialization():
    """Frozen weights stall the loss; the re-drawn weights change it."""
    model = _nau_nmu(regularized=False)
    model.compile(keras.optimizers.SGD(0.0), "mse")
    x, t = _data(4 * BATCH)
    callback = Reinitialization(
        every=2, loss_threshold=0.0, initializer=keras.initializers.Constant(0.3)
    )
    history = model.fit(
        x, t, batch_size=BATCH, epochs=4, shuffle=False, callbacks=[callback], verbose=0
    )
    return {
        "weights": _weights(model),
        "loss": history.history["loss"],
        "reinitializations": history.history["reinitializations"],
    }


def success_criterion():
    """Evaluations every 3 steps of a model that learns (so each one differs)."""
    model = _nau_nmu(regularized=False)
    model.compile(keras.optimizers.SGD(0.05), "mse")
    x, t = _data(12 * BATCH)
    criterion = SuccessCriterion(
        _data(64, seed=1), _data(64, 1.0, 3.0, seed=2), threshold=1e-4, eval_every=3
    )
    model.fit(
        x,
        t,
        batch_size=BATCH,
        epochs=1,
        shuffle=False,
        callbacks=[criterion],
        verbose=0,
    )
    return {
        "weights": _weights(model),
        "evaluations": [
            [e.step, e.interpolation_mse, e.extrapolation_mse]
            for e in criterion.evaluations
        ],
    }


SCENARIOS = {
    "schedule": schedule,
    "schedule_blocks_of_4": lambda: schedule(steps_per_execution=4),
    "no_schedule": lambda: schedule(with_schedule=False),
    "recurrent_schedule": recurrent_schedule,
    "reinitialization": reinitialization,
    "success_criterion": success_criterion,
}


def run_all() -> dict:
    """{scenario: result or {"error": traceback}} under this process's backend."""
    results = {}
    for name, scenario in SCENARIOS.items():
        try:
            results[name] = scenario()
        except Exception:  # reported by the test that reads this scenario
            results[name] = {"error": traceback.format_exc()}
    return {"backend": keras.backend.backend(), "results": results}


if __name__ == "__main__":
    with open(sys.argv[1], "w") as file:
        json.dump(run_all(), file)
