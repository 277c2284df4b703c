"""Nothing lost to a bad path, a bad file or a repeated name.

Each bad input ends in one line naming the argument, the value and what to
do, with exit status 2, before any training; no input file is written over.
The tests run `keras-nalu` in this process (`cli.main`); a run that must not
train replaces `run_experiment` with one that fails if called.
"""

import json
import warnings
import zipfile

import keras
import numpy as np
import pandas as pd
import pytest

import keras_nalu
from keras_nalu import cli
from keras_nalu import export as export_module
from keras_nalu.experiments import ExperimentConfig, check_run_name, run_experiment
from keras_nalu.experiments import saved_run as experiment_module
from keras_nalu.export import export_saved_model
from keras_nalu.tasks import ArithmeticTask
from keras_nalu.tasks.ranges import OverlappingRangesWarning
from tests.bad_paths import listing, unwritable_folder
from tests.helpers import keras_nalu_cli

TINY = ["--model", "nau", "--input-size", "10", "--iterations", "100"]
TINY += ["--eval-every", "100", "--quiet"]

RESULTS_HEADER = (
    "model,operation,seed,success,solved_at,sparsity_error,"
    "interpolation_mse,extrapolation_mse,iterations\n"
)


class Trained(Exception):
    """Raised by the stand-in for `run_experiment`: training was reached."""


@pytest.fixture
def no_training(monkeypatch):
    def refuse(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(experiment_module, "run_experiment", refuse)


def results_file(path, rows=4, operation="add"):
    lines = [
        f"nau,{operation},{seed},True,{1000 * (seed + 1)},1e-4,1e-9,1e-8,5000\n"
        for seed in range(rows)
    ]
    path.write_text(RESULTS_HEADER + "".join(lines))
    return path.read_bytes()


# -- 1. no command writes over a file it reads ----------------------------------


def test_summarize_never_writes_over_its_input(tmp_path, capsys):
    results = tmp_path / "summary.csv"  # the name the old summary took
    content = results_file(results)
    code, out, err = keras_nalu_cli(capsys, "summarize", results)
    assert code == 0, err
    assert results.read_bytes() == content
    assert "| add | nau | 4 |" in out
    assert (tmp_path / "summary.summary.csv").is_file()


def test_summaries_of_two_results_files_in_one_folder_both_stay(tmp_path, capsys):
    results_file(tmp_path / "first.csv", rows=4)
    results_file(tmp_path / "second.csv", rows=2, operation="sub")
    for name in ("first.csv", "second.csv"):
        assert keras_nalu_cli(capsys, "summarize", tmp_path / name)[0] == 0
    first = pd.read_csv(tmp_path / "first.summary.csv")
    second = pd.read_csv(tmp_path / "second.summary.csv")
    assert (first["operation"][0], first["n"][0]) == ("add", 4)
    assert (second["operation"][0], second["n"][0]) == ("sub", 2)


def test_plot_never_writes_over_its_input(tmp_path, capsys):
    results = tmp_path / "results.csv"
    content = results_file(results)
    argv = ["plot", results, "--x", "seed", "--out", results]
    code, _, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and len(err) == 1
    assert "is the results file" in err[0]
    assert results.read_bytes() == content


# -- 2. every output location is checked before training ------------------------


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--output-dir", "afile"),
        ("--output-dir", "afile/runs"),
        ("--export-dir", "afile"),
        ("--export-dir", "afile/saved"),
    ],
)
def test_a_file_in_the_way_is_refused_before_training(
    tmp_path, capsys, no_training, flag, value
):
    (tmp_path / "afile").write_text("in the way")
    other = "--export-dir" if flag == "--output-dir" else "--output-dir"
    argv = ["train", *TINY, other, tmp_path / "other", flag, tmp_path / value]
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and out == "" and len(err) == 1
    assert f"{flag} {str(tmp_path / value)!r}" in err[0]
    assert "is a file, not a folder" in err[0]
    assert (tmp_path / "afile").read_text() == "in the way"


