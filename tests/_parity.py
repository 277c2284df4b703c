"""Short fits whose results must not depend on the Keras backend.

Each scenario builds its model from hand-set weights (backends draw different
random numbers from the same seed), trains with plain SGD on fixed data in a
fixed order, and returns what it measured as JSON-native values. A backend
runs every scenario but those `UNSUPPORTED` names for it. The test
(tests/test_backend_parity.py) runs them under its own backend in-process and
under each other backend in a fresh process (tests/_other_backend.py).
"""

import json
import traceback
from pathlib import Path

import keras
import numpy as np

from keras_nalu.callbacks import (
    LossGatedRegularization,
    RegularizationSchedule,
    Reinitialization,
)
from keras_nalu.evaluation import SuccessCriterion
from keras_nalu.layers import NAU, NMU, ArithmeticCell
from keras_nalu.regularizers import (
    L1,
    NegativeL2,
    OutOfBounds,
    Saturation,
    Sparsity,
    Sum,
    UnitMagnitude,
    find_scheduled_regularizers,
)

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


def _compile_without_inductor(model):
    """Keras' PyTorch train step under `torch.compile(backend="eager")`.

    What Keras' `jit_compile=True` does, but the graph that dynamo captures
    (with its guards, which decide whether a step reads the variables' current
    values) runs as captured, without inductor's code generation, which only
    makes the graph faster and took most of this fit's CPU time.
    """
    import torch

    model.jit_compile = False
    model.make_train_function()
    model.train_function = torch.compile(model.train_function, backend="eager")


def schedule(steps_per_execution=1, with_schedule=True, jit_compile=False):
    """NAU(2) → NMU(1), λ ramped over steps 10 → 20 by RegularizationSchedule.

    With `jit_compile` the train step is compiled: XLA on TensorFlow,
    `jax.jit` on JAX, dynamo's capture on PyTorch (`torch.compile` with
    `backend="eager"`: `_compile_without_inductor`).
    """
    model = _nau_nmu()
    model.compile(
        keras.optimizers.SGD(0.05),
        "mse",
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
    )
    if jit_compile and keras.backend.backend() == "torch":
        _compile_without_inductor(model)
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


def regularizers(regularized=True):
    """Every weight regularizer on NAU(2) → NMU(1), each on its own schedule.

    The NAU is unclamped (so `OutOfBounds` has work) and carries a ramped
    `Sparsity`, a ramped `OutOfBounds` and a loss-gated `Saturation` that
    `LossGatedRegularization` switches on after the first epoch; the NMU a
    ramped `UnitMagnitude`, Heim et al.'s growing `L1` and a ramped
    `NegativeL2`. 4 epochs of 10 steps.
    """
    nau_regularizer = nmu_regularizer = None
    if regularized:
        nau_regularizer = Sum(
            [
                Sparsity(1.0, start=10, end=20),
                OutOfBounds(0.5, start=0, end=10),
                Saturation(0.1, threshold=2.0, loss_threshold=100.0, warmup_epochs=1),
            ]
        )
        nmu_regularizer = Sum(
            [
                UnitMagnitude(0.5, start=5, end=25),
                L1(0.1, initial_strength=1e-3, growth_every=10),
                NegativeL2(0.2, start=20, end=30),
            ]
        )
    nau = NAU(2, kernel_regularizer=nau_regularizer, kernel_constraint=None, name="nau")
    nmu = NMU(1, kernel_regularizer=nmu_regularizer, name="nmu")
    model = keras.Sequential([keras.Input((4,)), nau, nmu])
    nau.kernel.assign(np.array(NAU_KERNEL, "float32"))
    nmu.kernel.assign(np.array(NMU_KERNEL, "float32"))
    model.compile(keras.optimizers.SGD(0.05), "mse", metrics=["mse"])
    x, t = _data(10 * BATCH)
    callbacks = [RegularizationSchedule(), LossGatedRegularization(monitor="mse")]
    history = model.fit(
        x,
        t,
        batch_size=BATCH,
        epochs=4,
        shuffle=False,
        callbacks=callbacks if regularized else [],
        verbose=0,
    )
    strengths = {
        type(r).__name__: float(keras.ops.convert_to_numpy(r.current_strength))
        for r in find_scheduled_regularizers(model)
    }
    return {
        "weights": _weights(model),
        "loss": history.history["loss"],
        "strengths": strengths,
        "saturation": history.history.get("saturation_strength"),
    }


