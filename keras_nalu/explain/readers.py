"""Per-layer readers: one trained layer → how it maps input nodes to output nodes.

Each reader rounds a layer's effective weights (`ArithmeticLayer.effective_weights`)
to their nearest discrete values and records how far each weight is from it;
`read_layer` picks the reader of a layer, `read_composition` reads
consecutive linear layers as one (`map_kind` says which compose), `layer_chain`
checks that a model is a single chain of layers `explain` can read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import keras
import numpy as np
from keras import ops

from keras_nalu.explain.expression import (
    Gated,
    Node,
    make_product,
    make_sum,
)
from keras_nalu.layers import (
    DMU,
    MCFC,
    NAC,
    NALU,
    NAU,
    NMRU,
    NMU,
    NPU,
    NSR,
    GatedNAUNMU,
    MCFCMul,
    NACMul,
    Piecewise,
    RealNPU,
    iNALU,
)

# Rounding prefers the non-zero value on a tie, so a weight stuck at 0.5 still
# shows the input it half-selects.
SIGNED_VALUES = (1.0, -1.0, 0.0)
UNSIGNED_VALUES = (1.0, 0.0)


class UnsupportedLayerError(ValueError):
    """A layer `explain` cannot turn into an arithmetic expression."""


@dataclasses.dataclass
class _LayerReading:
    """One layer, read: how it maps input nodes to output nodes."""

    build: Callable[[list[Node]], list[Node]]
    distances: list[tuple[str, tuple[int, int], float, float]]  # name, loc, w, d
    notes: list[str]
    gate_text: list[str]  # per output unit; "" unless the layer is a NALU


def float64_array(tensor) -> np.ndarray:
    return np.asarray(ops.convert_to_numpy(tensor), dtype=np.float64)


def _round(kernel: np.ndarray, values) -> tuple[np.ndarray, np.ndarray]:
    """Nearest discrete value of every weight and the distance to it."""
    values = np.asarray(values)
    distance = np.abs(kernel[..., None] - values)
    nearest = values[np.argmin(distance, axis=-1)]
    return nearest.astype(int), distance.min(axis=-1)


def _kernel_distances(name, kernel, distance, columns=None):
    rows, cols = kernel.shape
    columns = range(cols) if columns is None else columns
    return [
        (name, (r, c), float(kernel[r, c]), float(distance[r, c]))
        for c in columns
        for r in range(rows)
    ]


def _signed_sums(rounded: np.ndarray) -> Callable[[list[Node]], list[Node]]:
    def build(inputs):
        return [
            make_sum((int(rounded[i, j]), node) for i, node in enumerate(inputs))
            for j in range(rounded.shape[1])
        ]

    return build


def _products(rounded: np.ndarray, keep_sign: bool):
    def build(inputs):
        return [
            make_product(
                ((int(rounded[i, j]), node) for i, node in enumerate(inputs)),
                keep_sign=keep_sign,
            )
            for j in range(rounded.shape[1])
        ]

    return build


#: The layers `explain` reads, for its messages.
READ_LAYERS = (
    "NAU, NMU, NMRU, NAC, NACMul, NALU, RealNPU, MCFC, MCFCMul, DMU and linear "
    "Dense layers without bias"
)


def _unsupported(layer, reason: str) -> UnsupportedLayerError:
    return UnsupportedLayerError(
        f"cannot read a formula from layer '{layer.name}' ({type(layer).__name__}): "
        f"{reason}. explain reads chains of {READ_LAYERS}; judge other models "
        "by their errors on the task (interpolation_mse and extrapolation_mse in "
        "a run's result.json)."
    )


def _not_read(layer) -> UnsupportedLayerError:
    """Why a layer outside the units `explain` reads has no formula."""
    if isinstance(layer, iNALU):
        reason = (
            "an iNALU mixes a sum and a product through a learned gate, with a "
            "sign and a clipped log on the product path, which explain does not read"
        )
    elif isinstance(layer, GatedNAUNMU):
        reason = (
            "a gated NAU/NMU mixes an NAU and an NMU through an input-dependent "
            "gate, which explain does not read"
        )
    elif isinstance(layer, NSR):
        reason = (
            "an NSR outputs the probability that a comparison of two inputs "
            "holds, σ(b + W±·S + W0·Z) of its sign and zero bits, not an "
            "arithmetic expression; its operands are its effective_weights()"
        )
    elif isinstance(layer, Piecewise):
        reason = (
            "a Piecewise layer switches between two units on a comparison, "
            "which is not one arithmetic expression; read its units one by one"
        )
    else:
        reason = "it is not one of the units explain reads"
    return _unsupported(layer, reason)


def _read_linear(layer, kernel) -> _LayerReading:
    rounded, distance = _round(kernel, SIGNED_VALUES)
    return _LayerReading(
        _signed_sums(rounded),
        _kernel_distances(layer.name, kernel, distance),
        [],
        [""] * kernel.shape[1],
    )


def _read_products(layer, values, keep_sign: bool) -> _LayerReading:
    """An NMU (weights {0, 1}) or NAC• (weights {-1, 0, 1}, |x|) layer."""
    kernel = float64_array(layer.effective_weights()["kernel"])
    rounded, distance = _round(kernel, values)
    return _LayerReading(
        _products(rounded, keep_sign=keep_sign),
        _kernel_distances(layer.name, kernel, distance),
        [],
        [""] * kernel.shape[1],
    )


def _read_nmru(layer) -> _LayerReading:
    """An NMRU: x_i to the power W_i - W_(I+i), rounded to {0, 1} each, signed."""
    weights = layer.effective_weights()
    kernel = float64_array(weights["kernel"])
    reciprocal = float64_array(weights["reciprocal_kernel"])
    rounded, distance = _round(kernel, UNSIGNED_VALUES)
    rounded_reciprocal, reciprocal_distance = _round(reciprocal, UNSIGNED_VALUES)
    return _LayerReading(
        _products(rounded - rounded_reciprocal, keep_sign=True),
        _kernel_distances(layer.name, kernel, distance)
        + _kernel_distances(
            f"{layer.name}.reciprocal_kernel", reciprocal, reciprocal_distance
        ),
        [],
        [""] * kernel.shape[1],
    )


def _read_real_npu(layer) -> _LayerReading:
    """A RealNPU: x_i to the power g_i·Re_i, g in {0, 1} and Re in {-1, 0, 1}."""
    kernel = float64_array(layer.effective_weights()["kernel"])
    gate = float64_array(layer.gate_values()).reshape(-1, 1)
    rounded, distance = _round(kernel, SIGNED_VALUES)
    rounded_gate, gate_distance = _round(gate, UNSIGNED_VALUES)
    return _LayerReading(
        _products(rounded * rounded_gate, keep_sign=True),
        _kernel_distances(layer.name, kernel, distance)
        + _kernel_distances(f"{layer.name}.gate", gate, gate_distance),
        [],
        [""] * kernel.shape[1],
    )


def _read_mcfc(layer) -> _LayerReading:
    """An MC-FC (sums) or its log-space form (products of magnitudes, × e^β)."""
    kernel = float64_array(layer.effective_weights()["kernel"])
    rounded, distance = _round(kernel, UNSIGNED_VALUES)
    distances = _kernel_distances(layer.name, kernel, distance)
    if not isinstance(layer, MCFCMul):
        return _LayerReading(
            _signed_sums(rounded), distances, [], [""] * kernel.shape[1]
        )
    # The bias β scales each product by e^β: read as 1 when β ≈ 0.
    bias = float64_array(layer.bias).reshape(1, -1)
    distances += _kernel_distances(f"{layer.name}.bias", bias, np.abs(bias))
    return _LayerReading(
        _products(rounded, keep_sign=False), distances, [], [""] * kernel.shape[1]
    )


def _read_dmu(layer, tolerance, layer_inputs, gate_names) -> _LayerReading:
    """A DMU: its fixed operands summed where the gate picks the linear
    domain on the sample inputs, multiplied (x0·x1^±1) where it picks log."""
    kernel = float64_array(layer.effective_weights()["kernel"])
    rounded, distance = _round(kernel, SIGNED_VALUES)
    linear = float64_array(layer.gate_values(layer_inputs)[..., 0])
    linear = linear.reshape(-1, kernel.shape[1])
    low, high = linear.min(axis=0), linear.max(axis=0)
    modes, notes, gate_text = [], [], []
    for j in range(kernel.shape[1]):
        if low[j] > 1.0 - tolerance:
            modes.append("add")
            gate_text.append("gate → linear on the sample inputs")
        elif high[j] < tolerance:
            modes.append("mul")
            gate_text.append("gate → log on the sample inputs")
        else:
            modes.append(gate_names.pop(0))
            why = f"g_lin in [{low[j]:.3g}, {high[j]:.3g}] on the sample inputs"
            gate_text.append(f"{modes[-1]} = gate of unit {j}, not one domain: {why}")
            notes.append(f"gate {modes[-1]} of {layer.name} (unit {j}) mixes both")
    sums = _signed_sums(rounded)
    products = _products(rounded, keep_sign=True)

    def build(inputs):
        outputs = []
        for mode, a, m in zip(modes, sums(inputs), products(inputs)):
            outputs.append(
                a if mode == "add" else m if mode == "mul" else Gated(mode, a, m)
            )
        return outputs

    return _LayerReading(
        build, _kernel_distances(layer.name, kernel, distance), notes, gate_text
    )


def map_kind(layer, tolerance) -> str | None:
    """The layer's map: "sum" for x·K, "log" for exp(log|x|·K), else None.

    Consecutive layers of one kind compute what one layer with the product of
    their kernels computes, so `explain` reads them together.
    """
    if isinstance(layer, NAU | NAC) or (
        isinstance(layer, MCFC) and not isinstance(layer, MCFCMul)
    ):
        return "sum"
    if isinstance(layer, NACMul):
        return "log"
    if isinstance(layer, keras.layers.Dense):
        if _activation(layer) == "linear" and _largest_bias(layer) <= tolerance:
            return "sum"
    return None


def _activation(layer) -> str:
    return getattr(layer.activation, "__name__", str(layer.activation))


def _largest_bias(layer) -> float:
    bias = None if layer.bias is None else float64_array(layer.bias)
    return float(np.max(np.abs(bias))) if bias is not None and bias.size else 0.0


def read_composition(layers, kind: str) -> _LayerReading:
    """Layers of one kind read as one: the product of their kernels, rounded
    to integers (hidden units that split or mix the inputs cancel out)."""
    kernel = float64_array(_map_kernel(layers[0]))
    for layer in layers[1:]:
        kernel = kernel @ float64_array(_map_kernel(layer))
    # Ties round away from 0, as `_round` prefers the non-zero value.
    rounded = (np.sign(kernel) * np.floor(np.abs(kernel) + 0.5)).astype(int)
    distance = np.abs(kernel - rounded)
    build = (
        _signed_sums(rounded) if kind == "sum" else _products(rounded, keep_sign=False)
    )
    name = "·".join(layer.name for layer in layers)
    return _LayerReading(
        build,
        _kernel_distances(name, kernel, distance),
        [],
        [""] * kernel.shape[1],
    )


def _map_kernel(layer):
    if isinstance(layer, keras.layers.Dense):
        return layer.kernel
    return layer.effective_weights()["kernel"]


def _read_dense(layer, tolerance) -> _LayerReading:
    activation = _activation(layer)
    if activation != "linear":
        raise _unsupported(layer, f"its activation '{activation}' is not linear")
    bias = _largest_bias(layer)
    if bias > tolerance:
        raise _unsupported(
            layer,
            f"its bias is not zero (largest |b| = {bias:.3g} > tolerance {tolerance})",
        )
    return _read_linear(layer, float64_array(layer.kernel))


def _read_nalu(layer, tolerance, layer_inputs, gate_names) -> _LayerReading:
    if getattr(layer, "two_gates", False):
        raise _unsupported(layer, "its two independent gates are not read")
    weights = layer.effective_weights()
    add_kernel, mul_kernel = (
        float64_array(weights["kernel"]),
        float64_array(weights["mul_kernel"]),
    )
    add_rounded, add_distance = _round(add_kernel, SIGNED_VALUES)
    mul_rounded, mul_distance = _round(mul_kernel, SIGNED_VALUES)
    units = add_kernel.shape[1]
    if getattr(layer, "gate_type", "input") == "constant":
        # An input-independent gate σ(G) is known without inputs.
        low = high = 1.0 / (1.0 + np.exp(-float64_array(layer.gate)))
        source = "(input-independent)"
    else:
        gates = float64_array(layer.gate_values(layer_inputs)).reshape(-1, units)
        low, high = gates.min(axis=0), gates.max(axis=0)
        source = "on the sample inputs"
    modes, notes, gate_text, unit_gates = [], [], [], []
    mul_name = layer.name + (".mul_kernel" if layer.separate_weights else "")
    distances = {}
    for j in range(units):
        if low[j] > 1.0 - tolerance:
            modes.append("add")
            unit_gates.append("")
            gate_text.append(f"gate → additive, 1 - g ≤ {1 - low[j]:.2g} {source}")
        elif high[j] < tolerance:
            modes.append("mul")
            unit_gates.append("")
            gate_text.append(f"gate → multiplicative, g ≤ {high[j]:.2g} {source}")
        else:
            modes.append("gated")
            gate = gate_names.pop(0)
            unit_gates.append(gate)
            why = f"g in [{low[j]:.3g}, {high[j]:.3g}] {source}"
            gate_text.append(f"{gate} = gate of unit {j}, not saturated: {why}")
            notes.append(f"gate {gate} of {layer.name} (unit {j}) is not saturated")
        if modes[-1] in ("add", "gated"):
            for item in _kernel_distances(layer.name, add_kernel, add_distance, [j]):
                distances[item[:2]] = item
        if modes[-1] in ("mul", "gated"):
            for item in _kernel_distances(mul_name, mul_kernel, mul_distance, [j]):
                distances[item[:2]] = item
    additive = _signed_sums(add_rounded)
    multiplicative = _products(mul_rounded, keep_sign=False)

    def build(inputs):
        outputs = []
        for mode, gate, a, m in zip(
            modes, unit_gates, additive(inputs), multiplicative(inputs)
        ):
            if mode == "add":
                outputs.append(a)
            elif mode == "mul":
                outputs.append(m)
            else:
                outputs.append(Gated(gate, a, m))
        return outputs

    return _LayerReading(build, list(distances.values()), notes, gate_text)


def needs_inputs(layer) -> bool:
    """Whether reading the layer needs its inputs: a NALU's gate σ(x·G), a
    DMU's gate of LayerNorm(x)."""
    return (isinstance(layer, NALU) and layer.gate_type != "constant") or isinstance(
        layer, DMU
    )


