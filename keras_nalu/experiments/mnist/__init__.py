"""Sequential MNIST: a CNN per digit, a recurrent arithmetic unit, R_z, the bound.

Data flows as everywhere in the package: `tasks.mnist.SequentialMnistTask` →
`build_mnist_model` (CNN → `keras.layers.RNN(ArithmeticCell(unit))`, R_z) →
`run_mnist` (fit with early stopping on the validation MSE → a JSON-able
record with the test MSE/MAE per length) → `mse_bound` of the exact-unit
baseline → `judge` (success per length; `run_study` does the three over
many runs), `success_rates`, `plot_success_rate` (Madsen & Johansen 2020,
Fig. 4) and `mae_table` (Trask et al. 2018, Table 2).

A module per job: `models` (the network and its units), `run` (`MnistConfig`,
one run), `study` (the bound, the verdicts, the success rates) and `report`
(the figure and the table). Import every name from this package.
"""

from keras_nalu.experiments.mnist.models import (
    DEFAULT_UNIT,
    MNIST_SPARSITY,
    UNITS,
    Z_IDENTITY,
    SequentialMnistModel,
    build_mnist_model,
    digit_network,
    exact_kernel,
)
from keras_nalu.experiments.mnist.report import mae_table, plot_success_rate
from keras_nalu.experiments.mnist.run import MnistConfig, evaluate_lengths, run_mnist
from keras_nalu.experiments.mnist.study import (
    MnistStudy,
    judge,
    mse_bound,
    run_study,
    success_rates,
)

__all__ = [
    "DEFAULT_UNIT",
    "MNIST_SPARSITY",
    "UNITS",
    "Z_IDENTITY",
    "MnistConfig",
    "MnistStudy",
    "SequentialMnistModel",
    "build_mnist_model",
    "digit_network",
    "evaluate_lengths",
    "exact_kernel",
    "judge",
    "mae_table",
    "mse_bound",
    "plot_success_rate",
    "run_mnist",
    "run_study",
    "success_rates",
]
