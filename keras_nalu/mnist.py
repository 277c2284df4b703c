"""The former home of the sequential MNIST experiment, kept so that its imports
keep working.

It lives in `keras_nalu.experiments.mnist`; import it from there.
"""

from keras_nalu.experiments.mnist import (
    DEFAULT_UNIT,
    MNIST_SPARSITY,
    UNITS,
    Z_IDENTITY,
    MnistConfig,
    SequentialMnistModel,
    build_mnist_model,
    digit_network,
    evaluate_lengths,
    exact_kernel,
    judge,
    mae_table,
    mse_bound,
    plot_success_rate,
    run_mnist,
    success_rates,
)

__all__ = [
    "DEFAULT_UNIT",
    "MNIST_SPARSITY",
    "UNITS",
    "Z_IDENTITY",
    "MnistConfig",
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
    "success_rates",
]
