"""The layer contract of every arithmetic unit, and the units in NumPy.

`run_layer_test(layer_cls, init_kwargs, reference=..., ...)` runs, in one call
driven by keywords (as Keras' own `run_layer_test`), the checks every unit
passes on every backend:

- outputs: shape and values against the unit's NumPy float64 `reference`, on
  `(batch, features)` and `(batch, time, features)` inputs (the unit acts on
  the last axis), `compute_output_shape`, a symbolic call, the `InputSpec`;
- state: the counts of trainable weights, losses, scheduled strengths and
  seed generators (non-trainable variables that are not weights), unique
  weight names, no weights made in `call`;
- configuration: JSON-native `get_config`, `from_config` with the same
  weights gives the same outputs, the registered name deserializes;
- models: Sequential, functional and subclassed models give the reference;
  `fit` trains one step of the Sequential (in Keras 3 a functional model)
  and, through its own path for `training`, of the subclassed model
  (compiled: `jit_compile=True` where asked, else the backend's "auto");
  each step changes the weights, keeps them finite, and the trained model
  predicts the reference;
- dtypes: float64 through and through (to 1e-12 of NumPy where Keras
  computes float64, see `tests.backend.float64_functions`; not on PyTorch,
  see `tests.backend.float64_arithmetic`), and under
  "mixed_float16" float16 outputs, float32 weights, the reference on float16
  inputs, and a training step.

The references below are the papers' formulas written once in NumPy,
reading a layer's current weights.
"""

import json

import keras
import numpy as np

from keras_nalu.constraints import Clip
from tests.backend import BACKEND, enable_float64, to_numpy

INPUT_DIM = 3
UNITS = 2
BATCH = 5  # one batch size throughout: JAX compiles its eager ops per shape


def run_layer_test(
    layer_cls,
    init_kwargs=None,
    *,
    reference,
    expected_num_trainable_weights,
    expected_num_losses,
    expected_num_schedules=0,
    expected_num_seed_generators=0,
    input_range=(1.0, 2.0),
    float64_functions=True,
    run_training_check=True,
    run_jit_compile_check=True,
    run_mixed_precision_check=True,
):
    """Runs the layer contract on `layer_cls(UNITS, **init_kwargs)`.

    Args:
        layer_cls: the unit's class.
        init_kwargs: constructor arguments besides `units`.
        reference: `reference(layer, x)`, the forward pass in NumPy float64
            from the layer's current weights.
        expected_num_trainable_weights: `len(layer.trainable_weights)`.
        expected_num_losses: `len(layer.losses)` once built.
        expected_num_schedules: scheduled regularizers the layer holds, whose
            strengths are its non-trainable variables.
        expected_num_seed_generators: `keras.random.SeedGenerator`s the layer
            owns; their states are non-trainable variables too. The outputs
            checked are the inference ones (`training` false).
        input_range: `(low, high)` of the uniform test inputs.
        float64_functions: the unit takes exp, log, tanh or sigmoid, which
            Keras computes in float32 for float64 tensors outside TensorFlow.
        run_training_check: fit one step in models.
        run_jit_compile_check: fit the subclassed model's step with
            `jit_compile=True` (XLA on TensorFlow; not on PyTorch, where it
            takes seconds per unit) rather than the backend's "auto".
        run_mixed_precision_check: check the "mixed_float16" policy.
    """
    keras.utils.set_random_seed(0)
    contract = _Contract(
        layer_cls,
        dict(init_kwargs or {}),
        reference,
        input_range,
        expected_num_trainable_weights,
        expected_num_losses,
        expected_num_schedules + expected_num_seed_generators,
    )
    contract.check_outputs()
    contract.check_state()
    contract.check_config()
    # One training step per compile mode: jit_compile=False (eager on JAX and
    # PyTorch, a tf.function on TensorFlow) on the Sequential, the compiled one
    # on the subclassed model. On PyTorch jit_compile=True is torch.compile,
    # 15-30 s a unit on a 2-core CPU: tests/test_backend_parity.py fits
    # NAU → NMU through it; "auto" is eager there.
    jit = run_jit_compile_check and BACKEND != "torch"
    fits = {"sequential": False, "functional": None, "subclassed": jit or "auto"}
    for style, jit_compile in fits.items():
        contract.check_in_model(
            style, jit_compile=jit_compile if run_training_check else None
        )
    if BACKEND != "torch":  # see tests.backend.float64_arithmetic
        contract.check_float64(exact=BACKEND == "tensorflow" or not float64_functions)
    if run_mixed_precision_check:
        contract.check_mixed_float16(train=run_training_check)


