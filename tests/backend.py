"""What the tests need from the Keras backend, written once per backend.

The tests run under every backend that `make test` names (TensorFlow, JAX,
PyTorch where installed): they read tensors with `to_numpy` and take
gradients with `gradients`, and mark what only one backend can do with
`requires_tensorflow`.
"""

import contextlib

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()


def steps_per_execution(steps: int) -> int:
    """`steps` for `compile`, or 1 on PyTorch: Keras' PyTorch trainer takes
    one step per execution."""
    return 1 if BACKEND == "torch" else steps


#: For tests of TensorFlow-only features (SavedModel export, tf.data, ...).
requires_tensorflow = pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason=f"TensorFlow-only feature; the Keras backend is {BACKEND}",
)

#: For float64 tests of units that take exp, log, tanh or sigmoid: Keras
#: computes those of a float64 tensor in float32 on every backend but
#: TensorFlow (`keras.backend.result_type` maps float64 to float32 there,
#: Keras 3.15), so float64 agrees with NumPy only to float32 precision.
float64_functions = pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason=f"Keras computes exp/log/tanh/sigmoid of float64 in float32 on {BACKEND}",
)

#: For float64 tests (tests/conftest.py puts it on every test marked
#: `float64`): Keras' PyTorch backend computes `matmul`, `prod`, `minimum`
#: and `maximum` of float64 tensors in float32 and returns float32
#: (`keras.backend.result_type` maps float64 to float32 outside TensorFlow,
#: and PyTorch has no switch like JAX's x64; Keras 3.15), so a float64 unit
#: computes in float32 there.
float64_arithmetic = pytest.mark.skipif(
    BACKEND == "torch",
    reason="Keras' torch backend computes matmul/prod/minimum of float64 in float32",
)

#: A `dtype` parametrization: float64 carries the `float64` mark, under
#: which JAX computes in float64 and PyTorch skips (tests/conftest.py).
FLOAT_DTYPES = ["float32", pytest.param("float64", marks=pytest.mark.float64)]

#: The same for units that take exp, log, tanh or sigmoid (`float64_functions`).
FLOAT_DTYPES_FUNCTIONS = [
    "float32",
    pytest.param("float64", marks=[pytest.mark.float64, float64_functions]),
]


def enable_float64():
    """A context in which the backend computes float64 (JAX: jax_enable_x64)."""
    if BACKEND != "jax":
        return contextlib.nullcontext()
    import jax

    return jax.enable_x64(True)


def to_numpy(value) -> np.ndarray:
    """A tensor, variable or array of any backend as a NumPy array."""
    return np.asarray(keras.ops.convert_to_numpy(value))


def gradients(fn, variables=(), inputs=()) -> list[np.ndarray]:
    """Gradients of the scalar `fn(*inputs)` by `variables`, then by `inputs`.

    Args:
        fn: a function of the tensors made from `inputs`, returning a scalar;
            it may read `variables` (Keras variables, e.g. a layer's kernel).
        variables: Keras variables to differentiate by.
        inputs: NumPy arrays, passed to `fn` as backend tensors of their
            dtype.

    Returns:
        NumPy arrays, one per variable and then one per input; zeros where
        the scalar does not depend on it.
    """
    variables, inputs = list(variables), [np.asarray(x) for x in inputs]
    grads = _GRADIENTS[BACKEND](fn, variables, inputs)
    sources = [*variables, *inputs]
    return [
        np.zeros(tuple(source.shape), keras.backend.standardize_dtype(source.dtype))
        if grad is None
        else to_numpy(grad)
        for grad, source in zip(grads, sources)
    ]


def _tensorflow_gradients(fn, variables, inputs):
    import tensorflow as tf

    tensors = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        value = fn(*tensors)
    return tape.gradient(value, [v.value for v in variables] + tensors)


def _jax_gradients(fn, variables, inputs):
    import jax

    def value(variable_values, input_values):
        mapping = list(zip(variables, variable_values))
        with keras.StatelessScope(state_mapping=mapping):
            return fn(*input_values)

    by_variables, by_inputs = jax.grad(value, argnums=(0, 1))(
        [v.value for v in variables], [jax.numpy.asarray(x) for x in inputs]
    )
    return [*by_variables, *by_inputs]


def _torch_gradients(fn, variables, inputs):
    import torch

    tensors = [torch.tensor(x, requires_grad=True) for x in inputs]
    sources = [v.value for v in variables] + tensors
    return torch.autograd.grad(fn(*tensors), sources, allow_unused=True)


_GRADIENTS = {
    "tensorflow": _tensorflow_gradients,
    "jax": _jax_gradients,
    "torch": _torch_gradients,
}