def snmu():
    """NAU(2) → sNMU(1): noise in the 10 training steps, none at inference.

    The backends draw other noise from the same seed, so what is compared is
    what the noise does: it changes the fit (against the plain NMU from the
    same weights), it is drawn once per training step (the seed generator's
    counter), and `predict`/`evaluate` neither draw nor apply it.
    """

    def fit(noise):
        nau = NAU(2, kernel_regularizer=None, name="nau")
        unit = NMU(1, kernel_regularizer=None, noise=noise, seed=3, name="nmu")
        model = keras.Sequential([keras.Input((4,)), nau, unit])
        nau.kernel.assign(np.array(NAU_KERNEL, "float32"))
        unit.kernel.assign(np.array(NMU_KERNEL, "float32"))
        model.compile(keras.optimizers.SGD(0.05), "mse")
        x, t = _data(10 * BATCH)
        model.fit(x, t, batch_size=BATCH, shuffle=False, verbose=0)
        return model, unit

    def counter(unit):
        return int(keras.ops.convert_to_numpy(unit.seed_generator.state)[1])

    noisy, unit = fit((1.0, 5.0))
    plain, _ = fit(None)
    after_fit = counter(unit)
    x, t = _data(64, seed=1)
    predicted = noisy.predict(x, verbose=0)
    evaluated = noisy.evaluate(x, t, verbose=0)
    # The plain NMU with the sNMU's trained weights: the inference function.
    clone, _ = fit(None)
    clone.set_weights(noisy.get_weights())
    return {
        "weights": _weights(noisy),
        "plain_weights": _weights(plain),
        "draws_in_fit": after_fit,
        "draws_after_inference": counter(unit),
        "predict_gap": float(np.abs(predicted - clone.predict(x, verbose=0)).max()),
        "evaluate_gap": abs(evaluated - clone.evaluate(x, t, verbose=0)),
    }


SCENARIOS = {
    "schedule": schedule,
    "schedule_blocks_of_4": lambda: schedule(steps_per_execution=4),
    "schedule_compiled": lambda: schedule(jit_compile=True),
    "no_schedule": lambda: schedule(with_schedule=False),
    "regularizers": regularizers,
    "no_regularizers": lambda: regularizers(regularized=False),
    "snmu": snmu,
    "recurrent_schedule": recurrent_schedule,
    "reinitialization": reinitialization,
    "success_criterion": success_criterion,
}


# Scenarios a backend cannot run, by backend: Keras' PyTorch trainer takes
# one step per execution.
UNSUPPORTED = {"torch": ("schedule_blocks_of_4",)}


def supported(backend: str) -> list[str]:
    """The scenarios `backend` runs."""
    return [name for name in SCENARIOS if name not in UNSUPPORTED.get(backend, ())]


def run_all() -> dict:
    """{scenario: result or {"error": traceback}} under this process's backend."""
    results = {}
    for name in supported(keras.backend.backend()):
        scenario = SCENARIOS[name]
        try:
            results[name] = scenario()
        except Exception:  # reported by the test that reads this scenario
            results[name] = {"error": traceback.format_exc()}
    return {"backend": keras.backend.backend(), "results": results}


def results_path(folder: Path, backend: str) -> Path:
    """Where `write` puts `backend`'s results."""
    return folder / f"parity-{backend}.json"


def write(folder: Path) -> None:
    """`run_all()` under this process's backend, as JSON in `folder`."""
    path = results_path(folder, keras.backend.backend())
    path.write_text(json.dumps(run_all()))