class UnitModel(keras.Model):
    """A subclassed model holding one unit; it passes `training` on, as a
    subclassed model must for a unit whose inference differs (the DMU's
    one-hot gate has no gradient)."""

    def __init__(self, unit, **kwargs):
        super().__init__(**kwargs)
        self.unit = unit

    def call(self, inputs, training=None):
        return self.unit(inputs, training=training)


class _Contract:
    def __init__(
        self, layer_cls, kwargs, reference, input_range, weights, losses, state
    ):
        self.layer_cls = layer_cls
        self.kwargs = kwargs
        self.reference = reference
        self.low, self.high = input_range
        self.num_trainable_weights = weights
        self.num_losses = losses
        self.num_state = state  # strengths and seed-generator states

    def make(self, **overrides):
        return self.layer_cls(UNITS, **{**self.kwargs, **overrides})

    def inputs(self, *shape, dtype="float32", seed=0):
        shape = shape or (BATCH, INPUT_DIM)
        rng = np.random.default_rng(seed)
        return rng.uniform(self.low, self.high, shape).astype(dtype)

    def targets(self, batch, seed=1):
        rng = np.random.default_rng(seed)
        return rng.uniform(self.low, self.high, (batch, UNITS)).astype("float32")

    def assert_matches_reference(self, layer, x, y, rtol=1e-5, atol=1e-6):
        np.testing.assert_allclose(
            to_numpy(y), self.reference(layer, x), rtol=rtol, atol=atol
        )

    def check_outputs(self):
        layer = self.make()
        x = self.inputs()
        y = layer(x)
        assert tuple(y.shape) == (BATCH, UNITS)
        self.assert_matches_reference(layer, x, y)
        # Extra leading axes (batch, time, features): the unit acts on the last.
        sequence = self.inputs(BATCH, 6, INPUT_DIM, seed=2)
        y_sequence = to_numpy(layer(sequence))
        assert y_sequence.shape == (BATCH, 6, UNITS)
        self.assert_matches_reference(layer, sequence, y_sequence)
        np.testing.assert_allclose(
            y_sequence[:, 2], to_numpy(layer(sequence[:, 2])), rtol=1e-5, atol=1e-7
        )
        assert layer.compute_output_shape((None, INPUT_DIM)) == (None, UNITS)
        assert layer.compute_output_shape((4, None, INPUT_DIM)) == (4, None, UNITS)
        symbolic = layer(keras.Input((6, INPUT_DIM)))
        assert tuple(symbolic.shape) == (None, 6, UNITS)
        with np.testing.assert_raises(ValueError):  # the InputSpec
            layer(np.ones((BATCH, INPUT_DIM + 1), "float32"))

    def check_state(self):
        layer = self.make()
        layer.build((None, INPUT_DIM))
        for when in ("built", "called"):
            if when == "called":
                layer(self.inputs())  # no weights created in `call`
            assert len(layer.trainable_weights) == self.num_trainable_weights, when
            assert layer.non_trainable_weights == [], when
            assert len(layer.non_trainable_variables) == self.num_state, when
            assert len(layer.losses) == self.num_losses, when
        paths = [w.path for w in layer.weights]
        assert len(set(paths)) == len(paths), paths

    def check_config(self):
        layer = self.make(name="unit_under_test")
        x = self.inputs()
        y = to_numpy(layer(x))
        config = layer.get_config()
        assert json.loads(json.dumps(config)) == config  # JSON-native values
        assert config["units"] == UNITS
        for key, value in self.kwargs.items():
            if isinstance(value, bool | int | float):
                assert config[key] == value, key
        clone = self.layer_cls.from_config(config)
        assert clone.get_config() == config
        clone.build((None, INPUT_DIM))
        clone.set_weights(layer.get_weights())
        np.testing.assert_array_equal(to_numpy(clone(x)), y)
        # The registered name resolves without custom_objects.
        revived = keras.layers.deserialize(keras.layers.serialize(layer))
        assert type(revived) is self.layer_cls
        assert revived.get_config() == config

    def check_in_model(self, style, jit_compile=None):
        """The model gives the reference; with `jit_compile` not None, `fit`
        then trains it one step (`check_fit`)."""
        layer = self.make()
        if style == "sequential":
            model = keras.Sequential([keras.Input((INPUT_DIM,)), layer])
        elif style == "functional":
            inputs = keras.Input((INPUT_DIM,))
            model = keras.Model(inputs, layer(inputs))
        else:
            model = UnitModel(layer)
        x = self.inputs()
        self.assert_matches_reference(layer, x, model(x))
        assert len(model.trainable_weights) == self.num_trainable_weights
        if jit_compile is not None:
            self.check_fit(layer, model, jit_compile)

    def check_fit(self, layer, model, jit_compile, mixed_precision=False):
        model.compile(keras.optimizers.Adam(0.01), "mse", jit_compile=jit_compile)
        x, y = self.inputs(), self.targets(BATCH)
        before = [to_numpy(w).copy() for w in model.trainable_weights]
        history = model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0])
        after = [to_numpy(w) for w in model.trainable_weights]
        assert all(np.all(np.isfinite(w)) for w in after)
        if mixed_precision:
            # Loss scaling skips a step whose float16 gradients overflow.
            return
        assert int(to_numpy(model.optimizer.iterations)) == 1
        assert any(not np.array_equal(b, a) for b, a in zip(before, after))
        # The trained weights are the ones the layer computes with.
        x = self.inputs(seed=3)
        self.assert_matches_reference(layer, x, model.predict(x, verbose=0))

    def check_float64(self, exact):
        with enable_float64():
            layer = self.make(dtype="float64")
            x = self.inputs(dtype="float64")
            y = layer(x)
            assert keras.backend.standardize_dtype(y.dtype) == "float64"
            assert all(w.dtype == "float64" for w in layer.weights)
            # float64 all the way: far below float32's precision.
            if exact:
                self.assert_matches_reference(layer, x, y, rtol=1e-12, atol=0)
            else:
                self.assert_matches_reference(layer, x, y)

    def check_mixed_float16(self, train):
        previous = keras.mixed_precision.global_policy()
        keras.mixed_precision.set_global_policy("mixed_float16")
        try:
            layer = self.make()
            x = self.inputs()
            y = layer(x)
            assert keras.backend.standardize_dtype(y.dtype) == "float16"
            assert all(w.dtype == "float32" for w in layer.weights)
            # The layer sees float16 inputs; the rest is float32 up to the output.
            x16 = x.astype("float16").astype("float64")
            self.assert_matches_reference(layer, x16, y, rtol=2e-3, atol=2e-3)
            if train:
                layer = self.make()
                model = keras.Sequential([keras.Input((INPUT_DIM,)), layer])
                self.check_fit(layer, model, jit_compile=False, mixed_precision=True)
        finally:
            keras.mixed_precision.set_global_policy(previous)