@pytest.mark.parametrize("flag", ["--output-dir", "--export-dir"])
def test_a_read_only_folder_is_refused_before_training(
    tmp_path, capsys, no_training, flag
):
    with unwritable_folder(tmp_path) as folder:
        before = listing(folder)
        other = "--export-dir" if flag == "--output-dir" else "--output-dir"
        argv = ["train", *TINY, other, tmp_path / "other", flag, folder / "runs"]
        code, out, err = keras_nalu_cli(capsys, *argv)
        assert code == 2 and out == "" and len(err) == 1
        assert f"{flag} {str(folder / 'runs')!r}: cannot write in" in err[0]
        assert listing(folder) == before


def test_a_failed_export_keeps_the_record_and_the_model(tmp_path, capsys, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_module, "export_saved_model", full_disk)
    argv = ["train", *TINY, "--name", "kept", "--output-dir", tmp_path / "runs"]
    code, out, err = keras_nalu_cli(capsys, *argv, "--export-dir", tmp_path / "saved")
    assert code == 1
    assert len(err) == 1 and "No space left on device" in err[0]
    record = json.loads((tmp_path / "runs" / "kept" / "result.json").read_text())
    assert record["name"] == "kept" and record["iterations"] == 100
    assert (tmp_path / "runs" / "kept" / "model.keras").is_file()
    assert out.startswith("kept: ")


# -- 3. a row cut short is never counted ----------------------------------------


def test_summarize_refuses_a_row_cut_short_with_its_line(tmp_path, capsys):
    results = tmp_path / "results.csv"
    content = results_file(results, rows=49)
    results.write_bytes(content[:-20])  # line 50, the 49th run, cut
    code, out, err = keras_nalu_cli(capsys, "summarize", results)
    assert code == 2 and out == "" and len(err) == 1
    assert "line 50" in err[0]
    assert results.read_bytes() == content[:-20]
    assert not (tmp_path / "results.summary.csv").exists()


# -- 4. run names ---------------------------------------------------------------


def test_default_names_tell_configs_apart():
    default = ExperimentConfig()
    others = [
        ExperimentConfig(hidden_size=4),
        ExperimentConfig(
            interpolation_range="U[10,20]", extrapolation_range="U[20,40]"
        ),
        ExperimentConfig(iterations=50_000),
        ExperimentConfig(learning_rate=1e-2),
    ]
    names = {config.name for config in [default, *others]}
    assert len(names) == 5
    assert default.name == "nau_sparse-add-seed0"
    assert all(name.startswith("nau_sparse-add-seed0") for name in names)
    # One configuration, one name, however its values are spelled.
    assert ExperimentConfig(interpolation_range="1,2").name == default.name
    assert ExperimentConfig(hidden_size=4).name == others[0].name


def test_a_run_is_never_replaced_without_overwrite(tmp_path, capsys):
    runs = tmp_path / "runs"
    argv = ["train", *TINY, "--no-export", "--output-dir", runs, "--name", "myrun"]
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 0, err
    record = json.loads((runs / "myrun" / "result.json").read_text())
    # The chosen name is the record's and the verdict line's.
    assert record["name"] == "myrun"
    assert out.startswith("myrun: ")
    content = (runs / "myrun" / "result.json").read_bytes()

    code, out, err = keras_nalu_cli(capsys, *argv[:-2], "--seed", 1, "--name", "myrun")
    assert code == 2 and out == "" and len(err) == 1
    assert "run 'myrun' exists" in err[0] and "--overwrite" in err[0]
    assert (runs / "myrun" / "result.json").read_bytes() == content

    code, out, err = keras_nalu_cli(capsys, *argv, "--seed", 1, "--overwrite")
    assert code == 0, err
    record = json.loads((runs / "myrun" / "result.json").read_text())
    assert record["config"]["seed"] == 1


@pytest.mark.parametrize("name", ["../escaped", "a/b", "..", ".", "", "a\\b", "x/../y"])
def test_names_that_are_not_one_folder_are_refused(tmp_path, capsys, no_training, name):
    with pytest.raises(ValueError, match="one folder name"):
        check_run_name(name)
    argv = ["train", *TINY, "--output-dir", tmp_path / "runs", "--name", name]
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and out == "" and len(err) == 1
    assert f"--name={name!r}" in err[0]
    assert listing(tmp_path) == set()


def test_run_experiment_refuses_a_path_as_name_before_training():
    config = ExperimentConfig(iterations=10**9)  # would not end
    with pytest.raises(ValueError, match="one folder name"):
        run_experiment(config, verbose=False, name="../escaped")


# -- 5. overlapping interpolation and extrapolation ranges ----------------------

