"""Reads the expression a trained chain of arithmetic units computes.

A solved NAU/NMU model's weights are the answer: rounded to {-1, 0, 1} (NMU:
{0, 1}) they spell out which inputs are added, subtracted, multiplied and
divided. `explain` walks a model layer by layer (consecutive linear layers as
one, the product of their kernels), rounds every effective weight to its
nearest discrete value, substitutes each layer's outputs into the next
layer's, reports how far the weights are from that discrete solution, and
checks the expression against the model's own predictions: one the model
does not compute is reported as no formula. `compare_with_task` checks the
result against an arithmetic task's target.

Only `Explanation.sympy`, `Explanation.equivalent_to` and `compare_with_task`
need SymPy (`pip install keras-arithmetic-units[symbolic]`).

Its modules: `expression` (the expression tree and its text),
`readers` (one reader per kind of layer), `explanation` (`explain`,
`Explanation`) and `comparison` (`compare_with_task`, `TaskComparison`).
Import the public names from here, `keras_nalu.explain`.
"""

from keras_nalu.explain.comparison import TaskComparison, compare_with_task
from keras_nalu.explain.explanation import Explanation, explain
from keras_nalu.explain.readers import UnsupportedLayerError

__all__ = [
    "Explanation",
    "TaskComparison",
    "UnsupportedLayerError",
    "compare_with_task",
    "explain",
]
