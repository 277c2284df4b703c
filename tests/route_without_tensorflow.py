"""The route of a GPU machine that has JAX and no TensorFlow, run end to end.

Not collected by the main test run: `make test-without-tensorflow` builds an
environment with no TensorFlow installed (Keras, JAX and the package's other
dependencies, the package itself with `--no-deps`), points
`KERAS_NALU_CACHE_DIR` at an empty folder and runs this file there with
pytest. Every command is what a user of such a machine types, at a tiny
budget, on configurations no other test trains, so that every ε-threshold is
simulated here, without TensorFlow.

    python tests/route_without_tensorflow.py --requirements   # what to install
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"

#: A task no other test trains; its ε-threshold as TensorFlow's sampler draws
#: it (tests/evaluation/test_thresholds.py computes it with both samplers)
#: and the standard error of that 10⁶-draw estimate.
SUB_FIELDS = {
    "operation": "sub",
    "input_size": 20,
    "interpolation_range": "U[1,3]",
    "extrapolation_range": "U[3,9]",
}
SUB_THRESHOLD = 7.1999109292710165e-09
SUB_STANDARD_ERROR = 9.6e-12
SUB = [
    argument
    for key, value in {"model": "nau", "iterations": 2000, **SUB_FIELDS}.items()
    for argument in ("--grid", f"{key}={value}")
]


def sub_task():
    """The task of `SUB_FIELDS`."""
    from keras_nalu.tasks import ArithmeticTask

    return ArithmeticTask(**SUB_FIELDS)


def requirements() -> list[str]:
    """The package's dependencies without TensorFlow, JAX's extra, pytest(-xdist)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    keep = [
        requirement
        for requirement in project["dependencies"]
        if not requirement.startswith("tensorflow")
    ]
    runners = [r for r in extras["test"] if r.startswith(("pytest>", "pytest-xdist"))]
    return [*keep, *extras["jax"], *runners]


def run(*command, cwd, backend="jax", check=True, **env):
    """A command as a user runs it; `backend=None` leaves KERAS_BACKEND unset."""
    environment = {**os.environ, **env}
    environment.pop("KERAS_BACKEND", None)
    if backend is not None:
        environment["KERAS_BACKEND"] = backend
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check:
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def keras_nalu(*arguments, cwd, **kwargs):
    return run(sys.executable, "-m", "keras_nalu", *arguments, cwd=cwd, **kwargs)


def _read_csv(path):
    import pandas as pd

    return pd.read_csv(path)


# The longest tests first (in this order, ~41, 32, 26, 26 and 19 s on the 2-core
# CPU): the two test workers share them, and the short ones fill in at the end.
def test_sweep_summarize_plot_progress_and_a_backup(tmp_path):
    results = tmp_path / "sub.csv"
    # KERAS_BACKEND unset: Keras would fall back to TensorFlow; the command
    # picks JAX
    sweep = ["sweep", *SUB, "--seeds", "0-2", "--results", results, "--quiet"]
    keras_nalu(*sweep, cwd=tmp_path, backend=None)
    rows = _read_csv(results)
    assert list(rows["seed"]) == [0, 1, 2] and set(rows["engine"]) == {"jax"}
    assert (abs(rows["threshold"] - SUB_THRESHOLD) <= SUB_STANDARD_ERROR).all()
    summary = keras_nalu("summarize", results, cwd=tmp_path)
    assert "| sub | nau | jax | 3 |" in summary.stdout
    keras_nalu(
        "plot", results, "--x", "input_size", "--out", tmp_path / "p.png", cwd=tmp_path
    )
    assert (tmp_path / "p.png").stat().st_size > 0
    # a sweep stopped at its time limit leaves a backup; progress reads it
    # and the same sweep continues it
    script = (
        "import sys\n"
        "from keras_nalu.experiments import ExperimentConfig\n"
        "from keras_nalu.sweeps.runner import run_sweep\n"
        "config = ExperimentConfig(model='nau', operation='sub', input_size=21,\n"
        "    iterations=3000)\n"
        "outcome = run_sweep([config], '0-1', sys.argv[1], progress=False,\n"
        "    time_limit=float(sys.argv[2]), backup_every=0)\n"
        "print(outcome.complete, outcome.new_rows)\n"
    )
    stopped = tmp_path / "stopped.csv"
    done = run(sys.executable, "-c", script, stopped, "0", cwd=tmp_path)
    assert done.stdout.split() == ["False", "0"]
    progress = keras_nalu("progress", stopped, cwd=tmp_path)
    assert "step 1000 of 3000" in progress.stdout or "1,000" in progress.stdout
    done = run(sys.executable, "-c", script, stopped, "600", cwd=tmp_path)
    assert done.stdout.split() == ["True", "2"]


def test_gpu_probe_measures_packed_chunks_and_processes(tmp_path):
    out, committed = tmp_path / "out", tmp_path / "committed"
    committed.mkdir()  # nothing committed: the probe starts Table 1
    command = ["bash", BENCHMARKS / "gpu_probe.sh", out, 400, "--only", "table1"]
    command += ["--models", "nac_mul,nmu", "--seeds", "0-1"]
    command += ["--iterations", "1000000"]
    run(
        *command,
        cwd=tmp_path,
        PYTHON=sys.executable,
        RESUME=str(committed),
        PROBE_SETTINGS="packed,processes",
        PROBE_SLICE="2",
        PROBE_STARTUP="120",  # a process on a loaded 2-core machine, and more
        PROBE_TRAIN_ON="2",
        PROBE_CHECK="0",  # test_gpu_probe.py checks it; minutes more here
    )
    probe = json.loads((out / "probe.json").read_text())
    measured = {row["setting"]: row for row in probe["settings"]}
    assert measured["packed"]["runs"] == measured["processes"]["runs"] == 4
    (call,) = probe["calls"]
    assert call["trained_on"]["seed_steps"] > 0 and not call["failed"]
    assert "trained on" in (out / "probe.md").read_text()
    assert (out / "backups.tar").is_file()