OVERLAPPING = [
    ("U[1,3]", "U[2,6]", "U[2, 3]"),
    ("U[1,2]", "U[1,2]", "U[1, 2]"),
    ("U[-2,2]", "U[-6,-1] ∪ U[1,6]", "U[-2, -1] ∪ U[1, 2]"),
]
DISJOINT = [("U[1,2]", "U[2,6]"), ("U[-2,2]", "U[-6,-2] ∪ U[2,6]")]


@pytest.mark.parametrize("interpolation, extrapolation, shared", OVERLAPPING)
def test_overlapping_ranges_warn_in_python(interpolation, extrapolation, shared):
    ranges = {
        "interpolation_range": interpolation,
        "extrapolation_range": extrapolation,
    }
    with pytest.warns(OverlappingRangesWarning, match=f"on {shared.replace('[', '.')}"):
        ArithmeticTask(**ranges)
    with pytest.warns(OverlappingRangesWarning):
        ExperimentConfig(**ranges)


@pytest.mark.parametrize("interpolation, extrapolation", DISJOINT)
def test_disjoint_or_touching_ranges_do_not_warn(interpolation, extrapolation):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ArithmeticTask(
            interpolation_range=interpolation, extrapolation_range=extrapolation
        )


@pytest.mark.parametrize("interpolation, extrapolation, shared", OVERLAPPING)
def test_train_refuses_overlapping_ranges_unless_allowed(
    tmp_path, capsys, no_training, interpolation, extrapolation, shared
):
    argv = ["train", *TINY, "--output-dir", tmp_path / "runs"]
    argv += ["--interpolation-range", interpolation]
    argv += ["--extrapolation-range", extrapolation]
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and out == "" and len(err) == 1
    assert f"overlap on {shared}" in err[0] and "--allow-overlap" in err[0]
    with pytest.raises(Trained):
        cli.main([str(arg) for arg in argv] + ["--allow-overlap"])
    assert capsys.readouterr().err == ""  # allowed: not even a warning


# -- 6. one line for every bad file ---------------------------------------------


@pytest.fixture(scope="module")
def tiny_model():
    return keras.Sequential([keras.Input((10,)), keras_nalu.layers.NAU(1)])


def test_explain_on_a_corrupt_keras_file_says_so(tmp_path, capsys, tiny_model):
    garbage = tmp_path / "garbage.keras"
    garbage.write_bytes(b"not a zip archive at all")
    saved = tmp_path / "model.keras"
    tiny_model.save(saved)
    truncated = tmp_path / "truncated.keras"
    truncated.write_bytes(saved.read_bytes()[:200])
    for path in (garbage, truncated):
        code, out, err = keras_nalu_cli(capsys, "explain", path)
        assert code == 2 and out == "" and len(err) == 1
        assert f"{path} is not a .keras file" in err[0]
        assert "File not found" not in err[0]
    hollow = tmp_path / "hollow.keras"
    with zipfile.ZipFile(hollow, "w") as archive:
        archive.writestr("readme.txt", "a zip archive without a model")
    code, out, err = keras_nalu_cli(capsys, "explain", hollow)
    assert code == 2 and len(err) == 1
    assert f"cannot load {hollow} as a Keras model" in err[0]


def test_explain_on_a_saved_model_folder_says_so(tmp_path, capsys, tiny_model):
    version = export_saved_model(tiny_model, tmp_path / "saved", "tiny")
    for folder in (version, version.parent):
        code, out, err = keras_nalu_cli(capsys, "explain", folder)
        assert code == 2 and out == "" and len(err) == 1
        assert f"{folder} is a TF Serving SavedModel folder" in err[0]
        assert "model.keras" in err[0]


def test_the_served_model_states_and_checks_its_input_width(tmp_path, tiny_model):
    import tensorflow as tf

    version = export_saved_model(tiny_model, tmp_path / "saved", "tiny")
    served = tf.saved_model.load(str(version)).signatures["serving_default"]
    (spec,) = served.structured_input_signature[1].values()
    assert spec.shape.as_list() == [None, 10]
    x = np.random.default_rng(0).uniform(1, 2, (3, 10)).astype("float32")
    (prediction,) = served(tf.constant(x)).values()
    np.testing.assert_allclose(
        prediction.numpy(), tiny_model.predict(x, verbose=0), rtol=1e-6
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"serving_default expects inputs of shape \(batch, 10\)",
    ):
        served(tf.constant(x[:, :7]))


