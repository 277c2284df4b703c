"""Success criterion, thresholds, sparsity error and interval statistics."""

from keras_nalu.evaluation.sparsity import (
    effective_weights,
    sparsity_error,
    weight_sparsity_error,
)
from keras_nalu.evaluation.success import (
    Evaluation,
    EvaluationSummary,
    SuccessCriterion,
    summarize_evaluations,
)
from keras_nalu.evaluation.thresholds import (
    EPSILON,
    SIMULATION_CHUNK,
    is_single_module_task,
    nearly_perfect_kernel,
    simulate_threshold,
    single_module_threshold,
    success_threshold,
)

__all__ = [
    "EPSILON",
    "SIMULATION_CHUNK",
    "Evaluation",
    "EvaluationSummary",
    "SuccessCriterion",
    "effective_weights",
    "is_single_module_task",
    "nearly_perfect_kernel",
    "simulate_threshold",
    "single_module_threshold",
    "sparsity_error",
    "success_threshold",
    "summarize_evaluations",
    "weight_sparsity_error",
]