# --- the units in NumPy float64 ------------------------------------------------


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def weight(layer, name) -> np.ndarray:
    return np.asarray(to_numpy(getattr(layer, name)), "float64")


def clip_like(constraint, kernel, low, high):
    """The forward pass clamps the kernel when its constraint is a `Clip`."""
    return np.clip(kernel, low, high) if isinstance(constraint, Clip) else kernel


def nac_weight(layer, prefix=""):
    """W = tanh(Ŵ) ⊙ σ(M̂) (Trask et al. 2018, eq. 1)."""
    return np.tanh(weight(layer, f"{prefix}w_hat")) * sigmoid(
        weight(layer, f"{prefix}m_hat")
    )


def log_space_product(x, kernel, epsilon):
    """exp(log(|x| + ε) · W) (Trask et al. 2018, eq. 3)."""
    return np.exp(np.log(np.abs(np.asarray(x, "float64")) + epsilon) @ kernel)


def nau(layer, x):
    """x · clip(W, -1, 1) (Madsen & Johansen 2020, eq. 5)."""
    kernel = clip_like(layer.kernel_constraint, weight(layer, "kernel"), -1.0, 1.0)
    return np.asarray(x, "float64") @ kernel


def nmu(layer, x):
    """∏_i (W_io·x_i + 1 - W_io), W clipped to [0, 1] (eq. 10)."""
    kernel = clip_like(layer.kernel_constraint, weight(layer, "kernel"), 0.0, 1.0)
    x = np.asarray(x, "float64")[..., :, None]
    return np.prod(kernel * x + 1.0 - kernel, axis=-2)


def nac(layer, x):
    return np.asarray(x, "float64") @ nac_weight(layer)


def nac_mul(layer, x):
    """NAC•, NAC•σ or NAC•NMU, by the layer's parametrization."""
    if layer.parametrization == "sigmoid":
        kernel = sigmoid(weight(layer, "w_hat"))
    elif layer.parametrization == "nmu":
        kernel = clip_like(layer.kernel_constraint, weight(layer, "w_hat"), 0.0, 1.0)
    else:
        kernel = nac_weight(layer)
    return log_space_product(x, kernel, layer.epsilon)


