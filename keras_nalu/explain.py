"""Reads the expression a trained chain of arithmetic units computes.

A solved NAU/NMU model's weights are the answer: rounded to {-1, 0, 1} (NMU:
{0, 1}) they spell out which inputs are added, subtracted, multiplied and
divided. `explain` walks a model layer by layer, rounds every effective weight
to its nearest discrete value, substitutes each layer's outputs into the next
layer's, and reports how far the weights are from that discrete solution.
`compare_with_task` checks the result against an arithmetic task's target.

Only `Explanation.sympy`, `Explanation.equivalent_to` and `compare_with_task`
need SymPy (`pip install keras-arithmetic-units[symbolic]`).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import keras
import numpy as np
from keras import ops

from keras_nalu.layers import NAC, NALU, NAU, NMU, NACMul

__all__ = [
    "Explanation",
    "TaskComparison",
    "UnsupportedLayerError",
    "compare_with_task",
    "explain",
]

# Rounding prefers the non-zero value on a tie, so a weight stuck at 0.5 still
# shows the input it half-selects.
SIGNED_VALUES = (1.0, -1.0, 0.0)
UNSIGNED_VALUES = (1.0, 0.0)
SYMPY_HINT = (
    "This needs SymPy. Install it with "
    "`pip install keras-arithmetic-units[symbolic]` (or `pip install sympy`)."
)
OPERATIONS = ("add", "sub", "mul", "div", "squared", "root")


class UnsupportedLayerError(ValueError):
    """A layer `explain` cannot turn into an arithmetic expression."""


# --------------------------------------------------------------------------
# Expression tree: small, hashable, built from rounded weights.


@dataclasses.dataclass(frozen=True)
class _Var:
    name: str
    family: str | None  # "x" renders runs x3, x4, x5 as sum(x[3:6])
    index: int


@dataclasses.dataclass(frozen=True)
class _Const:
    value: int


@dataclasses.dataclass(frozen=True)
class _Sum:
    terms: tuple[tuple[int, _Node], ...]  # (coefficient, non-sum child)


@dataclasses.dataclass(frozen=True)
class _Product:
    factors: tuple[tuple[Fraction, _Node], ...]  # (power, non-product child)


@dataclasses.dataclass(frozen=True)
class _Gated:
    gate: str
    additive: _Node
    multiplicative: _Node


_Node = _Var | _Const | _Sum | _Product | _Gated


def _make_sum(terms) -> _Node:
    """Σ coefficient·node, nested sums flattened, constants folded."""
    flat, constant = [], 0
    for coefficient, node in terms:
        if coefficient == 0:
            continue
        if isinstance(node, _Const):
            constant += coefficient * node.value
        elif isinstance(node, _Sum):
            for inner, child in node.terms:
                if isinstance(child, _Const):
                    constant += coefficient * inner * child.value
                else:
                    flat.append((coefficient * inner, child))
        else:
            flat.append((coefficient, node))
    # Like terms merge (h0 + h1 of a linear chain is one linear form), and
    # inputs come in index order so runs can collapse.
    merged: dict[_Node, int] = {}
    for coefficient, node in flat:
        merged[node] = merged.get(node, 0) + coefficient
    variables = sorted(
        (node for node, c in merged.items() if c and isinstance(node, _Var)),
        key=lambda node: (node.family or "", node.index, node.name),
    )
    others = [n for n, c in merged.items() if c and not isinstance(n, _Var)]
    flat = [(merged[node], node) for node in [*variables, *others]]
    if constant:
        flat.append((1 if constant > 0 else -1, _Const(abs(constant))))
    if not flat:
        return _Const(0)
    if len(flat) == 1 and flat[0][0] == 1:
        return flat[0][1]
    return _Sum(tuple(flat))


def _split_sign(node: _Node) -> tuple[int, _Node]:
    """(sign, positive node): -(a + b) → (-1, a + b); keeps x0 - x1 as it is."""
    if not isinstance(node, _Sum):
        return 1, node
    negatives = sum(coefficient < 0 for coefficient, _ in node.terms)
    positives = len(node.terms) - negatives
    if negatives > positives or (negatives == positives and node.terms[0][0] < 0):
        return -1, _make_sum((-c, child) for c, child in node.terms)
    return 1, node


def _make_product(factors, keep_sign: bool = True) -> _Node:
    """∏ node**power; signs of the factors move in front (or vanish when the
    product is of magnitudes, as in NAC•)."""
    sign, powers = 1, {}
    for power, node in factors:
        power = Fraction(power)
        if power == 0:
            continue
        factor_sign, node = _split_sign(node)
        if factor_sign < 0 and power.denominator == 1 and power.numerator % 2:
            sign = -sign
        inner = node.factors if isinstance(node, _Product) else ((1, node),)
        for inner_power, child in inner:
            if isinstance(child, _Const) and child.value == 1:
                continue
            if isinstance(child, _Const) and child.value == 0 and power > 0:
                return _Const(0)
            powers[child] = powers.get(child, Fraction(0)) + power * inner_power
    kept = tuple((p, child) for child, p in powers.items() if p != 0)
    if not kept:
        result = _Const(1)
    elif len(kept) == 1 and kept[0][0] == 1:
        result = kept[0][1]
    else:
        result = _Product(kept)
    if keep_sign and sign < 0:
        return _make_sum([(-1, result)])
    return result


def _render(node: _Node) -> str:
    if isinstance(node, _Var):
        return node.name
    if isinstance(node, _Const):
        return str(node.value)
    if isinstance(node, _Sum):
        items = _sum_items(node)
        text = ("-" if items[0][0] < 0 else "") + items[0][1]
        for sign, item in items[1:]:
            text += (" - " if sign < 0 else " + ") + item
        return text
    if isinstance(node, _Product):
        numerator = [_factor_text(p, c) for p, c in node.factors if p > 0]
        denominator = [_factor_text(-p, c) for p, c in node.factors if p < 0]
        text = " * ".join(numerator) or "1"
        return "".join([text, *(f" / {d}" for d in denominator)])
    additive, multiplicative = _render(node.additive), _render(node.multiplicative)
    return f"{node.gate}*({additive}) + (1 - {node.gate})*({multiplicative})"


def _sum_items(node: _Sum) -> list[tuple[int, str]]:
    """Signed items of a sum; runs of ≥ 3 consecutive inputs become sum(x[a:b])."""
    items, run = [], []

    def scaled(coefficient: int, text: str) -> tuple[int, str]:
        prefix = "" if abs(coefficient) == 1 else f"{abs(coefficient)}*"
        return (1 if coefficient > 0 else -1, prefix + text)

    def close_run():
        if len(run) >= 3:
            first = run[0][1]
            end = run[-1][1].index + 1
            text = f"sum({first.family}[{first.index}:{end}])"
            items.append(scaled(run[0][0], text))
        else:
            items.extend(scaled(coefficient, var.name) for coefficient, var in run)
        run.clear()

    for coefficient, child in node.terms:
        if isinstance(child, _Var) and child.family is not None:
            if run and not (
                run[-1][0] == coefficient
                and run[-1][1].family == child.family
                and run[-1][1].index + 1 == child.index
            ):
                close_run()
            run.append((coefficient, child))
            continue
        close_run()
        text = _render(child)
        if isinstance(child, _Gated):
            text = f"({text})"
        elif abs(coefficient) != 1:
            text = f"{abs(coefficient)}*{text}"
        items.append((1 if coefficient > 0 else -1, text))
    close_run()
    return items


def _factor_text(power: Fraction, node: _Node) -> str:
    text = _render(node)
    if isinstance(node, _Gated) or (
        isinstance(node, _Sum) and text != _sum_items(node)[0][1]
    ):
        text = f"({text})"  # keeps sum(x[0:25]) bare, wraps x0 + x1 and -x2
    if power == 1:
        return text
    if power.denominator == 1:
        return f"{text}**{power.numerator}"
    return f"{text}**({power.numerator}/{power.denominator})"


def _to_sympy(node: _Node, sympy):
    if isinstance(node, _Var):
        return sympy.Symbol(node.name)
    if isinstance(node, _Const):
        return sympy.Integer(node.value)
    if isinstance(node, _Sum):
        return sympy.Add(*(c * _to_sympy(child, sympy) for c, child in node.terms))
    if isinstance(node, _Product):
        return sympy.Mul(
            *(
                sympy.Pow(
                    _to_sympy(child, sympy),
                    sympy.Rational(power.numerator, power.denominator),
                )
                for power, child in node.factors
            )
        )
    gate = sympy.Symbol(node.gate)
    return gate * _to_sympy(node.additive, sympy) + (1 - gate) * _to_sympy(
        node.multiplicative, sympy
    )


def _linear_form(node: _Node) -> dict[int | None, int] | None:
    """{input index: coefficient, None: constant} if `node` is a signed sum."""
    if isinstance(node, _Var):
        return {node.index: 1}
    if isinstance(node, _Const):
        return {None: node.value} if node.value else {}
    if isinstance(node, _Sum):
        form: dict[int | None, int] = {}
        for coefficient, child in node.terms:
            inner = _linear_form(child)
            if inner is None:
                return None
            for key, value in inner.items():
                form[key] = form.get(key, 0) + coefficient * value
        return {key: value for key, value in form.items() if value}
    return None


# --------------------------------------------------------------------------
# Reading the layers.


@dataclasses.dataclass
class _LayerReading:
    """One layer, read: how it maps input nodes to output nodes."""

    build: Callable[[list[_Node]], list[_Node]]
    distances: list[tuple[str, tuple[int, int], float, float]]  # name, loc, w, d
    notes: list[str]
    gate_text: list[str]  # per output unit; "" unless the layer is a NALU


def _numpy(tensor) -> np.ndarray:
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


def _signed_sums(rounded: np.ndarray) -> Callable[[list[_Node]], list[_Node]]:
    def build(inputs):
        return [
            _make_sum((int(rounded[i, j]), node) for i, node in enumerate(inputs))
            for j in range(rounded.shape[1])
        ]

    return build


def _products(rounded: np.ndarray, keep_sign: bool):
    def build(inputs):
        return [
            _make_product(
                ((int(rounded[i, j]), node) for i, node in enumerate(inputs)),
                keep_sign=keep_sign,
            )
            for j in range(rounded.shape[1])
        ]

    return build


def _unsupported(layer, reason: str) -> UnsupportedLayerError:
    return UnsupportedLayerError(
        f"explain() cannot read layer '{layer.name}' ({type(layer).__name__}): "
        f"{reason}. It reads chains of NAU, NMU, NAC, NACMul, NALU and "
        "Dense(activation=None) layers without bias."
    )


def _read_linear(layer, kernel) -> _LayerReading:
    rounded, distance = _round(kernel, SIGNED_VALUES)
    return _LayerReading(
        _signed_sums(rounded),
        _kernel_distances(layer.name, kernel, distance),
        [],
        [""] * kernel.shape[1],
    )


def _read_dense(layer, tolerance) -> _LayerReading:
    activation = getattr(layer.activation, "__name__", str(layer.activation))
    if activation != "linear":
        raise _unsupported(layer, f"its activation '{activation}' is not linear")
    if layer.bias is not None:
        bias = _numpy(layer.bias)
        if bias.size and np.max(np.abs(bias)) > tolerance:
            raise _unsupported(
                layer,
                f"its bias is not zero (largest |b| = {np.max(np.abs(bias)):.3g} > "
                f"tolerance {tolerance})",
            )
    return _read_linear(layer, _numpy(layer.kernel))


def _read_nalu(layer, tolerance, layer_inputs, gate_names) -> _LayerReading:
    if getattr(layer, "two_gates", False):
        raise _unsupported(layer, "its two independent gates are not read")
    weights = layer.effective_weights()
    add_kernel, mul_kernel = _numpy(weights["kernel"]), _numpy(weights["mul_kernel"])
    add_rounded, add_distance = _round(add_kernel, SIGNED_VALUES)
    mul_rounded, mul_distance = _round(mul_kernel, SIGNED_VALUES)
    units = add_kernel.shape[1]
    if getattr(layer, "gate_type", "input") == "constant":
        # An input-independent gate σ(G) is known without inputs.
        low = high = 1.0 / (1.0 + np.exp(-_numpy(layer.gate)))
        free = np.ones(units, dtype=bool)
        source = "(input-independent)"
    elif layer_inputs is not None:
        gates = _numpy(layer.gate_values(layer_inputs)).reshape(-1, units)
        low, high = gates.min(axis=0), gates.max(axis=0)
        source = "on sample_inputs"
    else:
        # Without inputs the gate is known only if it ignores them (G ≈ 0).
        gate_kernel = _numpy(layer.gate)
        bias = _numpy(layer.gate_bias) if layer.use_gate_bias else np.zeros(units)
        constant = 1.0 / (1.0 + np.exp(-bias))
        free = np.max(np.abs(gate_kernel), axis=0) <= tolerance
        low = np.where(free, constant, 0.0)
        high = np.where(free, constant, 1.0)
        source = "with G ≈ 0"
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
            if layer_inputs is None and not free[j]:
                why = "unknown without inputs; pass explain(..., sample_inputs=...)"
            else:
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
                outputs.append(_Gated(gate, a, m))
        return outputs

    return _LayerReading(build, list(distances.values()), notes, gate_text)


def _read_layer(layer, tolerance, layer_inputs, gate_names) -> _LayerReading:
    if isinstance(layer, NAU):
        return _read_linear(layer, _numpy(layer.effective_weights()["kernel"]))
    if isinstance(layer, NMU):
        kernel = _numpy(layer.effective_weights()["kernel"])
        rounded, distance = _round(kernel, UNSIGNED_VALUES)
        return _LayerReading(
            _products(rounded, keep_sign=True),
            _kernel_distances(layer.name, kernel, distance),
            [],
            [""] * kernel.shape[1],
        )
    if isinstance(layer, NALU):  # before NAC: both share the NAC weights
        return _read_nalu(layer, tolerance, layer_inputs, gate_names)
    if isinstance(layer, NACMul):
        kernel = _numpy(layer.effective_weights()["kernel"])
        rounded, distance = _round(kernel, SIGNED_VALUES)
        return _LayerReading(
            _products(rounded, keep_sign=False),
            _kernel_distances(layer.name, kernel, distance),
            [],
            [""] * kernel.shape[1],
        )
    if isinstance(layer, NAC):
        return _read_linear(layer, _numpy(layer.effective_weights()["kernel"]))
    if isinstance(layer, keras.layers.Dense):
        return _read_dense(layer, tolerance)
    raise _unsupported(layer, "it is not an arithmetic unit")


def _chain(model) -> list:
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
        chain.extend(_chain(layer) if isinstance(layer, keras.Model) else [layer])
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


def _input_size(layer) -> int:
    if isinstance(layer, NAC | NACMul | NALU | NAU | NMU):
        return int(layer.effective_weights()["kernel"].shape[0])
    if isinstance(layer, keras.layers.Dense):
        return int(layer.kernel.shape[0])
    raise _unsupported(layer, "it is not an arithmetic unit")


# --------------------------------------------------------------------------
# Public API.


@dataclasses.dataclass
class Explanation:
    """The expression a chain of arithmetic units computes, and how exact it is.

    Attributes:
        outputs: one expression per model output unit, e.g.
            `["sum(x[13:38]) * sum(x[26:51])"]`. `sum(x[a:b])` is
            `x_a + ... + x_{b-1}`; the strings parse as Python/SymPy with
            `x` bound to the list of inputs.
        discrete: True when the expression is exact: every weight within
            `tolerance` of its discrete value and every NALU gate saturated.
        max_deviation: the largest distance of any weight to its nearest
            discrete value, max min(|W|, |1 - |W||) (Madsen & Johansen 2020, eq. 17, the
            sparsity error). For a saturated NALU unit only the weights of the
            selected path count.
        deviations: `(layer name, (row, column), weight)` for every weight
            farther than `tolerance` from a discrete value, worst first.
        layers: one summary per layer in terms of that layer's own inputs.
        notes: other reasons the expression is approximate (free NALU gates).
        input_names: the names the expressions use for the model inputs.

    `str()` gives `"y = ..."` (one `"y<i> = ..."` line per output when there
    are several), followed by `"  [approximate: ...]"` when not discrete.

    Example:

    >>> import keras
    >>> from keras_nalu.layers import NAU
    >>> model = keras.Sequential([keras.Input((5,)), NAU(1, name="sum")])
    >>> _ = model.layers[0].kernel.assign([[0.0], [1.0], [1.0], [1.0], [-1.0]])
    >>> explanation = explain(model)
    >>> print(explanation)
    y = sum(x[1:4]) - x4
    >>> explanation.discrete, explanation.layers
    (True, ['sum: y = sum(x[1:4]) - x4'])
    """

    outputs: list[str]
    discrete: bool
    max_deviation: float
    deviations: list[tuple[str, tuple[int, int], float]]
    layers: list[str]
    notes: list[str] = dataclasses.field(default_factory=list)
    input_names: list[str] = dataclasses.field(default_factory=list, repr=False)
    _trees: list[Any] = dataclasses.field(
        default_factory=list, repr=False, compare=False
    )

    def __str__(self) -> str:
        if len(self.outputs) == 1:
            text = f"y = {self.outputs[0]}"
        else:
            text = "\n".join(f"y{i} = {out}" for i, out in enumerate(self.outputs))
        if not self.discrete:
            reasons = []
            if self.deviations:
                name, (row, col) = self.deviations[0][:2]
                reasons.append(
                    f"max deviation {self.max_deviation:.3g} at {name}[{row},{col}]"
                )
            reasons.extend(self.notes)
            text += f"  [approximate: {'; '.join(reasons)}]"
        return text

    def sympy(self) -> list:
        """The outputs as SymPy expressions over symbols named like the inputs.

        Example:

        >>> import keras
        >>> from keras_nalu.layers import NAU
        >>> model = keras.Sequential([keras.Input((3,)), NAU(1)])
        >>> _ = model.layers[0].kernel.assign([[1.0], [0.0], [-1.0]])
        >>> explain(model).sympy()
        [x0 - x2]
        """
        sympy = _import_sympy()
        return [_to_sympy(tree, sympy) for tree in self._trees]

    def equivalent_to(self, target: str, output: int = 0) -> bool:
        """Whether output `output` equals `target` for all inputs (SymPy).

        Args:
            target: an expression over the input names (`x0 ... x{n-1}` by
                default); `sum(x[a:b])` and `sqrt(...)` are understood.
            output: index of the model output to compare.

        Example:

        >>> import keras
        >>> from keras_nalu.layers import NAU, NMU
        >>> model = keras.Sequential([keras.Input((3,)), NAU(2), NMU(1)])
        >>> _ = model.layers[0].kernel.assign([[1, 0], [1, 0], [0, 1.0]])
        >>> _ = model.layers[1].kernel.assign([[1.0], [1.0]])
        >>> explain(model).equivalent_to("x0*x2 + x1*x2")
        True
        """
        sympy = _import_sympy()
        from sympy.parsing.sympy_parser import parse_expr

        symbols = [sympy.Symbol(name) for name in self.input_names]
        names = {str(symbol): symbol for symbol in symbols}
        parsed = parse_expr(target, local_dict={"x": symbols, "sum": sum, **names})
        return _sympy_equal(self.sympy()[output], parsed, symbols, sympy)


@dataclasses.dataclass(frozen=True)
class TaskComparison:
    """The verdict of `compare_with_task`.

    Attributes:
        verdict: `"exact"`, `"exact up to sign"`, `"not discrete"`,
            `"wrong subset"` or `"wrong operation"`.
        detail: what the model computes against what the task asks, and which
            inputs are extra or missing.

    Example:

    >>> print(TaskComparison("wrong subset", "factor 2 has extra input x51"))
    wrong subset: factor 2 has extra input x51
    """

    verdict: str
    detail: str

    def __str__(self) -> str:
        return f"{self.verdict}: {self.detail}" if self.detail else self.verdict


def explain(
    model,
    tolerance: float = 0.01,
    input_names: Sequence[str] | None = None,
    sample_inputs=None,
) -> Explanation:
    """Reads the arithmetic expression computed by a chain of units.

    Every effective weight (NAU/NMU clipped to their box as in the forward
    pass, NAC/NAC•/NALU `tanh(Ŵ)⊙σ(M̂)`) is rounded to the nearest of
    {-1, 0, 1} ({0, 1} for the NMU). NAU, NAC and linear Dense rows become
    signed sums, NMU columns products of the selected inputs, NAC• columns
    products with weight -1 dividing. NAC• (and the NALU's multiplicative path)
    multiplies magnitudes |x|; the expression leaves the absolute values out,
    as the arithmetic tasks' inputs are positive. A NALU unit whose gate is
    saturated (all g > 1 - tolerance, or all g < tolerance) reads as its
    additive or multiplicative path; otherwise it reads `g*(add) + (1 - g)*(mul)`
    and the explanation is approximate. Weights farther than `tolerance` from a
    discrete value are listed and also make it approximate; the expression is
    still written with the rounded weights.

    Args:
        model: a `keras.Sequential` or functional model (or a single built
            layer) whose layers form a chain of NAU, NMU, NAC, NACMul, NALU
            and `Dense` layers with linear activation and zero bias.
        tolerance: largest distance of a weight from its discrete value that
            still counts as discrete, in [0, 0.5).
        input_names: names of the model inputs; default `x0 ... x{n-1}`, for
            which runs of three or more consecutive inputs collapse into
            `sum(x[a:b])`.
        sample_inputs: optional representative input batch, used to evaluate
            NALU gates. Without it a gate counts as saturated only if its
            weights G are ≈ 0 and its bias saturates the sigmoid.

    Returns:
        An `Explanation`; `str()` gives `"y = ..."`.

    Raises:
        UnsupportedLayerError: (a `ValueError`) for a layer that is not one of
            the above, naming the layer and its class.

    Example:

    >>> import keras
    >>> from keras_nalu.layers import NAU, NMU
    >>> model = keras.Sequential([keras.Input((4,)), NAU(2), NMU(1)])
    >>> _ = model.layers[0].kernel.assign([[1, 0], [1, 0], [0, 1], [0, -1.0]])
    >>> _ = model.layers[1].kernel.assign([[1.0], [0.9]])
    >>> explanation = explain(model)
    >>> print(explanation)  # doctest: +ELLIPSIS
    y = (x0 + x1) * (x2 - x3)  [approximate: max deviation 0.1 at nmu...[1,0]]
    >>> explanation.layers[0]  # doctest: +ELLIPSIS
    'nau...: h0 = x0 + x1; h1 = x2 - x3'
    """
    tolerance = float(tolerance)
    if not 0.0 <= tolerance < 0.5:
        raise ValueError(
            f"explain() expects 0 <= tolerance < 0.5. Received: tolerance={tolerance}"
        )
    chain = _chain(model)
    size = _input_size(chain[0])
    if input_names is None:
        inputs = [_Var(f"x{i}", "x", i) for i in range(size)]
    else:
        input_names = [str(name) for name in input_names]
        if len(input_names) != size:
            raise ValueError(
                f"explain() expects {size} input_names for this model. "
                f"Received: {len(input_names)} names"
            )
        inputs = [_Var(name, None, i) for i, name in enumerate(input_names)]
    sample = None
    if sample_inputs is not None:
        sample = np.asarray(sample_inputs, dtype="float32").reshape(-1, size)

    gate_names = [f"g{i}" for i in range(sum(getattr(x, "units", 0) for x in chain))]
    expressions, summaries, distances, notes = inputs, [], [], []
    hidden_count = len(chain) - 1
    previous_names = inputs
    for depth, layer in enumerate(chain):
        reading = _read_layer(layer, tolerance, sample, gate_names)
        expressions = reading.build(expressions)
        distances.extend(reading.distances)
        notes.extend(reading.notes)
        local = reading.build(previous_names)
        last = depth == len(chain) - 1
        if last:
            prefix = "y"
        else:
            prefix = "h" if hidden_count == 1 else f"h{depth + 1}_"
        names = (
            ["y"]
            if last and len(local) == 1
            else [f"{prefix}{j}" for j in range(len(local))]
        )
        parts = []
        for j, (name, node) in enumerate(zip(names, local)):
            extra = f" ({reading.gate_text[j]})" if reading.gate_text[j] else ""
            parts.append(f"{name} = {_render(node)}{extra}")
        off = [d for d in reading.distances if d[3] > tolerance]
        if off:
            worst = max(off, key=lambda d: d[3])
            parts[-1] += (
                f"  [{len(off)} weight(s) off, worst {worst[2]:.3g} at "
                f"{worst[0]}[{worst[1][0]},{worst[1][1]}]]"
            )
        summaries.append(f"{layer.name}: " + "; ".join(parts))
        previous_names = [_Var(name, prefix, j) for j, name in enumerate(names)]
        if sample is not None:
            sample = _numpy(layer(sample)).astype("float32")

    off = sorted((d for d in distances if d[3] > tolerance), key=lambda d: -d[3])
    max_deviation = max((d[3] for d in distances), default=0.0)
    return Explanation(
        outputs=[_render(node) for node in expressions],
        discrete=not off and not notes,
        max_deviation=float(max_deviation),
        deviations=[(name, loc, weight) for name, loc, weight, _ in off],
        layers=summaries,
        notes=notes,
        input_names=[var.name for var in inputs],
        _trees=list(expressions),
    )


# --------------------------------------------------------------------------
# Comparing with a task.


def _import_sympy():
    try:
        import sympy
    except ImportError as error:
        raise ImportError(SYMPY_HINT) from error
    return sympy


def _sympy_equal(left, right, symbols, sympy) -> bool:
    difference = left - right
    free = sorted(difference.free_symbols, key=str)
    if not free:
        return sympy.simplify(difference) == 0
    # Cheap rejection first: large products of sums are slow to simplify.
    rng = random.Random(0)
    for _ in range(3):
        point = {s: sympy.Rational(rng.randint(100, 200), 97) for s in free}
        try:
            value = complex(difference.subs(point).evalf())
        except (TypeError, ValueError):  # a zero divisor at this point
            continue
        if abs(value) > 1e-9:
            return False
    if sympy.expand(difference) == 0:
        return True
    return sympy.simplify(sympy.cancel(sympy.together(difference))) == 0


def _task_tree(task, inputs: list[_Var]) -> _Node:
    operation = str(task.operation)
    if operation not in OPERATIONS:
        raise ValueError(
            f"compare_with_task expects task.operation in {OPERATIONS}. "
            f"Received: operation={operation!r}"
        )
    size = int(task.input_size)
    if size != len(inputs):
        raise ValueError(
            f"The task has input_size={size} but the model reads {len(inputs)} inputs."
        )
    subsets = [tuple(int(v) for v in subset) for subset in task.subsets]
    needed = 1 if operation in ("squared", "root") else 2
    if len(subsets) < needed or any(
        not 0 <= start <= end <= size for start, end in subsets
    ):
        raise ValueError(
            f"compare_with_task expects {needed} subsets [start, end) within "
            f"[0, {size}]. Received: subsets={task.subsets}"
        )
    a, b = (
        _make_sum((1, inputs[i]) for i in range(start, end))
        for start, end in (subsets + subsets)[:2]
    )
    return {
        "add": lambda: _make_sum([(1, a), (1, b)]),
        "sub": lambda: _make_sum([(1, a), (-1, b)]),
        "mul": lambda: _make_product([(1, a), (1, b)]),
        "div": lambda: _make_product([(1, a), (-1, b)]),
        "squared": lambda: _make_product([(2, a)]),
        "root": lambda: _make_product([(Fraction(1, 2), a)]),
    }[operation]()


def _describe_linear(model_form, target_form, names) -> list[str]:
    """'extra inputs x51', 'missing input x13', 'coefficient -1 instead of +1 on
    x[26:38]' for the differences between two signed sums."""
    parts = []
    if model_form.get(None, 0) != target_form.get(None, 0):
        parts.append(
            f"constant {model_form.get(None, 0):+d} instead of "
            f"{target_form.get(None, 0):+d}"
        )
    keys = sorted(k for k in set(model_form) | set(target_form) if k is not None)
    extra = [k for k in keys if k not in target_form]
    missing = [k for k in keys if k not in model_form]
    if extra:
        parts.append(f"extra input{'s' * (len(extra) > 1)} {_indices(extra, names)}")
    if missing:
        plural = "s" * (len(missing) > 1)
        parts.append(f"missing input{plural} {_indices(missing, names)}")
    wrong: dict[tuple[int, int], list[int]] = {}
    for k in keys:
        if k in model_form and k in target_form and model_form[k] != target_form[k]:
            wrong.setdefault((model_form[k], target_form[k]), []).append(k)
    for (mine, theirs), indices in wrong.items():
        parts.append(
            f"coefficient {mine:+d} instead of {theirs:+d} on "
            f"{_indices(indices, names)}"
        )
    return parts


def _indices(indices: list[int], names: list[str]) -> str:
    """x3, x[5:9] for indices [3, 5, 6, 7, 8] (runs only with default names)."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and runs[-1][-1] + 1 == index:
            runs[-1].append(index)
        else:
            runs.append([index])
    default = all(name == f"x{i}" for i, name in enumerate(names))
    texts = []
    for run in runs:
        if default and len(run) >= 3:
            texts.append(f"x[{run[0]}:{run[-1] + 1}]")
        else:
            texts.extend(names[i] for i in run)
    return ", ".join(texts)


def _unit_factors(node: _Node):
    """[(power, linear form, text)] with integer powers split into unit ones,
    or None when the node is not a product of signed sums."""
    _, node = _split_sign(node)  # the sign was judged by SymPy already
    factors = node.factors if isinstance(node, _Product) else ((Fraction(1), node),)
    result = []
    for power, child in factors:
        form = _linear_form(child)
        if form is None:
            return None
        if power.denominator == 1:
            unit = Fraction(1 if power > 0 else -1)
            result.extend([(unit, form, _render(child))] * abs(power.numerator))
        else:
            result.append((power, form, _render(child)))
    return result


def _match_factors(model_factors, target_factors, names) -> list[str] | None:
    """Per-factor differences, or None when the powers do not correspond."""
    model_powers = sorted(p for p, _, _ in model_factors)
    if model_powers != sorted(p for p, _, _ in target_factors):
        return None
    details = []
    for power in sorted(set(model_powers), reverse=True):
        mine = [(i, f) for i, f in enumerate(model_factors) if f[0] == power]
        theirs = [f for f in target_factors if f[0] == power]

        def cost(order, mine=mine, theirs=theirs):
            return sum(len(set(m[1][1]) ^ set(t[1])) for m, t in zip(mine, order))

        if len(theirs) <= 6:
            best = min(itertools.permutations(theirs), key=cost)
        else:
            best = theirs
        for (index, (_, form, text)), (_, target, _) in zip(mine, best):
            parts = _describe_linear(form, target, names)
            if parts:
                kind = "divisor" if power < 0 else "factor"
                details.append(f"{kind} {index + 1} ({text}) has " + "; ".join(parts))
    return details


def compare_with_task(
    explanation_or_model, task, output: int = 0, **explain_kwargs
) -> TaskComparison:
    """Judges a model (or its `Explanation`) against an arithmetic task.

    The target is built from the task: a and b are the sums of the inputs in
    `task.subsets[0]` and `task.subsets[1]` (each `[start, end)`), and the
    target is a + b, a - b, a * b, a / b, a**2 or a**(1/2) for `task.operation`
    `"add"`, `"sub"`, `"mul"`, `"div"`, `"squared"`, `"root"`. Verdicts:

    - `"not discrete"`: a weight is off its discrete value or a NALU gate is
      free; the detail says whether the rounded expression would be exact.
    - `"exact"`: equal to the target for all inputs (SymPy). The mirrored NMU
      solution, both factors negated, is exact.
    - `"exact up to sign"`: equal to minus the target.
    - `"wrong subset"`: the right operation on the wrong inputs; the detail
      names, per factor, the extra and missing inputs.
    - `"wrong operation"`: a different structure (e.g. a sum for a product).

    Args:
        explanation_or_model: an `Explanation` or a model for `explain`.
        task: any object with `operation`, `input_size` and `subsets`.
        output: index of the model output to judge.
        **explain_kwargs: passed to `explain` when given a model.

    Returns:
        A `TaskComparison(verdict, detail)`.

    Raises:
        ImportError: when SymPy is not installed.

    Example:

    >>> import keras, types
    >>> from keras_nalu.layers import NAU, NMU
    >>> model = keras.Sequential([keras.Input((4,)), NAU(2), NMU(1)])
    >>> _ = model.layers[0].kernel.assign([[1, 0], [1, 0], [0, 1], [0, 1.0]])
    >>> _ = model.layers[1].kernel.assign([[1.0], [1.0]])
    >>> task = types.SimpleNamespace(
    ...     operation="mul", input_size=4, subsets=((0, 2), (1, 4))
    ... )
    >>> result = compare_with_task(model, task)
    >>> result.verdict
    'wrong subset'
    >>> result.detail.split("; ")[0]
    'factor 2 (x2 + x3) has missing input x1'
    """
    sympy = _import_sympy()
    if isinstance(explanation_or_model, Explanation):
        explanation = explanation_or_model
    else:
        explanation = explain(explanation_or_model, **explain_kwargs)
    names = explanation.input_names
    inputs = [
        _Var(name, "x" if name == f"x{i}" else None, i) for i, name in enumerate(names)
    ]
    target = _task_tree(task, inputs)
    tree = explanation._trees[output]
    symbols = [sympy.Symbol(name) for name in names]
    model_expr, target_expr = _to_sympy(tree, sympy), _to_sympy(target, sympy)
    computes = (
        f"the model computes {explanation.outputs[output]}, "
        f"the task ({task.operation}) is {_render(target)}"
    )

    if _sympy_equal(model_expr, target_expr, symbols, sympy):
        verdict, detail = "exact", computes
    elif _sympy_equal(model_expr, -target_expr, symbols, sympy):
        verdict, detail = "exact up to sign", computes
    else:
        verdict, detail = _difference(tree, target, names, computes)
    if not explanation.discrete:
        reasons = []
        if explanation.deviations:
            name, (row, col), weight = explanation.deviations[0]
            reasons.append(
                f"{len(explanation.deviations)} weight(s) off their discrete "
                f"value, max deviation {explanation.max_deviation:.3g} "
                f"({weight:.3g} at {name}[{row},{col}])"
            )
        reasons.extend(explanation.notes)
        rounded = f"rounded, it would be {verdict}: {detail}"
        return TaskComparison("not discrete", "; ".join([*reasons, rounded]))
    return TaskComparison(verdict, detail)


def _difference(tree, target, names, computes) -> tuple[str, str]:
    target_form, model_form = _linear_form(target), _linear_form(tree)
    if target_form is not None:
        if model_form is None:
            return "wrong operation", computes
        return "wrong subset", "; ".join(
            [*_describe_linear(model_form, target_form, names), computes]
        )
    target_factors, model_factors = _unit_factors(target), _unit_factors(tree)
    if model_factors is None or (model_form is not None and len(target_factors) > 1):
        return "wrong operation", computes
    details = _match_factors(model_factors, target_factors, names)
    if details is None:
        return "wrong operation", computes
    if not details:  # same factors, so only the sign differs (e.g. a/b vs -a/b)
        return "wrong operation", computes
    return "wrong subset", "; ".join([*details, computes])