def read_layer(layer, tolerance, layer_inputs, gate_names) -> _LayerReading:
    if isinstance(layer, NAU):
        return _read_linear(layer, float64_array(layer.effective_weights()["kernel"]))
    if isinstance(layer, NMU):
        return _read_products(layer, UNSIGNED_VALUES, keep_sign=True)
    if isinstance(layer, NMRU):
        return _read_nmru(layer)
    if isinstance(layer, RealNPU):
        return _read_real_npu(layer)
    if isinstance(layer, NPU):
        raise _unsupported(layer, "its complex weights are not read (a RealNPU is)")
    if isinstance(layer, MCFC):
        return _read_mcfc(layer)
    if isinstance(layer, DMU):
        return _read_dmu(layer, tolerance, layer_inputs, gate_names)
    if isinstance(layer, NALU):  # before NAC: both share the NAC weights
        return _read_nalu(layer, tolerance, layer_inputs, gate_names)
    if isinstance(layer, NACMul):
        return _read_products(layer, SIGNED_VALUES, keep_sign=False)
    if isinstance(layer, NAC):
        return _read_linear(layer, float64_array(layer.effective_weights()["kernel"]))
    if isinstance(layer, keras.layers.Dense):
        return _read_dense(layer, tolerance)
    raise _not_read(layer)


