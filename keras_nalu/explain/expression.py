"""The expression tree `explain` builds: small, hashable, from rounded weights.

Nodes are inputs (`Var`), integer constants, signed sums, products with
rational powers and NALU-style gated pairs. `make_sum` and `make_product`
simplify as they build (nested sums flattened, like terms merged, constants
folded), `render` writes the Python/SymPy text `explain` reports, and
`to_sympy` gives the SymPy expression that `Explanation.equivalent_to` and
`compare_with_task` judge with, and `evaluate` its values on a batch of
inputs, against which `explain` checks the model's predictions.
"""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction

import numpy as np

SYMPY_HINT = (
    "This needs SymPy. Install it with "
    "`pip install keras-arithmetic-units[symbolic]` (or `pip install sympy`)."
)


@dataclasses.dataclass(frozen=True)
class Var:
    name: str
    family: str | None  # "x" renders runs x3, x4, x5 as sum(x[3:6])
    index: int


@dataclasses.dataclass(frozen=True)
class _Const:
    value: int


@dataclasses.dataclass(frozen=True)
class _Sum:
    terms: tuple[tuple[int, Node], ...]  # (coefficient, non-sum child)


@dataclasses.dataclass(frozen=True)
class Product:
    factors: tuple[tuple[Fraction, Node], ...]  # (power, non-product child)


@dataclasses.dataclass(frozen=True)
class Gated:
    gate: str
    additive: Node
    multiplicative: Node


Node = Var | _Const | _Sum | Product | Gated


def make_sum(terms) -> Node:
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
    merged: dict[Node, int] = {}
    for coefficient, node in flat:
        merged[node] = merged.get(node, 0) + coefficient
    variables = sorted(
        (node for node, c in merged.items() if c and isinstance(node, Var)),
        key=lambda node: (node.family or "", node.index, node.name),
    )
    others = [n for n, c in merged.items() if c and not isinstance(n, Var)]
    flat = [(merged[node], node) for node in [*variables, *others]]
    if constant:
        flat.append((1 if constant > 0 else -1, _Const(abs(constant))))
    if not flat:
        return _Const(0)
    if len(flat) == 1 and flat[0][0] == 1:
        return flat[0][1]
    return _Sum(tuple(flat))


def split_sign(node: Node) -> tuple[int, Node]:
    """(sign, positive node): -(a + b) → (-1, a + b); keeps x0 - x1 as it is."""
    if not isinstance(node, _Sum):
        return 1, node
    negatives = sum(coefficient < 0 for coefficient, _ in node.terms)
    positives = len(node.terms) - negatives
    if negatives > positives or (negatives == positives and node.terms[0][0] < 0):
        return -1, make_sum((-c, child) for c, child in node.terms)
    return 1, node


def make_product(factors, keep_sign: bool = True) -> Node:
    """∏ node**power; signs of the factors move in front (or vanish when the
    product is of magnitudes, as in NAC•)."""
    sign, powers = 1, {}
    for power, node in factors:
        power = Fraction(power)
        if power == 0:
            continue
        factor_sign, node = split_sign(node)
        if factor_sign < 0 and power.denominator == 1 and power.numerator % 2:
            sign = -sign
        inner = node.factors if isinstance(node, Product) else ((1, node),)
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
        result = Product(kept)
    if keep_sign and sign < 0:
        return make_sum([(-1, result)])
    return result


def render(node: Node) -> str:
    if isinstance(node, Var):
        return node.name
    if isinstance(node, _Const):
        return str(node.value)
    if isinstance(node, _Sum):
        items = _sum_items(node)
        text = ("-" if items[0][0] < 0 else "") + items[0][1]
        for sign, item in items[1:]:
            text += (" - " if sign < 0 else " + ") + item
        return text
    if isinstance(node, Product):
        numerator = [_factor_text(p, c) for p, c in node.factors if p > 0]
        denominator = [_factor_text(-p, c) for p, c in node.factors if p < 0]
        text = " * ".join(numerator) or "1"
        return "".join([text, *(f" / {d}" for d in denominator)])
    additive, multiplicative = render(node.additive), render(node.multiplicative)
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
        if isinstance(child, Var) and child.family is not None:
            if run and not (
                run[-1][0] == coefficient
                and run[-1][1].family == child.family
                and run[-1][1].index + 1 == child.index
            ):
                close_run()
            run.append((coefficient, child))
            continue
        close_run()
        text = render(child)
        if isinstance(child, Gated):
            text = f"({text})"
        elif abs(coefficient) != 1:
            text = f"{abs(coefficient)}*{text}"
        items.append((1 if coefficient > 0 else -1, text))
    close_run()
    return items


def _factor_text(power: Fraction, node: Node) -> str:
    text = render(node)
    if isinstance(node, Gated) or (
        isinstance(node, _Sum) and text != _sum_items(node)[0][1]
    ):
        text = f"({text})"  # keeps sum(x[0:25]) bare, wraps x0 + x1 and -x2
    if power == 1:
        return text
    if power.denominator == 1:
        return f"{text}**{power.numerator}"
    return f"{text}**({power.numerator}/{power.denominator})"


def to_sympy(node: Node, sympy):
    if isinstance(node, Var):
        return sympy.Symbol(node.name)
    if isinstance(node, _Const):
        return sympy.Integer(node.value)
    if isinstance(node, _Sum):
        return sympy.Add(*(c * to_sympy(child, sympy) for c, child in node.terms))
    if isinstance(node, Product):
        return sympy.Mul(
            *(
                sympy.Pow(
                    to_sympy(child, sympy),
                    sympy.Rational(power.numerator, power.denominator),
                )
                for power, child in node.factors
            )
        )
    gate = sympy.Symbol(node.gate)
    return gate * to_sympy(node.additive, sympy) + (1 - gate) * to_sympy(
        node.multiplicative, sympy
    )


def evaluate(node: Node, x):
    """The node's value on every row of `x` (float64), or None with a free gate.

    Powers of negative numbers with a fractional exponent are NaN and
    divisions by 0 infinite, as in NumPy.
    """
    if isinstance(node, Var):
        return x[:, node.index]
    if isinstance(node, _Const):
        return np.full(len(x), float(node.value))
    if isinstance(node, Gated):
        return None
    parts = [
        (evaluate(child, x), weight)
        for weight, child in (node.terms if isinstance(node, _Sum) else node.factors)
    ]
    if any(value is None for value, _ in parts):
        return None
    with np.errstate(all="ignore"):
        if isinstance(node, _Sum):
            return sum(coefficient * value for value, coefficient in parts)
        result = np.ones(len(x))
        for value, power in parts:
            exponent = power.numerator if power.denominator == 1 else float(power)
            result = result * np.power(value, exponent)
        return result


def linear_form(node: Node) -> dict[int | None, int] | None:
    """{input index: coefficient, None: constant} if `node` is a signed sum."""
    if isinstance(node, Var):
        return {node.index: 1}
    if isinstance(node, _Const):
        return {None: node.value} if node.value else {}
    if isinstance(node, _Sum):
        form: dict[int | None, int] = {}
        for coefficient, child in node.terms:
            inner = linear_form(child)
            if inner is None:
                return None
            for key, value in inner.items():
                form[key] = form.get(key, 0) + coefficient * value
        return {key: value for key, value in form.items() if value}
    return None


def import_sympy():
    try:
        import sympy
    except ImportError as error:
        raise ImportError(SYMPY_HINT) from error
    return sympy


def sympy_equal(left, right, symbols, sympy) -> bool:
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
