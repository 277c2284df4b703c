"""The import paths from before the package was split into rooms still work.

Each old module re-exports the names it exported then, and every name is the
one object of its new home.
"""

import importlib

import pytest

OLD_PATHS = {
    "keras_nalu.experiment": (
        "keras_nalu.experiments",
        "ExperimentConfig NAME_FIELDS TASK_FIELDS check_run_name run_experiment",
    ),
    "keras_nalu.mnist": (
        "keras_nalu.experiments.mnist",
        "DEFAULT_UNIT MNIST_SPARSITY UNITS Z_IDENTITY MnistConfig "
        "SequentialMnistModel build_mnist_model digit_network evaluate_lengths "
        "exact_kernel judge mae_table mse_bound plot_success_rate run_mnist "
        "success_rates",
    ),
    "keras_nalu.callbacks": (
        "keras_nalu.callbacks",
        "LossGatedRegularization ProgressBar RegularizationSchedule "
        "Reinitialization find_scheduled_regularizers iter_layers loss_stalled "
        "optimizer_slots reset_optimizer_slots",
    ),
    "keras_nalu.explain": (
        "keras_nalu.explain",
        "Explanation TaskComparison UnsupportedLayerError compare_with_task explain",
    ),
    "keras_nalu.sweeps.runner": (
        "keras_nalu.sweeps.runner",
        "CONFIG_COLUMNS CONFIG_FIELDS LATER_FIELDS LATER_RECORD_FIELDS MAX_SEEDS "
        "RECORD_FIELDS RESULT_COLUMNS Chunk SweepOutcome config_id grid_configs "
        "load_grid_file normalize_grid parse_grid parse_seeds plan_chunks "
        "ray_options read_results record_row run_sweep summary_markdown "
        "train_chunk",
    ),
    "keras_nalu.sweeps.replicas": (
        "keras_nalu.sweeps.replicas",
        "ReplicaRun execution_size read_backup total_steps train_batched "
        "train_replicas vectorizable",
    ),
    "keras_nalu.sweeps": (
        "keras_nalu.sweeps",
        "ReplicaRun chunk_backup load_grid_file parse_grid parse_seeds read_backup "
        "read_results run_sweep train_replicas",
    ),
}


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_old_paths_export_the_same_objects(old):
    home, names = OLD_PATHS[old]
    module = importlib.import_module(old)
    for name in names.split():
        assert name in module.__all__, f"{old} no longer exports {name}"
        value = getattr(module, name)
        defined_in = getattr(value, "__module__", None)
        if defined_in is not None and defined_in.startswith("keras_nalu"):
            home_module = importlib.import_module(defined_in)
            assert getattr(home_module, name) is value
        assert getattr(importlib.import_module(home), name) is value


def test_star_imports_of_the_old_modules_give_their_names():
    for old in ("keras_nalu.experiment", "keras_nalu.mnist"):
        namespace = {}
        exec(f"from {old} import *", namespace)
        assert set(OLD_PATHS[old][1].split()) <= set(namespace)