def layer_chain(model) -> list:
    """The model's layers in order, after checking they form a single chain."""
    if not isinstance(model, keras.Model):
        if isinstance(model, keras.layers.Layer):
            return [model]
        raise TypeError(
            f"explain() expects a keras.Model. Received: {type(model).__name__}"
        )
    inputs, outputs = _io(model, "inputs"), _io(model, "outputs")
    if len(inputs) > 1 or len(outputs) > 1:
        raise ValueError(
            f"explain() reads single-input, single-output chains; model "
            f"'{model.name}' has {len(inputs)} inputs and {len(outputs)} outputs."
        )
    layers = [
        layer
        for layer in model.layers
        if not isinstance(layer, keras.layers.InputLayer)
    ]
    if not isinstance(model, keras.Sequential):
        previous = None
        for layer in layers:
            try:
                source = layer.input._keras_history.operation
            except (AttributeError, ValueError) as error:
                raise ValueError(
                    f"Layer '{layer.name}' of model '{model.name}' is used more "
                    "than once or has several inputs; explain() reads chains."
                ) from error
            if previous is None:
                chained = isinstance(source, keras.layers.InputLayer)
            else:
                chained = source is previous
            if not chained:
                raise ValueError(
                    f"Model '{model.name}' is not a chain: layer '{layer.name}' "
                    f"reads '{source.name}'."
                )
            previous = layer
    chain = []
    for layer in layers:
        chain.extend(layer_chain(layer) if isinstance(layer, keras.Model) else [layer])
    if not chain:
        raise ValueError(f"Model '{model.name}' has no layers to explain.")
    for layer in chain:
        if not layer.built:
            raise ValueError(
                f"Layer '{layer.name}' is not built; start the model with "
                "keras.Input or call it on data before explaining it."
            )
    return chain


def _io(model, attribute: str) -> list:
    try:
        return list(getattr(model, attribute) or ())
    except (AttributeError, ValueError):  # an unbuilt Sequential
        return []


def layer_input_size(layer) -> int:
    if isinstance(layer, NAC | NACMul | NALU | NAU | NMU | NMRU | NPU | MCFC | DMU):
        return int(layer.effective_weights()["kernel"].shape[0])
    if isinstance(layer, keras.layers.Dense):
        return int(layer.kernel.shape[0])
    raise _not_read(layer)
