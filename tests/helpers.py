"""Helpers shared by the test modules."""

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path


def run_in_fresh_python(
    code: str, *args, timeout: float = 300, env: dict | None = None
) -> str:
    """Runs `code` in a new interpreter of this environment; returns its stdout.

    The snippet sees `args` as `sys.argv[1:]`, and `env` on top of this
    process's environment. Nothing of this process (imports, registered
    objects, the dtype policy) carries over, as in a deployment.
    """
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})},
    )
    assert completed.returncode == 0, (
        f"fresh process failed ({completed.returncode}):\n{completed.stderr[-4000:]}"
    )
    return completed.stdout


def shared_folder(tmp_path_factory, name: str, fill) -> Path:
    """A folder that `fill(folder)` fills once per test run.

    pytest-xdist gives each worker its own module fixtures; a fixture that
    runs other processes for a minute would run once per worker. This one
    runs once: the workers share the folder (in the run's temporary folder)
    and take turns on a lock; the first fills it, the others find it full.
    """
    base = tmp_path_factory.getbasetemp()
    root = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".filled").exists():
            folder.mkdir(exist_ok=True)
            fill(folder)
            (folder / ".filled").touch()
    return folder


def load_backup_state(source) -> tuple[dict, dict]:
    """A sweep backup's JSON state and its other arrays, in either layout.

    `source` is a path or a binary file object; format 2 stores the JSON as
    UTF-8 bytes, format 1 as a NumPy unicode string.
    """
    import json

    import numpy as np

    with np.load(source, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    stored = arrays.pop("state")
    text = str(stored) if stored.dtype.kind == "U" else stored.tobytes().decode()
    return json.loads(text), arrays


def save_backup_state(target, state: dict, arrays: dict) -> None:
    """Writes a backup of `state` and `arrays` in the layout of `state["format"]`."""
    import json

    import numpy as np

    text = json.dumps(state)
    if state.get("format") == 1:
        stored = np.array(text)
    else:
        stored = np.frombuffer(text.encode(), np.uint8)
    np.savez(target, state=stored, **arrays)


def as_format_1(path, run) -> None:
    """Rewrites `run`'s backup at `path` in format 1, which held every evaluation.

    `run` must have kept its whole history (as every run did before format 2).
    """
    state, arrays = load_backup_state(path)
    del state["summaries"]
    state["format"] = 1
    state["evaluations"] = [record["history"] for record in run.results()]
    save_backup_state(path, state, arrays)


def assert_resumed_records(resumed, whole, step: int, ignore=()) -> None:
    """Records of a run resumed from a backup at `step` and of one never stopped.

    Equal but for the fields in `ignore` (timing), except that the resumed
    run's `history` starts after `step`: a backup holds each replica's
    `EvaluationSummary`, not its evaluations. Compared as JSON, so that NaN
    equals NaN.
    """
    import json

    def plain(records):
        omit = ("history", *ignore)
        kept = [{k: v for k, v in r.items() if k not in omit} for r in records]
        return json.dumps(kept, sort_keys=True)

    assert plain(resumed) == plain(whole)
    for a, b in zip(resumed, whole, strict=True):
        after = [h for h in b["history"] if h[0] > step]
        assert json.dumps(a["history"]) == json.dumps(after)


def assert_set_weights_starts_one_replica() -> None:
    """`ReplicaRun.set_weights` on the Keras backend's engine: one replica
    starts from the given weights, the other keeps its own, bad input is one
    ValueError."""
    import numpy as np
    import pytest

    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines import replica_run

    config = ExperimentConfig(model="nau", input_size=10, iterations=20, eval_every=10)
    run = replica_run(config, [4, 7])
    before = run.weights(0)
    solution = [np.full((10, 2), 0.5, np.float32), np.ones((2, 1), np.float32)]
    run.set_weights(1, solution)
    for got, want in zip(run.weights(1), solution):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(run.weights(0), before):
        np.testing.assert_array_equal(got, want)
    run.train(progress=False)  # training goes on from there
    assert not np.array_equal(run.weights(1)[0], solution[0])
    with pytest.raises(ValueError, match="expects weights of shapes"):
        run.set_weights(0, [np.ones((10, 2))])
    with pytest.raises(ValueError, match="expects r to be a replica"):
        run.set_weights(2, solution)


def set_nac(layer, discrete_kernel) -> None:
    """Ŵ, M̂ = ±20 so that W = tanh(Ŵ)σ(M̂) is within 1e-8 of the given kernel."""
    import numpy as np

    kernel = np.asarray(discrete_kernel, "float32")
    layer.w_hat.assign(np.where(kernel < 0, -20.0, 20.0))
    layer.m_hat.assign(np.where(kernel == 0, -20.0, 20.0))


def mixed_subtraction():
    """NAU → NAU on 10 inputs computing x6 - x8 with hidden units that mix
    the inputs: h0 = 0.2 x0 + 0.5 x6 - 0.3 x8, h1 = -0.2 x0 + 0.5 x6 - 0.7 x8,
    y = h0 + h1. Each weight rounded alone reads 2*x6 - x8."""
    import keras
    import numpy as np

    from keras_nalu.layers import NAU

    model = keras.Sequential(
        [keras.Input((10,)), NAU(2, name="hidden"), NAU(1, name="output")]
    )
    kernel = np.zeros((10, 2), "float32")
    kernel[0], kernel[6], kernel[8] = [0.2, -0.2], [0.5, 0.5], [-0.3, -0.7]
    model.get_layer("hidden").kernel.assign(kernel)
    model.get_layer("output").kernel.assign([[1.0], [1.0]])
    return model


# The `keras-nalu` script (what pip writes for the entry point), with the
# import of the Keras backend's module held at its start (a file says so)
# until a signal comes, so that a Ctrl-C lands inside the command's start-up
# on any machine.
_HELD_IMPORT = """
import importlib.abc, importlib.machinery, os, sys, time

HELD = sys.argv.pop(1)  # the file that says the import holds

class HeldImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    module = os.environ.get("KERAS_BACKEND") or "tensorflow"

    def find_spec(self, name, path, target=None):
        if name != self.module:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:  # a plain find_spec (is it installed?) goes on
            spec.loader = self
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        open(HELD, "w").close()
        while True:
            time.sleep(0.01)  # until the Ctrl-C

sys.meta_path.insert(0, HeldImport())
sys.argv[0] = "keras-nalu"
from keras_nalu.cli import main
sys.exit(main())
"""


def interrupted_while_starting(*argv, cwd=None) -> subprocess.CompletedProcess:
    """`keras-nalu ARGV` in a fresh process, sent SIGINT while it imports.

    The command starts as the `keras-nalu` script does, except that the
    import of the Keras backend's module (TensorFlow, JAX, ...) holds at its
    start until the signal comes: a Ctrl-C typed while the command loads,
    whatever the machine's speed (unheld, a fast machine finished the
    command before the signal). Returns the finished process, its output as
    text.
    """
    import signal
    import tempfile
    import time

    with tempfile.TemporaryDirectory() as folder:
        held = Path(folder) / "held"
        process = subprocess.Popen(
            [sys.executable, "-c", _HELD_IMPORT, held, *map(str, argv)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
        deadline = time.monotonic() + 300  # a failure's bound, not a race
        while not held.exists() and process.poll() is None:
            assert time.monotonic() < deadline, "the import never started"
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def network_attempts(monkeypatch) -> list:
    """Turns the network off for a test; the list of what tried to reach it.

    Each connection or name lookup fails at once (an `OSError`, as with no
    network) and is recorded: a test asserts that a step needs no network,
    which on a machine without one is what makes it fail fast, at any speed.
    """
    import socket

    attempts = []

    def refused(kind):
        def attempt(*args, **kwargs):
            where = [a for a in args if not isinstance(a, socket.socket)]
            attempts.append((kind, *where[:2]))
            raise OSError(f"{kind}: the network is off in this test")

        return attempt

    monkeypatch.setattr(socket.socket, "connect", refused("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refused("connect"))
    monkeypatch.setattr(socket, "getaddrinfo", refused("getaddrinfo"))
    return attempts


HELD_SITE = Path(__file__).resolve().parent / "held_site"
"""The `sitecustomize` that holds training at evaluations (`held_training`)."""


def held_training(env: dict, hold: Path, after: Path | None = None) -> dict:
    """`env` for a process whose runs hold at each evaluation while `hold` exists.

    A run of that process (or of its Ray workers, when it starts a cluster)
    waits after an evaluation that did not finish it, while the file `hold`
    exists (and `after` does, if given) and no stop was asked for; see
    `tests/held_site/sitecustomize.py`. A test creates `hold` to find a sweep
    still training when it stops it, and deletes it to let the sweep go on.
    """
    paths = [str(HELD_SITE), *filter(None, [env.get("PYTHONPATH")])]
    held = {**env, "PYTHONPATH": os.pathsep.join(paths), "TESTS_HOLD_FILE": str(hold)}
    if after is not None:
        held["TESTS_HOLD_AFTER"] = str(after)
    return held


def keras_nalu_cli(capsys, *argv):
    """`keras-nalu ARGV` here: (exit status, stdout, stderr lines)."""
    from keras_nalu import cli

    try:
        code = cli.main([str(arg) for arg in argv])
    except SystemExit as exit:  # a flag argparse refuses
        code = exit.code
    captured = capsys.readouterr()
    return code, captured.out, [line for line in captured.err.splitlines() if line]
