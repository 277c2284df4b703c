import dataclasses
import functools
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from keras_nalu.evaluation import (
    nearly_perfect_kernel,
    simulate_threshold,
    single_module_threshold,
    success_threshold,
)
from keras_nalu.evaluation.thresholds import (
    simulate_single_module_threshold,
    simulated_subsets,
)
from keras_nalu.tasks import ArithmeticTask
from keras_nalu.tasks.nalm import single_module_task
from tests import route_without_tensorflow as route
from tests.backend import requires_tensorflow

# The reference code's values for the default configuration (Madsen & Johansen 2020,
# §4.1.1).
REFERENCE = {"mul": 0.16001, "add": 1.4786e-5, "sub": 1.384e-8, "squared": 0.1595}
SAMPLES = 200_000


@pytest.mark.parametrize("operation", sorted(REFERENCE))
def test_default_threshold_within_ten_percent_of_reference(operation):
    threshold = simulate_threshold(ArithmeticTask(operation=operation), samples=SAMPLES)
    assert threshold == pytest.approx(REFERENCE[operation], rel=0.10)


@pytest.mark.parametrize("operation", ["mul", "add", "div", "root"])
def test_reference_geometry_reproduces_reference_values(operation):
    # The reference simulation's inclusive R slices: 26 inputs, overlap 13.
    reference = {**REFERENCE, "div": 4.94e-12, "root": 8.96e-9}
    task = ArithmeticTask(operation=operation, explicit_subsets=((0, 26), (13, 39)))
    assert simulate_threshold(task, samples=SAMPLES) == pytest.approx(
        reference[operation], rel=0.03
    )


def test_nearly_perfect_kernel_marks_the_subsets():
    task = ArithmeticTask(seed=3)
    kernel = nearly_perfect_kernel(task, 1e-5)
    (a0, a1), (b0, b1) = task.subsets
    assert kernel.shape == (100, 2)
    np.testing.assert_allclose(kernel[a0:a1, 0], 1 - 1e-5)
    np.testing.assert_allclose(kernel[b0:b1, 1], 1 - 1e-5)
    assert np.sum(kernel > 0.5) == 50
    assert np.all(kernel[kernel < 0.5] == 1e-5)


def test_threshold_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_NALU_CACHE_DIR", str(tmp_path))
    task = ArithmeticTask(operation="add", input_size=20)
    first = success_threshold(task, samples=20_000)
    files = list((tmp_path / "thresholds").glob("*.json"))
    assert len(files) == 1
    # A different offset (seed) has the same geometry: same cache entry.
    assert task.replace(seed=5).subsets != task.subsets
    assert success_threshold(task.replace(seed=5), samples=20_000) == first
    assert len(list((tmp_path / "thresholds").glob("*.json"))) == 1
    # A corrupt entry is recomputed, not trusted.
    files[0].write_text("{not json")
    assert success_threshold(task, samples=20_000) == pytest.approx(first)


