"""`explain`: a chain of arithmetic units read back as the expression it computes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_nalu.errors import ArgumentError
from keras_nalu.explain.expression import (
    Gated,
    Var,
    evaluate,
    import_sympy,
    render,
    sympy_equal,
    to_sympy,
)
from keras_nalu.explain.readers import (
    float64_array,
    layer_chain,
    layer_input_size,
    map_kind,
    needs_inputs,
    read_composition,
    read_layer,
)
from keras_nalu.keras_utils import describe_weights, non_finite_weights
from keras_nalu.tasks.ranges import Range

#: The arithmetic task's interpolation and extrapolation ranges (Madsen &
#: Johansen 2020), where `explain` draws its sample inputs by default.
DEFAULT_INPUT_RANGES = ("U[1, 2]", "U[2, 6]")

#: Sample inputs drawn from each range.
SAMPLE_SIZE = 1_000


@dataclasses.dataclass
class Explanation:
    """The expression a chain of arithmetic units computes, and how exact it is.

    Attributes:
        outputs: one expression per model output unit, read from the rounded
            weights, e.g. `["sum(x[13:38]) * sum(x[26:51])"]`. `sum(x[a:b])`
            is `x_a + ... + x_{b-1}`; the strings parse as Python/SymPy with
            `x` bound to the list of inputs. `str()` prints only those that
            the model computes (see `differences`).
        discrete: True when every weight the expression is read from is within
            `tolerance` of its discrete value and every NALU gate saturated.
            Consecutive linear layers are read as one (the product of their
            kernels), so hidden units that mix the inputs count by what they
            compute together.
        max_deviation: the largest distance of any weight read to its nearest
            discrete value, max min(|W|, |1 - |W||) (Madsen & Johansen 2020,
            eq. 17, the sparsity error). For a saturated NALU unit only the
            weights of the selected path count.
        deviations: `(layer name, (row, column), weight)` for every weight
            farther than `tolerance` from a discrete value, worst first; the
            product of layers `a` and `b` is named `a·b`.
        layers: one summary per layer in terms of that layer's own inputs.
        notes: other reasons the expression is approximate (free NALU gates).
        input_names: the names the expressions use for the model inputs.
        differences: per output, the largest difference between the
            expression and the model's predictions on the sample inputs,
            |expression - prediction| / max(|prediction|, 1); None where the
            expression has a free NALU gate and cannot be evaluated.
        tolerance: the `tolerance` of `explain`: for the weights and for
            `differences`.
        sample: the inputs the expressions were checked on, in words.
        trees: per output, the expression as a tree of nodes, which
            `sympy`, `equivalent_to` and `compare_with_task` read.
        non_finite: `(variable path, index, value)` of every weight that is
            NaN or ±inf (a diverged run's): then no output has a formula,
            `str()` names them, and `max_deviation` is NaN.

    `str()` gives `"y = ..."` (one `"y<i> = ..."` line per output when there
    are several), followed by `"  [approximate: ...]"` when not discrete; an
    output whose expression differs from the model's predictions by more than
    `tolerance` reads `"no formula: ..."` with the reason instead.

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
    >>> explanation.matches_model, explanation.sample
    (True, '1,000 inputs from U[1, 2] and 1,000 from U[2, 6]')
    """

    outputs: list[str]
    discrete: bool
    max_deviation: float
    deviations: list[tuple[str, tuple[int, int], float]]
    layers: list[str]
    notes: list[str] = dataclasses.field(default_factory=list)
    input_names: list[str] = dataclasses.field(default_factory=list, repr=False)
    differences: list[float | None] = dataclasses.field(default_factory=list)
    tolerance: float = 0.01
    sample: str = ""
    trees: list[Any] = dataclasses.field(
        default_factory=list, repr=False, compare=False
    )
    non_finite: list[tuple[str, tuple[int, ...], float]] = dataclasses.field(
        default_factory=list
    )

    @property
    def matches_model(self) -> bool:
        """Whether every output's expression is what the model computes: within
        `tolerance` of its predictions on the sample inputs."""
        return all(self.matches_model_at(i) for i in range(len(self.outputs)))

    def matches_model_at(self, output: int) -> bool:
        """Whether output `output`'s expression is what the model computes."""
        difference = self.differences[output]
        return (
            not self.non_finite
            and difference is not None
            and difference <= self.tolerance
        )

    def no_formula_reason(self, output: int) -> str:
        """Why output `output` reads as no formula, in words."""
        if self.non_finite:
            count = len(self.non_finite)
            return (
                f"{count} weight{'s are' if count > 1 else ' is'} not finite: "
                f"{describe_weights(self.non_finite)}"
            )
        difference = self.differences[output]
        if difference is None:
            tree = self.trees[output]
            gates = [note for note in self.notes if _mentions_gate(tree, note)]
            return "; ".join(gates or self.notes)
        return (
            "the weights, rounded to their discrete values, give an expression "
            f"that differs from the model's predictions by up to {difference:.3g} "
            f"(relative), more than the tolerance {self.tolerance:g}, on "
            f"{self.sample}"
        )

    def _deviation_text(self) -> str:
        name, (row, col) = self.deviations[0][:2]
        return f"max deviation {self.max_deviation:.3g} at {name}[{row},{col}]"

    def __str__(self) -> str:
        single = len(self.outputs) == 1
        lines = []
        for i, text in enumerate(self.outputs):
            name = "y" if single else f"y{i}"
            if self.matches_model_at(i):
                lines.append(f"{name} = {text}")
                continue
            reason = self.no_formula_reason(i)
            if self.deviations and not self.non_finite:
                reason += f"; {self._deviation_text()}"
            lines.append(
                f"no formula: {reason}" if single else f"{name}: no formula ({reason})"
            )
        text = "\n".join(lines)
        shown = [d for i, d in enumerate(self.differences) if self.matches_model_at(i)]
        if shown and self.deviations:
            text += (
                f"  [approximate: {self._deviation_text()}; within "
                f"{max(shown):.2g} of the model's predictions]"
            )
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
        sympy = import_sympy()
        return [to_sympy(tree, sympy) for tree in self.trees]

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
        sympy = import_sympy()
        from sympy.parsing.sympy_parser import parse_expr

        symbols = [sympy.Symbol(name) for name in self.input_names]
        names = {str(symbol): symbol for symbol in symbols}
        parsed = parse_expr(target, local_dict={"x": symbols, "sum": sum, **names})
        return sympy_equal(self.sympy()[output], parsed, symbols, sympy)


def explain(
    model,
    tolerance: float = 0.01,
    input_names: Sequence[str] | None = None,
    sample_inputs=None,
    input_ranges: Sequence = DEFAULT_INPUT_RANGES,
) -> Explanation:
    """Reads the arithmetic expression computed by a chain of units.

    Every effective weight (NAU/NMU clipped to their box as in the forward
    pass, NAC/NAC•/NALU `tanh(Ŵ)⊙σ(M̂)`) is rounded to the nearest of
    {-1, 0, 1} ({0, 1} for the NMU). NAU, NAC and linear Dense rows become
    signed sums, NMU columns products of the selected inputs, NAC• columns
    products with weight -1 dividing. Consecutive linear layers (NAU, NAC,
    MC-FC, linear Dense) compute one linear map, the product of their
    kernels, and are read as one, rounded to integers: hidden units that
    split or mix the inputs count by what they compute together. Consecutive
    NAC• layers are read as one too (the product of their exponents). NAC•
    (and the NALU's multiplicative path) multiplies magnitudes |x|; the
    expression leaves the absolute values out, as the arithmetic tasks'
    inputs are positive. A NALU unit whose gate is saturated on the sample
    inputs (all g > 1 - tolerance, or all g < tolerance) reads as its additive
    or multiplicative path; otherwise it reads `g*(add) + (1 - g)*(mul)`,
    which is no formula. Weights farther than `tolerance` from a discrete
    value are listed and make the expression approximate.

    Every expression is then checked against the model's own predictions on
    the sample inputs: one that differs from them by more than `tolerance`,
    |expression - prediction| / max(|prediction|, 1), is not what the model
    computes, and `str()` says so instead of printing it.

    Args:
        model: a `keras.Sequential` or functional model (or a single built
            layer) whose layers form a chain of NAU, NMU (and sNMU), NMRU,
            NAC, NACMul, NALU, RealNPU, MCFC, MCFCMul and `Dense` layers with
            linear activation and zero bias.
        tolerance: largest distance of a weight from its discrete value that
            still counts as discrete, and largest relative difference between
            an expression and the model's predictions, in [0, 0.5).
        input_names: names of the model inputs; default `x0 ... x{n-1}`, for
            which runs of three or more consecutive inputs collapse into
            `sum(x[a:b])`.
        sample_inputs: optional representative input batch, on which NALU
            gates are judged and the expressions checked.
        input_ranges: without `sample_inputs`, the ranges (`Range`s or their
            text, e.g. `"U[-2, 2]"`) that 1,000 sample inputs each are drawn
            from, with a fixed seed. Default: U[1, 2] and U[2, 6], the
            arithmetic task's interpolation and extrapolation ranges.

    Returns:
        An `Explanation`; `str()` gives `"y = ..."`, or `"no formula: ..."`.

    Raises:
        UnsupportedLayerError: (a `ValueError`) for a layer that is not one of
            the above, naming the layer and its class.

    Example:

    Two hidden units that mix the inputs, read together:

    >>> import keras
    >>> from keras_nalu.layers import NAU, NMU
    >>> model = keras.Sequential([keras.Input((3,)), NAU(2), NAU(1)])
    >>> _ = model.layers[0].kernel.assign([[0.5, 0.5], [-0.3, -0.7], [0, 0.0]])
    >>> _ = model.layers[1].kernel.assign([[1.0], [1.0]])
    >>> explanation = explain(model)
    >>> print(explanation)
    y = x0 - x1
    >>> explanation.layers[0]  # doctest: +ELLIPSIS
    'nau...: h0 = x0; h1 = x0 - x1  [4 weight(s) off, worst 0.5 at nau...[0,0]]'

    An NMU weight of 0.9 is no formula: the factor it half-selects, x2 - x3,
    crosses 0, where 0.9·(x2 - x3) + 0.1 is far from x2 - x3.

    >>> model = keras.Sequential([keras.Input((4,)), NAU(2), NMU(1)])
    >>> _ = model.layers[0].kernel.assign([[1, 0], [1, 0], [0, 1], [0, -1.0]])
    >>> _ = model.layers[1].kernel.assign([[1.0], [0.9]])
    >>> print(explain(model))  # doctest: +ELLIPSIS
    no formula: the weights, rounded to their discrete values, give ...
    """
    tolerance = float(tolerance)
    if not 0.0 <= tolerance < 0.5:
        raise ArgumentError(
            "explain()",
            "tolerance",
            tolerance,
            expectation="0 <= {tolerance} < 0.5",
        )
    chain = layer_chain(model)
    size = layer_input_size(chain[0])
    if input_names is None:
        inputs = [Var(f"x{i}", "x", i) for i in range(size)]
    else:
        input_names = [str(name) for name in input_names]
        if len(input_names) != size:
            raise ValueError(
                f"explain() expects {size} input_names for this model. "
                f"Received: {len(input_names)} names"
            )
        inputs = [Var(name, None, i) for i, name in enumerate(input_names)]
    checked, described = _sample(sample_inputs, input_ranges, size)

    gate_names = [f"g{i}" for i in range(sum(getattr(x, "units", 0) for x in chain))]
    expressions, summaries, distances, notes = inputs, [], [], []
    hidden_count = len(chain) - 1
    previous_names, sample, depth = inputs, checked, 0
    # The layers' inputs are computed as far as a layer reads them.
    reads_inputs = [needs_inputs(layer) for layer in chain]
    non_finite = [found for layer in chain for found in non_finite_weights(layer)]
    # Weights that are not finite are named instead of read: reading them
    # casts NaN to integers, which NumPy would warn about.
    invalid = "ignore" if non_finite else np.geterr()["invalid"]
    with np.errstate(invalid=invalid):
        for kind, group in _groups(chain, tolerance):
            readings = []
            for layer in group:
                reading = read_layer(layer, tolerance, sample, gate_names)
                readings.append(reading)
                notes.extend(reading.notes)
                last = depth == len(chain) - 1
                prefix = (
                    "y" if last else ("h" if hidden_count == 1 else f"h{depth + 1}_")
                )
                summary, previous_names = _summary(
                    layer, reading, previous_names, prefix, last, tolerance
                )
                summaries.append(summary)
                depth += 1
                if any(reads_inputs[depth:]):
                    sample = float64_array(layer(sample)).astype("float32")
            # Consecutive linear layers are one map: read it, not each factor.
            whole = readings[0] if len(group) == 1 else read_composition(group, kind)
            expressions = whole.build(expressions)
            distances.extend(whole.distances)

    off = sorted((d for d in distances if d[3] > tolerance), key=lambda d: -d[3])
    max_deviation = max((d[3] for d in distances), default=0.0)
    if non_finite:  # a NaN distance compares as neither larger nor smaller
        max_deviation = float("nan")
    predictions = float64_array(model(checked)).reshape(len(checked), -1)
    return Explanation(
        outputs=[render(node) for node in expressions],
        discrete=not off and not notes and not non_finite,
        max_deviation=float(max_deviation),
        deviations=[(name, loc, weight) for name, loc, weight, _ in off],
        layers=summaries,
        notes=notes,
        input_names=[var.name for var in inputs],
        differences=[
            _largest_difference(node, checked, predictions[:, column])
            for column, node in enumerate(expressions)
        ],
        tolerance=tolerance,
        sample=described,
        trees=list(expressions),
        non_finite=non_finite,
    )


def _groups(chain, tolerance) -> list[tuple[str | None, list]]:
    """The chain cut into runs of layers of one linear kind, others alone."""
    groups: list[tuple[str | None, list]] = []
    for layer in chain:
        kind = map_kind(layer, tolerance)
        if kind is not None and groups and groups[-1][0] == kind:
            groups[-1][1].append(layer)
        else:
            groups.append((kind, [layer]))
    return groups


def _summary(layer, reading, previous_names, prefix, last, tolerance):
    """`"name: h0 = ...; h1 = ..."` in the layer's own inputs, and its outputs'
    names for the next layer."""
    local = reading.build(previous_names)
    names = [f"{prefix}{j}" for j in range(len(local))]
    if last and len(local) == 1:
        names = ["y"]
    parts = []
    for j, (name, node) in enumerate(zip(names, local)):
        extra = f" ({reading.gate_text[j]})" if reading.gate_text[j] else ""
        parts.append(f"{name} = {render(node)}{extra}")
    off = [d for d in reading.distances if d[3] > tolerance]
    if off:
        worst = max(off, key=lambda d: d[3])
        parts[-1] += (
            f"  [{len(off)} weight(s) off, worst {worst[2]:.3g} at "
            f"{worst[0]}[{worst[1][0]},{worst[1][1]}]]"
        )
    summary = f"{layer.name}: " + "; ".join(parts)
    return summary, [Var(name, prefix, j) for j, name in enumerate(names)]


def _sample(sample_inputs, input_ranges, size) -> tuple[np.ndarray, str]:
    """The inputs the gates are judged and the expressions checked on, and
    their description."""
    if sample_inputs is not None:
        sample = np.asarray(sample_inputs, dtype="float32").reshape(-1, size)
        if not len(sample):
            raise ValueError("explain() expects sample_inputs with at least one row.")
        return sample, f"{len(sample):,} sample inputs"
    if isinstance(input_ranges, str | Range):
        input_ranges = (input_ranges,)
    ranges = [Range.parse(value, "input_ranges") for value in input_ranges]
    if not ranges:
        raise ValueError("explain() expects at least one of input_ranges.")
    sample = np.concatenate(
        [
            value_range.sample_numpy((SAMPLE_SIZE, size), seed=seed)
            for seed, value_range in enumerate(ranges)
        ]
    )
    described = f"{SAMPLE_SIZE:,} inputs from {ranges[0]}" + "".join(
        f" and {SAMPLE_SIZE:,} from {value_range}" for value_range in ranges[1:]
    )
    return sample, described


def _largest_difference(node, inputs, predictions) -> float | None:
    """max |expression - prediction| / max(|prediction|, 1) over the inputs;
    None when the expression has a free gate."""
    values = evaluate(node, inputs.astype("float64"))
    if values is None:
        return None
    predictions = predictions.astype("float64")
    with np.errstate(all="ignore"):
        difference = np.abs(values - predictions) / np.maximum(np.abs(predictions), 1)
    # Equal infinities and NaN where both are NaN agree; any other NaN does not.
    same = (values == predictions) | (np.isnan(values) & np.isnan(predictions))
    difference = np.where(same, 0.0, np.nan_to_num(difference, nan=np.inf))
    return float(difference.max())


def _mentions_gate(node, note: str) -> bool:
    """Whether `note` ("gate g0 of ...") is about a gate in the expression."""
    return any(f"gate {gate} " in note for gate in _gates(node))


def _gates(node) -> set[str]:
    if isinstance(node, Gated):
        return {node.gate} | _gates(node.additive) | _gates(node.multiplicative)
    children = getattr(node, "terms", None) or getattr(node, "factors", None) or ()
    return set().union(*(_gates(child) for _, child in children))
