"""`.keras` files written under one Keras backend and read under another.

`save(DIR)` trains a model holding every unit a few steps and writes
`DIR/<backend>.keras` with its predictions (`DIR/<backend>.npz`); `load(DIR)`
reads each other backend's file in `DIR` it has not read yet and writes what
it predicts, the optimizer step and how many scheduled regularizers it holds
(`DIR/<file>-read-by-<backend>.npz`). tests/test_backend_parity.py runs both
under each backend (tests/_other_backend.py in a fresh process) and compares.
"""

from pathlib import Path

import keras
import numpy as np

from keras_nalu import layers
from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.regularizers import Sparsity, find_scheduled_regularizers

INPUT_DIM = 3
STEPS = 6


def units():
    """One of each unit (and variant), named, on inputs in [0.5, 2]."""
    return [
        layers.NAU(2, kernel_regularizer=Sparsity(1.0, start=0, end=10), name="nau"),
        layers.NMU(
            2,
            kernel_regularizer=Sparsity(2.0, start=0, end=10, domain="unsigned"),
            name="nmu",
        ),
        layers.NMU(2, noise=(1.0, 5.0), seed=4, name="snmu"),
        layers.NAC(2, name="nac"),
        layers.NACMul(2, name="nac_mul"),
        layers.NACMul(2, parametrization="nmu", name="nac_nmu"),
        layers.NALU(2, name="nalu"),
        layers.NALU(2, separate_weights=True, use_gate_bias=True, name="nalu_sep"),
        layers.iNALU(2, name="inalu"),
        layers.NPU(2, name="npu"),
        layers.RealNPU(2, name="real_npu"),
        layers.NMRU(2, name="nmru"),
        layers.MCFC(2, name="mcfc"),
        layers.MCFCMul(2, name="mcfc_mul"),
        layers.GatedNAUNMU(2, name="gated"),
        layers.DMU(2, initialization="sub", name="dmu"),
        layers.NSR(2, redundancy=2, name="nsr"),
        layers.Piecewise(layers.NSR(2), layers.NAU(2), layers.NAU(2), name="piecewise"),
    ]


def build():
    inputs = keras.Input((INPUT_DIM,))
    outputs = [unit(inputs) for unit in units()]
    # A recurrent NAU over the inputs as a sequence of one-feature steps.
    sequence = keras.layers.Reshape((INPUT_DIM, 1))(inputs)
    cell = layers.ArithmeticCell(layers.NAU(1, name="cell_nau"))
    outputs.append(keras.layers.RNN(cell, name="rnn")(sequence))
    model = keras.Model(inputs, keras.layers.Concatenate()(outputs))
    # Hand-set weights: each backend draws its own from the same seed.
    rng = np.random.default_rng(0)
    model.set_weights(
        [rng.uniform(0.2, 0.8, w.shape).astype(w.dtype) for w in model.get_weights()]
    )
    return model


def data(size, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, (size, INPUT_DIM)).astype("float32")


def save(directory: Path) -> None:
    backend = keras.backend.backend()
    model = build()
    # What moves between the backends is the file, not a compiled step: the
    # 6 steps run eagerly on TensorFlow (tracing them took 3x as long), under
    # jax.jit on JAX (eager took 3x as long) and uncompiled on PyTorch.
    model.compile(
        keras.optimizers.Adam(0.01),
        "mse",
        run_eagerly=backend == "tensorflow",
        jit_compile=backend == "jax",
    )
    x = data(2 * STEPS, seed=1)
    model.fit(
        x,
        np.ones((len(x), model.output_shape[-1]), "float32"),
        batch_size=2,
        callbacks=[RegularizationSchedule()],
        verbose=0,
    )
    model.save(directory / f"{backend}.keras")
    np.savez(directory / f"{backend}.npz", predictions=_predict(model))


def load(directory: Path) -> None:
    backend = keras.backend.backend()
    for path in sorted(directory.glob("*.keras")):
        read = directory / f"{path.stem}-read-by-{backend}.npz"
        if path.stem == backend or read.exists():
            continue
        model = keras.saving.load_model(path)
        np.savez(
            read,
            predictions=_predict(model),
            iterations=int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
            regularizers=len(find_scheduled_regularizers(model)),
        )


def _predict(model):
    # 16 rows, uncompiled whatever the file's compile config says (a JAX
    # file records jit_compile=True, which PyTorch would run as torch.compile:
    # a minute for this model on 2 cores).
    model.jit_compile = False
    model.run_eagerly = True
    return model.predict(data(16, seed=2), verbose=0)