def _planned_configs():
    """One config per threshold of `benchmarks/paper.py`'s plan and the NALM
    cells (configs of one task and rule share it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import nalm
    import paper

    operations = ("add", "sub", "mul", "div")
    cells = nalm.plan(nalm.NALM_INPUT_SIZES, list(nalm.UNITS), operations)
    configs = [c for _, _, group in paper.sweep_groups(paper.PRIORITY) for c in group]
    configs += [c for cell in cells for c in nalm.configs_of(cell)]
    unique = {}
    for config in configs:
        task = {k: v for k, v in config.task().to_config().items() if k != "seed"}
        unique.setdefault((_rule(config), repr(sorted(task.items()))), config)
    return list(unique.values())


def _rule(config):
    """The rule `ExperimentConfig.success_threshold` judges `config` by."""
    from keras_nalu.evaluation import is_single_module_task
    from keras_nalu.presets import get_preset

    single = get_preset(config.model).single_module
    return (
        "single_module"
        if single and is_single_module_task(config.task())
        else ("two_layer")
    )


def _venn(subsets, input_size):
    """How many inputs each combination of subsets reads (what the error's
    distribution depends on, the inputs being i.i.d.)."""
    members = [
        tuple(start <= i < end for start, end in subsets) for i in range(input_size)
    ]
    return sorted((m, members.count(m)) for m in set(members))


def test_every_planned_threshold_is_the_same_whichever_seed_runs_first(
    tmp_path, monkeypatch
):
    # The plan's thresholds, each from a cold cache, with the seeds in two
    # orders: the value a run is judged against may not depend on the seed
    # that filled the cache first. A small sample keeps it fast; the
    # property is exact whatever the sample.
    from keras_nalu.experiments import arithmetic

    for name in ("success_threshold", "single_module_threshold"):
        rule = functools.partial(getattr(arithmetic, name), samples=2_000)
        monkeypatch.setattr(arithmetic, name, rule)
    configs = _planned_configs()
    seeds = (0, 1, 2, 7)
    orders = {"ascending": seeds, "descending": seeds[::-1]}
    judged = {}
    for order, folder in zip(orders.values(), ("up", "down")):
        monkeypatch.setenv("KERAS_NALU_CACHE_DIR", str(tmp_path / folder))
        for config, seed in itertools.product(configs, order):
            run = dataclasses.replace(config, seed=seed)
            judged.setdefault(config, set()).add(run.success_threshold())
    moved = 0
    for config in configs:
        rule = _rule(config)
        tasks = [dataclasses.replace(config, seed=s).task() for s in seeds]
        moved += len({task.subsets for task in tasks}) > 1
        for task in tasks:  # the geometry the simulation sees is the task's
            simulated = simulated_subsets(task, rule)
            size = task.input_size
            assert _venn(simulated, size) == _venn(task.subsets, size), config.name
    differing = [config.name for config in configs if len(judged[config]) != 1]
    assert differing == []
    assert moved > len(configs) / 2  # most configs' subsets move with the seed


# --- the single-module threshold (Mistry et al.'s benchmark, ε = 10⁻⁴) -----------

# E over a, b ~ U[2, 6]: E[x] = 4, E[x²] = 52/3, E[1/x²] = 1/12.
_SQUARE, _INVERSE_SQUARE = 52.0 / 3.0, 1.0 / 12.0
_EPS = 1e-4
SINGLE_MODULE = {
    # (operation, inputs): the closed form of the simulated MSE on U[2, 6]
    ("add", 2): _EPS**2 * (2 * _SQUARE + 2 * 16.0),
    ("sub", 2): _EPS**2 * (2 * _SQUARE + 2 * 16.0),
    ("mul", 2): ((1 - _EPS) ** 2 - 1) ** 2 * _SQUARE**2,
    ("div", 2): ((1 - _EPS) / (1 + _EPS) - 1) ** 2 * _SQUARE * _INVERSE_SQUARE,
    # Σ of 10 inputs: variance 10·4/3 around 40.
    ("add", 10): _EPS**2 * (40.0**2 + 10 * 4.0 / 3.0),
}


@pytest.mark.parametrize("operation, inputs", list(SINGLE_MODULE))
def test_single_module_threshold_matches_its_closed_form(operation, inputs):
    task = single_module_task(operation, inputs, "U[1,2]", "U[2,6]", seed=4)
    simulated = simulate_single_module_threshold(task, samples=SAMPLES)
    assert simulated == pytest.approx(SINGLE_MODULE[operation, inputs], rel=0.02)


def test_single_module_threshold_of_ten_inputs_counts_the_distractors():
    two = single_module_task("mul", 2, "U[1,2]", "U[2,6]")
    ten = single_module_task("mul", 10, "U[1,2]", "U[2,6]")
    # ×: a·b·((1 - ε)²∏(1 - ε|x_j|) - 1) ≈ -ε(2 + Σ_j |x_j|)·a·b, 8 distractors
    expected = _EPS**2 * (34.0**2 + 8 * 4.0 / 3.0) * _SQUARE**2
    assert simulate_single_module_threshold(ten, samples=SAMPLES) == pytest.approx(
        expected, rel=0.03
    )
    assert simulate_single_module_threshold(two, samples=SAMPLES) < expected / 100


def test_single_module_threshold_refuses_other_tasks_in_one_line():
    with pytest.raises(ValueError) as info:
        single_module_threshold(ArithmeticTask("mul"))
    message = str(info.value)
    assert "subsets=((" in message and "two one-input subsets" in message
    assert "\n" not in message
    with pytest.raises(ValueError, match="operation='squared'"):
        single_module_threshold(single_module_task("squared", 2))


def test_single_module_and_two_layer_thresholds_are_cached_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_NALU_CACHE_DIR", str(tmp_path))
    task = single_module_task("add", 2, "U[1,2]", "U[2,6]")
    single = single_module_threshold(task, samples=20_000)
    two_layer = success_threshold(task, samples=20_000)
    # The two-layer W^ε adds one input exactly: float64 rounding is all it measures.
    assert two_layer < 1e-25 and single > 1e-7
    assert len(list((tmp_path / "thresholds").glob("*.json"))) == 2
    assert single_module_threshold(task, samples=20_000) == single


def _tensorflow_drawn(task, rule, samples=None):
    """The threshold with the inputs drawn by TensorFlow's sampler (`sample`),
    from `samples` draws (by default the simulation's own count)."""
    from keras_nalu.evaluation import thresholds

    simulate = {
        "two_layer": thresholds.simulate_threshold,
        "single_module": thresholds.simulate_single_module_threshold,
    }[rule]

    class TensorFlowDrawn:
        def __getattr__(self, name):
            return getattr(task, name)

        def sample_numpy(self, n, which, seed):
            x, t = task.sample(n, which, seed)
            return np.asarray(x), np.asarray(t)

    counts = {} if samples is None else {"samples": samples}
    return simulate(TensorFlowDrawn(), **counts)


@requires_tensorflow
@pytest.mark.parametrize(
    "task, rule",
    [
        (route.sub_task(), "two_layer"),
        (ArithmeticTask(operation="mul", input_size=30), "two_layer"),
        (
            ArithmeticTask(
                operation="div",
                interpolation_range="U[-2,-1]",
                extrapolation_range="U[-6,-2]",
            ),
            "two_layer",
        ),
        (single_module_task("div", input_size=10), "single_module"),
    ],
    ids=["sub-20-inputs", "mul-30-inputs", "div-negative", "single-module-div"],
)
def test_the_numpy_draw_gives_the_tensorflow_drawn_threshold(task, rule):
    """Thresholds are simulated without TensorFlow since this package's NumPy
    sampler draws TensorFlow's numbers: the two estimates agree to float64
    rounding (1e-12 relative), far inside their simulation error (about 10⁻³
    of the threshold). Their draws are two full chunks and a partial one, each
    chunk drawn with its own seed; the whole default count of 10⁶ is compared
    for the route's task below."""
    from keras_nalu.evaluation import thresholds

    simulate = {
        "two_layer": thresholds.simulate_threshold,
        "single_module": thresholds.simulate_single_module_threshold,
    }[rule]
    samples = 2 * thresholds.SIMULATION_CHUNK + thresholds.SIMULATION_CHUNK // 2
    numpy_drawn = simulate(task, samples=samples)
    tensorflow_drawn = _tensorflow_drawn(task, rule, samples)
    assert numpy_drawn == pytest.approx(tensorflow_drawn, rel=1e-12)


@requires_tensorflow
def test_the_route_without_tensorflow_checks_the_tensorflow_drawn_value():
    # tests/route_without_tensorflow.py compares its rows with these numbers.
    task = route.sub_task()
    threshold = _tensorflow_drawn(task, "two_layer")
    assert threshold == pytest.approx(route.SUB_THRESHOLD, rel=1e-12)
    # The simulated subsets: the task's geometry placed at input 0.
    simulated = task.replace(explicit_subsets=simulated_subsets(task))
    exact = nearly_perfect_kernel(simulated, 0.0)
    near = nearly_perfect_kernel(simulated, 1e-5)
    squares = []
    for chunk in range(10):
        x, _ = task.sample(100_000, "extrapolation", (2_020, chunk))
        x = np.asarray(x, np.float64)
        error = (x @ near - x @ exact) @ np.array([1.0, -1.0])
        squares.append(error**2)
    squares = np.concatenate(squares)
    assert squares.mean() == pytest.approx(threshold, rel=1e-9)
    standard_error = squares.std() / np.sqrt(squares.size)
    assert standard_error == pytest.approx(route.SUB_STANDARD_ERROR, rel=0.05)


# --- the test suite's own cache --------------------------------------------------

_SESSION_TEST = """
import subprocess, sys
from pathlib import Path
from keras_nalu.evaluation import success_threshold
from keras_nalu.evaluation.thresholds import cache_dir
from keras_nalu.tasks import ArithmeticTask

def test_a_threshold_is_cached_in_the_sessions_folder():
    success_threshold(ArithmeticTask("add", input_size=4), samples=1_000)
    code = "import os; print(os.environ['KERAS_NALU_CACHE_DIR'])"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True)
    entries = len(list((cache_dir() / "thresholds").glob("*.json")))
    report = f"{cache_dir()} {child.stdout.decode().strip()} {entries}"
    Path("report.txt").write_text(report)
"""


def test_a_test_session_leaves_the_users_cache_alone(tmp_path):
    # A session of the suite (its conftest, one xdist worker) with a HOME
    # and a KERAS_NALU_CACHE_DIR of a user: the threshold goes to the
    # session's own folder, which its worker and the commands it starts
    # share, and which is gone afterwards; neither of the user's is made.
    # The cache is the backend's no business: Keras' NumPy backend spares the
    # two processes an import of TensorFlow, JAX or PyTorch.
    import os
    import subprocess

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "test_session.py").write_text(_SESSION_TEST)
    home, users = tmp_path / "home", tmp_path / "users-cache"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "KERAS_NALU_CACHE_DIR": str(users),
        "KERAS_BACKEND": "numpy",
        "PYTHONPATH": str(root),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    command = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-n", "1"]
    command += ["-q", "-p", "no:cacheprovider", "test_session.py"]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:]
    folder, seen, entries = (tmp_path / "report.txt").read_text().split()
    assert folder == seen and int(entries) == 1
    assert not Path(folder).exists()  # removed with the session
    assert not (home / ".cache" / "keras_nalu").exists() and not users.exists()


def test_this_session_has_a_threshold_cache_of_its_own():
    import os
    import tempfile

    from keras_nalu.evaluation.thresholds import cache_dir

    folder = Path(os.environ["KERAS_NALU_CACHE_DIR"])
    assert cache_dir() == folder != Path.home() / ".cache" / "keras_nalu"
    assert folder.name.startswith("keras-nalu-test-cache-")
    assert folder.parent == Path(tempfile.gettempdir())
