"""`compare_with_task`: a model's expression judged against an arithmetic task."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

from keras_nalu.explain.explanation import Explanation, explain
from keras_nalu.explain.expression import (
    Node,
    Product,
    Var,
    import_sympy,
    linear_form,
    make_product,
    make_sum,
    render,
    split_sign,
    sympy_equal,
    to_sympy,
)
from keras_nalu.tasks.operations import OPERATIONS


@dataclasses.dataclass(frozen=True)
class TaskComparison:
    """The verdict of `compare_with_task`.

    Attributes:
        verdict: `"exact"`, `"exact up to sign"`, `"no formula"`,
            `"not discrete"`, `"wrong subset"` or `"wrong operation"`.
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


def _task_tree(task, inputs: list[Var]) -> Node:
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
        make_sum((1, inputs[i]) for i in range(start, end))
        for start, end in (subsets + subsets)[:2]
    )
    return {
        "add": lambda: make_sum([(1, a), (1, b)]),
        "sub": lambda: make_sum([(1, a), (-1, b)]),
        "mul": lambda: make_product([(1, a), (1, b)]),
        "div": lambda: make_product([(1, a), (-1, b)]),
        "squared": lambda: make_product([(2, a)]),
        "root": lambda: make_product([(Fraction(1, 2), a)]),
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


def _unit_factors(node: Node):
    """[(power, linear form, text)] with integer powers split into unit ones,
    or None when the node is not a product of signed sums."""
    _, node = split_sign(node)  # the sign was judged by SymPy already
    factors = node.factors if isinstance(node, Product) else ((Fraction(1), node),)
    result = []
    for power, child in factors:
        form = linear_form(child)
        if form is None:
            return None
        if power.denominator == 1:
            unit = Fraction(1 if power > 0 else -1)
            result.extend([(unit, form, render(child))] * abs(power.numerator))
        else:
            result.append((power, form, render(child)))
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

    - `"no formula"`: the expression read from the rounded weights differs
      from the model's predictions by more than the tolerance, or has a free
      NALU gate (see `explain`); the detail says why, and what the rounded
      reading would be.
    - `"not discrete"`: the expression is within the tolerance of the model's
      predictions, but a weight is off its discrete value; the detail says
      whether the rounded expression would be exact.
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
    sympy = import_sympy()
    if isinstance(explanation_or_model, Explanation):
        explanation = explanation_or_model
    else:
        explanation = explain(explanation_or_model, **explain_kwargs)
    names = explanation.input_names
    inputs = [
        Var(name, "x" if name == f"x{i}" else None, i) for i, name in enumerate(names)
    ]
    target = _task_tree(task, inputs)
    tree = explanation.trees[output]
    symbols = [sympy.Symbol(name) for name in names]
    model_expr, target_expr = to_sympy(tree, sympy), to_sympy(target, sympy)
    computed = explanation.matches_model_at(output)
    computes = (
        f"the model computes {explanation.outputs[output]}, "
        if computed
        else f"the rounded weights read {explanation.outputs[output]}, "
    ) + f"the task ({task.operation}) is {render(target)}"

    if sympy_equal(model_expr, target_expr, symbols, sympy):
        verdict, detail = "exact", computes
    elif sympy_equal(model_expr, -target_expr, symbols, sympy):
        verdict, detail = "exact up to sign", computes
    else:
        verdict, detail = _difference(tree, target, names, computes)
    if not computed:
        reason = explanation.no_formula_reason(output)
        nearest = f"the nearest reading would be {verdict}: {detail}"
        return TaskComparison("no formula", f"{reason}; {nearest}")
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
    target_form, model_form = linear_form(target), linear_form(tree)
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