def test_an_integer_dtype_is_named_in_one_line():
    with pytest.raises(ValueError, match="dtype.*int32"):
        layer = keras_nalu.layers.NMU(2, dtype="int32")
        layer(np.ones((1, 3), "int32"))


# -- 7. a short summary from train, the choices in its help ---------------------


def test_train_prints_a_summary_and_the_record_only_with_json(tmp_path, capsys):
    argv = ["train", *TINY, "--no-export", "--output-dir", tmp_path / "runs"]
    code, out, err = keras_nalu_cli(capsys, *argv, "--name", "short")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 5, out
    assert lines[0].startswith("short: ") and "threshold" in lines[0]
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "config",
        "formula",
        "record",
        "model",
    ]
    code, out, err = keras_nalu_cli(capsys, *argv, "--name", "full", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["name"] == "full" and len(record["history"]) == 2
    assert err[-1].startswith("full: ")  # the verdict line


def test_train_help_lists_the_models_and_operations(capsys):
    from keras_nalu.presets import PRESETS
    from keras_nalu.tasks import OPERATIONS

    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in [*PRESETS, *OPERATIONS]:
        assert name in text
    with pytest.raises(SystemExit) as exit_status:
        cli.main(["train", "--operation", "pow"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_status.value.code == 2 and len(err) == 1
    assert "invalid choice: 'pow' (choose from 'add', 'sub'" in err[0]


# -- 8. mnist: nothing of the user's replaced, no verdict without a bound -------

MNIST_TINY = ["--operation", "sum", "--units", "nau", "--iterations", "2"]
MNIST_TINY += ["--eval-every", "1", "--batch-size", "2", "--eval-batch-size", "2"]
MNIST_TINY += ["--train-length", "2", "--test-lengths", "1,3", "--quiet"]
MNIST_TINY += ["--validation-sequences", "2", "--test-sequences", "2"]


@pytest.fixture
def mock_mnist(tmp_path):
    """tensorflow-datasets' MNIST replaced by 20 random digits; the argv for it."""
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=20):
        yield [*MNIST_TINY, "--data-dir", tmp_path / "tfds"]


@pytest.fixture
def no_mnist_training(monkeypatch):
    from keras_nalu.experiments.mnist import study

    def refuse(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(study, "run_mnist", refuse)  # what run_study runs


@pytest.mark.parametrize(
    "mine",
    ["mnist-sum.json", "mnist-sum-nau-seed0/result.json"],
    ids=["summary", "run"],
)
def test_mnist_refuses_to_write_over_a_users_file_before_training(
    tmp_path, capsys, no_mnist_training, mine
):
    out = tmp_path / "m5"
    (out / mine).parent.mkdir(parents=True)
    (out / mine).write_text('{"my": "own notes"}')
    before = listing(tmp_path)
    argv = ["mnist", *MNIST_TINY, "--baseline-seeds", "0", "--output-dir", out]
    code, stdout, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and stdout == "" and len(err) == 1, err
    assert f"--output-dir {str(out)!r}: {out / mine} exist" in err[0]
    assert "--overwrite" in err[0]
    assert (out / mine).read_text() == '{"my": "own notes"}'
    assert listing(tmp_path) == before


def test_mnist_overwrites_only_when_told_and_judges_nothing_without_a_bound(
    tmp_path, capsys, mock_mnist
):
    out = tmp_path / "m5"
    argv = ["mnist", *mock_mnist, "--baseline-seeds", "0", "--output-dir", out]
    (out / "mnist-sum-nau-seed0").mkdir(parents=True)
    (out / "mnist-sum-nau-seed0" / "result.json").write_text("{}")
    code, stdout, err = keras_nalu_cli(capsys, *argv, "--overwrite")
    assert code == 0, err
    printed = json.loads(stdout[: stdout.rindex("}") + 1])
    assert printed["bound"] is None and printed["success_rate"] is None
    assert printed["runs"][0]["success"] == [None, None]
    record = json.loads((out / "mnist-sum-nau-seed0" / "result.json").read_text())
    assert record["iterations"] == 2  # the user's {} replaced, as asked
    summary = json.loads((out / "mnist-sum.json").read_text())
    assert summary["bound"] is None and summary["success_rate"] is None
    (run,) = summary["runs"]
    assert run["success"] == [None, None] and run["bound"] == [None, None]
    # Its own files of a moment ago are not replaced without --overwrite either.
    code, stdout, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and "--overwrite" in err[0]


@pytest.mark.parametrize(
    "flags, needle",
    [
        (["--units", "nau,nau"], "asks for the run mnist-product-nau-seed0 twice"),
        (["--units", "exact"], "asks for the run mnist-product-exact-seed0 twice"),
        (["--units", "gru"], "--units must be one of ['exact', 'lstm'"),
        (["--seeds", "1-0"], "the range '1-0' is empty. Received: --seeds '1-0'"),
        (["--test-lengths", "0"], "mnist --test-lengths expects lengths >= 1"),
        (["--iterations", "0"], "--iterations must be an integer >= 1"),
        (["--baseline-seeds", "1"], "--baseline-seeds >= 2"),
        (["--output-dir", "afile"], "is a file, not a folder"),
        (["--units", "nau", "--units", "nmu"], "--units given twice"),
    ],
)
def test_mnist_bad_input_is_one_line_before_anything(
    tmp_path, capsys, monkeypatch, no_mnist_training, flags, needle
):
    (tmp_path / "afile").write_text("in the way")
    monkeypatch.chdir(tmp_path)
    code, stdout, err = keras_nalu_cli(capsys, "mnist", "--quiet", *flags)
    assert code == 2 and stdout == "" and len(err) == 1, err
    assert err[0].startswith("keras-nalu mnist: error: ")
    assert needle in err[0]
    assert listing(tmp_path) == {"afile"}


# -- 9. an export folder that is not ours is left alone -------------------------


@pytest.mark.parametrize(
    "content", ['{"my": "own manifest"}', "\x00 not JSON at all", "[1, 2]"]
)
def test_a_foreign_manifest_is_one_line_before_anything_is_written(
    tmp_path, capsys, no_training, tiny_model, content
):
    manifest = tmp_path / "exp" / "myrun" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(content)
    argv = ["train", *TINY, "--name", "myrun", "--export-dir", tmp_path / "exp"]
    code, out, err = keras_nalu_cli(capsys, *argv, "--output-dir", tmp_path / "runs")
    assert code == 2 and out == "" and len(err) == 1, err
    assert f"{manifest} is not an export manifest" in err[0]
    with pytest.raises(ValueError, match="is not an export manifest"):
        export_saved_model(tiny_model, tmp_path / "exp", "myrun")
    assert listing(tmp_path) == {"exp", "exp/myrun", "exp/myrun/manifest.json"}
    assert manifest.read_text() == content


# -- 10. sizes no machine here can hold -----------------------------------------


@pytest.mark.parametrize(
    "flag, value", [("--input-size", "100000000"), ("--batch-size", "1000000000")]
)
def test_a_run_too_large_for_the_memory_is_one_line_before_training(
    tmp_path, capsys, no_training, flag, value
):
    argv = ["train", "--quiet", "--output-dir", tmp_path / "runs", flag, value]
    code, out, err = keras_nalu_cli(capsys, *argv, "--export-dir", tmp_path / "exp")
    # One error line (after, for --input-size, one warning line about float32).
    assert code == 2 and out == "", err
    *warnings, error = err
    assert all(line.startswith("keras-nalu train: warning: ") for line in warnings)
    assert len(warnings) <= 1 and error.startswith("keras-nalu train: error: ")
    assert f"{flag} {value}" in error and "GiB of memory of this machine" in error
    assert listing(tmp_path) == set()
    grid = ["--grid", f"{flag[2:].replace('-', '_')}={value}", "--grid", "model=nau"]
    argv = ["sweep", "--quiet", *grid, "--results", tmp_path / "r.csv"]
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and "GiB of memory of this machine" in err[-1], err
    assert listing(tmp_path) == set()


# -- 11. the threshold cache: damaged entries, folders that refuse writes ------


@pytest.mark.parametrize(
    "entry",
    [b'{"threshold": null}', b"[]", b'{"threshold": "low"}', b'{"threshold": -1}'],
    ids=["null", "list", "text", "negative"],
)
def test_a_damaged_threshold_cache_entry_is_computed_again(
    tmp_path, monkeypatch, entry
):
    from keras_nalu.evaluation import success_threshold

    monkeypatch.setenv("KERAS_NALU_CACHE_DIR", str(tmp_path))
    task = ArithmeticTask(operation="mul", input_size=10)
    expected = success_threshold(task, samples=20_000, use_cache=False)
    assert success_threshold(task, samples=20_000) == expected
    (cached,) = (tmp_path / "thresholds").iterdir()
    cached.write_bytes(entry)
    assert success_threshold(task, samples=20_000) == expected
    assert json.loads(cached.read_text())["threshold"] == expected  # mended


@pytest.mark.parametrize("variable", ["KERAS_NALU_CACHE_DIR", "HOME"])
def test_a_cache_folder_that_refuses_writes_warns_and_computes(
    tmp_path, monkeypatch, variable
):
    from keras_nalu.evaluation import success_threshold

    task = ArithmeticTask(operation="mul", input_size=10)
    expected = success_threshold(task, samples=20_000, use_cache=False)
    with unwritable_folder(tmp_path) as folder:
        if variable == "HOME":
            monkeypatch.delenv("KERAS_NALU_CACHE_DIR", raising=False)
        monkeypatch.setenv(variable, str(folder))
        before = listing(folder)
        with pytest.warns(RuntimeWarning, match="set KERAS_NALU_CACHE_DIR to a"):
            assert success_threshold(task, samples=20_000) == expected
        assert listing(folder) == before


def test_train_goes_on_with_a_read_only_cache_and_says_so(
    tmp_path, capsys, monkeypatch
):
    with unwritable_folder(tmp_path) as folder:
        monkeypatch.setenv("KERAS_NALU_CACHE_DIR", str(folder / "cache"))
        argv = ["train", *TINY, "--no-export", "--output-dir", tmp_path / "runs"]
        code, out, err = keras_nalu_cli(capsys, *argv, "--operation", "mul")
    assert code == 0, err
    (warning,) = err
    assert warning.startswith("keras-nalu train: warning: cannot write the")
    assert "KERAS_NALU_CACHE_DIR" in warning
    assert out.startswith("nau-mul-seed0")


# -- 12. a flag given twice never keeps only its last value silently -----------


@pytest.mark.parametrize(
    "argv, needle",
    [
        (
            ["sweep", "--grid", "model=nau", "--grid", "model=nmu"],
            "model is given twice ('model=nau' and 'model=nmu')",
        ),
        (
            ["sweep", "--grid", "input_size=10", "--grid", "input_size=20"],
            "input_size is given twice",
        ),
        (
            ["sweep", "--grid-file", "grid.json", "--grid", "model=nmu"],
            "--grid-file 'grid.json' and --grid both give model",
        ),
        (["train", "--seed", "1", "--seed", "2"], "--seed given twice, as 1 and 2"),
        (["train", "--model", "nau", "--model", "nmu"], "--model given twice"),
        (["summarize", "r.csv", "--by", "model", "--by", "seed"], "--by given twice"),
        (["plot", "r.csv", "--x", "seed", "--x", "model"], "--x given twice"),
        (["mnist", "--seeds", "0", "--seeds", "1"], "--seeds given twice"),
    ],
)
def test_a_flag_given_twice_with_two_values_is_one_line(
    tmp_path, capsys, monkeypatch, no_training, no_mnist_training, argv, needle
):
    from keras_nalu.sweeps import runner

    def no_sweep(*args, **kwargs):
        raise Trained

    monkeypatch.setattr(runner, "run_sweep", no_sweep)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grid.json").write_text('{"model": ["nau"], "input_size": [10]}')
    results_file(tmp_path / "r.csv")
    before = {path: path.read_bytes() for path in tmp_path.iterdir()}
    if argv[0] == "sweep":
        argv = [*argv, "--results", "s.csv"]
    code, out, err = keras_nalu_cli(capsys, *argv)
    assert code == 2 and out == "" and len(err) == 1, err
    assert needle in err[0]
    assert {path: path.read_bytes() for path in tmp_path.iterdir()} == before


def test_a_flag_given_twice_with_one_value_is_that_value(capsys, no_training):
    with pytest.raises(Trained):
        cli.main(["train", *TINY, "--seed", "3", "--seed", "3"])