def _nalu_gate(layer, x, prefix):
    gate = weight(layer, f"{prefix}gate")
    if layer.gate_type == "constant":
        return np.zeros_like(x[..., :1]) + sigmoid(gate)
    logits = x @ gate
    if layer.use_gate_bias:
        logits = logits + weight(layer, f"{prefix}gate_bias")
    return sigmoid(logits)


def nalu(layer, x):
    """g ⊙ (x·W) + (1 - g) ⊙ NAC•(x), or g_m ⊙ NAC•(x) with two gates."""
    x = np.asarray(x, "float64")
    gate = _nalu_gate(layer, x, "")
    mul_gate = _nalu_gate(layer, x, "mul_") if layer.two_gates else 1.0 - gate
    additive = x @ nac_weight(layer)
    mul_kernel = nac_weight(layer, "mul_" if layer.separate_weights else "")
    multiplicative = log_space_product(x, mul_kernel, layer.epsilon)
    return gate * additive + mul_gate * multiplicative


def inalu(layer, x):
    """The iNALU (Schlör, Ring & Hotho 2020): a gate over an additive path and
    a log-space product with its sign."""
    x = np.asarray(x, "float64")
    w_mul = nac_weight(layer, "mul_")
    log_magnitude = np.log(np.maximum(np.abs(x), layer.epsilon))
    magnitude = np.exp(np.minimum(log_magnitude @ w_mul, layer.omega))
    factors = np.sign(x)[..., :, None] * np.abs(w_mul) + 1.0 - np.abs(w_mul)
    sign = np.clip(np.prod(factors, axis=-2), -1.0, 1.0)
    gate = sigmoid(weight(layer, "gate"))
    return gate * (x @ nac_weight(layer)) + (1.0 - gate) * magnitude * sign


def npu(layer, x):
    """The NPU's (or RealNPU's) real part (Heim et al. 2020, eq. 4-6); Re and
    Im clamped to [-1, 1] under a `Clip` (the modified Real NPU)."""
    x = np.asarray(x, "float64")
    gate = clip_like(layer.gate_constraint, weight(layer, "gate"), 0.0, 1.0)
    real = clip_like(layer.kernel_constraint, weight(layer, "kernel"), -1.0, 1.0)
    imaginary = (
        clip_like(layer.kernel_constraint, weight(layer, "imaginary_kernel"), -1.0, 1.0)
        if layer.complex_weights
        else np.zeros_like(real)
    )
    r = gate * (np.abs(x) + layer.epsilon) + (1.0 - gate)
    k = gate * np.pi * (x < 0)
    magnitude = np.exp(np.log(r) @ real - k @ imaginary)
    return magnitude * np.cos(k @ real + np.log(r) @ imaginary)


