"""`explain`: a chain of arithmetic units read back as the expression it computes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_nalu.explain.expression import (
    _import_sympy,
    _render,
    _sympy_equal,
    _to_sympy,
    _Var,
)
from keras_nalu.explain.readers import _chain, _input_size, _numpy, _read_layer


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
            layer) whose layers form a chain of NAU, NMU (and sNMU), NMRU,
            NAC, NACMul, NALU, RealNPU, MCFC, MCFCMul and `Dense` layers with
            linear activation and zero bias.
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