def test_paper_full_plans_chunks_that_finish_then_summarizes(tmp_path):
    command = [sys.executable, BENCHMARKS / "paper.py", "--only", "table2"]
    command += ["--models", "nau", "--iterations", "2000", "--seeds", "0-1"]
    command += ["--reuse", "", "--out", tmp_path]
    done = run(*command, "--full", "--time-limit", "240", cwd=tmp_path)
    assert "chunk done: 4 runs of nau" in done.stdout  # + and −, 2 seeds each
    assert "Stopped" not in done.stdout
    assert len(_read_csv(tmp_path / "results.csv")) == 4
    summary = run(*command, "--summarize", cwd=tmp_path)
    assert "| add | nau | 2·10³ | 2 |" in summary.stdout


def test_speed_benchmark_at_a_tiny_size(tmp_path):
    out = tmp_path / "speed.json"
    command = [sys.executable, BENCHMARKS / "speed.py", "--engines", "jax"]
    command += ["--replicas", "1,4", "--steps", "1000", "--warmup", "1000"]
    command += ["--seed-steps", "1000", "--repeats", "1", "--out", out]
    done = run(*command, cwd=tmp_path)
    rows = json.loads(out.read_text())["rows"]
    # at this size the rates are noise; the rows and the table are the point
    assert [(row["engine"], row["replicas"]) for row in rows] == [
        ("jax", 1),
        ("jax", 4),
    ]
    assert all(row["device"] == "CPU" for row in rows)
    assert "| jax | 4 | CPU |" in done.stdout


def test_train_explain_and_the_export_that_needs_tensorflow(tmp_path):
    arguments = ["train", "--model", "nau", "--operation", "add"]
    arguments += ["--input-size", "14", "--iterations", "2000", "--quiet"]
    arguments += ["--output-dir", tmp_path / "runs"]
    refused = keras_nalu(*arguments, cwd=tmp_path, check=False)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "SavedModel export needs tensorflow" in line and "--no-export" in line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    keras_nalu(*arguments, "--no-export", cwd=tmp_path)
    (run_dir,) = (tmp_path / "runs").iterdir()
    record = json.loads((run_dir / "result.json").read_text())
    assert record["threshold"] > 0 and record["iterations"] == 2000
    assert record["config"]["input_size"] == 14
    explained = keras_nalu("explain", run_dir / "model.keras", cwd=tmp_path)
    # Unsolved in 2,000 steps, it may compute no formula: explain says what
    # train recorded, either way.
    printed = record["formula"] or record["formula_error"]
    assert explained.stdout.strip() == printed
    assert printed.startswith(("y = ", "no formula: "))


def test_tensorflow_is_not_installed_and_the_cache_is_this_runs_own():
    import importlib.util

    assert importlib.util.find_spec("tensorflow") is None
    assert "KERAS_NALU_CACHE_DIR" in os.environ


def test_a_script_is_asked_to_set_keras_backend(tmp_path):
    # `import keras_nalu` sets no environment variable; the command does
    # (the sweep below runs with KERAS_BACKEND unset).
    script = [sys.executable, "-c", "import keras_nalu"]
    done = run(*script, cwd=tmp_path, backend=None, check=False)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "ImportError: Keras' default backend, TensorFlow, is not installed; JAX "
        "is: set KERAS_BACKEND=jax before importing keras_nalu, or pip install "
        "tensorflow."
    )
    helped = keras_nalu("--help", cwd=tmp_path, backend=None)
    assert "sweep" in helped.stdout


def test_train_replicas_simulates_the_threshold_without_tensorflow(tmp_path):
    script = (
        "import json\n"
        "from keras_nalu.experiments import ExperimentConfig\n"
        "from keras_nalu.sweeps.engines import train_replicas\n"
        f"config = ExperimentConfig(model='nau', iterations=2000, **{SUB_FIELDS!r})\n"
        "records = train_replicas(config, [1001, 1002], progress=False)\n"
        "print(json.dumps([[r['engine'], r['threshold']] for r in records]))\n"
    )
    done = run(sys.executable, "-c", script, cwd=tmp_path)
    records = json.loads(done.stdout.strip().splitlines()[-1])
    assert [engine for engine, _ in records] == ["jax", "jax"]
    for _, threshold in records:
        assert abs(threshold - SUB_THRESHOLD) <= SUB_STANDARD_ERROR


def test_nalm_benchmark_trains_and_summarizes(tmp_path):
    command = [sys.executable, BENCHMARKS / "nalm.py", "--inputs", "2"]
    command += ["--units", "nau", "--operations", "sub", "--ranges", "6"]
    command += ["--seeds", "0-1", "--iterations", "1000", "--out", tmp_path]
    run(*command, cwd=tmp_path)
    rows = _read_csv(tmp_path / "results.csv")
    assert len(rows) == 2 and set(rows["model"]) == {"single_nau"}
    summary = run(*command, "--summarize", cwd=tmp_path)
    assert "| 2 | − | nau | 1,000 | 1 | 2 |" in summary.stdout


if __name__ == "__main__":
    if sys.argv[1:] == ["--requirements"]:
        print("\n".join(requirements()))
    else:
        raise SystemExit(__doc__)