def nmru(layer, x):
    """∏_j (W_j·z_j + 1 - W_j) · cos(π Σ_i [x_i < 0](W_i + W_(I+i))), z = [|x|,
    1/|x|] (Mistry et al. 2021), at inference: the exact reciprocal; −0 < 0."""
    x = np.asarray(x, "float64")
    kernel = clip_like(layer.kernel_constraint, weight(layer, "kernel"), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        z = np.concatenate([np.abs(x), 1.0 / np.abs(x)], axis=-1)[..., :, None]
    magnitude = np.prod(kernel * z + 1.0 - kernel, axis=-2)
    half = kernel.shape[0] // 2
    negative = np.pi * np.signbit(x)
    return magnitude * np.cos(negative @ (kernel[:half] + kernel[half:]))


def mcfc_kernel(layer):
    """softmax(R) over the outputs, times the gate σ(w + b) (Hoedt et al. 2021)."""
    junction = weight(layer, "junction")
    scaled = np.exp(junction - junction.max(axis=-1, keepdims=True))
    junction = scaled / scaled.sum(axis=-1, keepdims=True)
    gate = sigmoid(weight(layer, "gate_kernel")[0] + weight(layer, "gate_bias"))
    return junction * gate


def mcfc(layer, x):
    return np.asarray(x, "float64") @ mcfc_kernel(layer)


def mcfc_mul(layer, x):
    """exp(log x · softmax(R)σ(w + b) + β)."""
    log_x = np.log(np.asarray(x, "float64"))
    return np.exp(log_x @ mcfc_kernel(layer) + weight(layer, "bias"))


def gated_nau_nmu(layer, x):
    """σ(x·G) ⊙ NAU(x) + (1 - σ(x·G)) ⊙ NMU(x) (Madsen & Johansen 2020, §2.8)."""
    x = np.asarray(x, "float64")
    gate = sigmoid(x @ weight(layer, "gate"))
    return gate * nau(layer.nau, x) + (1.0 - gate) * nmu(layer.nmu, x)


def _torch_softplus(z):
    """log(1 + eᶻ), z itself above 20 (PyTorch's, which the DMU's author calls)."""
    return np.where(z > 20.0, z, np.log1p(np.exp(np.minimum(z, 20.0))))


def dmu_formula(layer, x, training):
    """Curry (2025), the author's `DAGLayer` with one step and frozen operands:

    (g_lin, g_log) = softmax(LayerNorm(x)·W + b) (one-hot of the larger logit
    at inference); y = (g_lin·tanh(r_lin/10⁻⁴) + g_log·cos(π Σ|o|[x < 0]))
    · clip(g_lin·max(√(r_lin² + 10⁻⁸), m₀) + g_log·exp(c(r_log)), m₀, m₁),
    r_lin = x·o, r_log = log max(|x|, m₀)·o, c a softplus clamp to [-L, L].
    """
    x = np.asarray(x, "float64")
    floor, ceiling, limit = (
        (1e-11, 1e6, np.log(1e6) - 1.0) if training else (1e-20, 1e20, 50.0)
    )
    signs = {"add": [1.0, 1.0], "sub": [1.0, -1.0]}[layer.initialization]
    operands = np.zeros((x.shape[-1], layer.units))
    operands[:2] = np.asarray(signs)[:, None]
    normed = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    normed = normed * weight(layer, "norm_scale") + weight(layer, "norm_offset")
    logits = normed @ weight(layer, "gate_kernel") + weight(layer, "gate_bias")
    lin, log = logits[..., : layer.units], logits[..., layer.units :]
    if training or not layer.discretize:
        g_lin = sigmoid(lin - log)
    else:
        g_lin = (lin >= log).astype("float64")
    g_log = 1.0 - g_lin
    r_lin = x @ operands
    r_log = np.log(np.maximum(np.abs(x), floor)) @ operands
    ceiling_clamped = limit - _torch_softplus(limit - r_log)
    clamped = -limit + _torch_softplus(ceiling_clamped + limit)
    sign = g_lin * np.tanh(r_lin / 1e-4) + g_log * np.cos(
        np.pi * ((x < 0) @ np.abs(operands))
    )
    magnitude = g_lin * np.maximum(np.sqrt(r_lin**2 + 1e-8), floor)
    magnitude = magnitude + g_log * np.exp(clamped)
    return sign * np.clip(magnitude, floor, ceiling)


def dmu(layer, x):
    """The DMU at inference (`dmu_formula` with `training` false)."""
    return dmu_formula(layer, x, training=False)


def _softmax_over_inputs(logits):
    scaled = np.exp(logits - logits.max(axis=0, keepdims=True))
    return scaled / scaled.sum(axis=0, keepdims=True)


def nsr(layer, x):
    """σ(b + Σ_r W±_r·tanh(λd_r) + Σ_r W0_r·(1 - 2·tanh²(λd_r))), d = x·softmax(V₁)
    - x·softmax(V₂), softmax over the inputs (Faber & Wattenhofer 2023)."""
    x = np.asarray(x, "float64")
    difference = x @ _softmax_over_inputs(weight(layer, "operand_1")) - (
        x @ _softmax_over_inputs(weight(layer, "operand_2"))
    )
    units, redundancy = layer.units, layer.redundancy
    sign = np.tanh(layer.scale * difference).reshape(*x.shape[:-1], units, redundancy)
    zero = 1.0 - 2.0 * sign**2
    logit = (sign * weight(layer, "sign_kernel").T).sum(-1)
    logit = logit + (zero * weight(layer, "zero_kernel").T).sum(-1)
    return sigmoid(logit + weight(layer, "bias"))


# --- round trips -----------------------------------------------------------------


def check_keras_round_trip(model, x, tmp_path, *, export=False):
    """`.keras` save/load gives the same outputs and weights; with `export`,
    on TensorFlow, `model.export`'s SavedModel (at `tmp_path / "saved_model"`)
    served by `tf.saved_model.load` gives the same outputs too. Returns the
    loaded `.keras` model."""
    expected = model.predict(x, verbose=0)
    if export and BACKEND == "tensorflow":
        # First: exporting a model after a `.keras` save and load in the same
        # process fails ("variables which have been deleted").
        import tensorflow as tf

        model.export(str(tmp_path / "saved_model"), verbose=False)
        served = tf.saved_model.load(str(tmp_path / "saved_model"))
        np.testing.assert_allclose(
            served.serve(tf.constant(x)).numpy(), expected, rtol=1e-5
        )
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-6)
    for original, restored in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(to_numpy(original), to_numpy(restored))
    return loaded
