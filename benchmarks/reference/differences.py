"""Each difference from the reference implementation, with its size measured.

docs/protocol.md lists what separates this package's runs from Madsen &
Johansen's code (stable-nalu); this script measures each, on this machine,
into `benchmarks/results/reference/differences.json` and the tables of
`differences.md` that the page includes. Parts (`--parts`, default all but
`adam`):

- `steps`: the recorded runs of the reference (`trajectories.py`) replayed
  by the JAX engine's step (`replay.py`) with the reference's settings and
  with one setting at a time changed to the package's (Adam's ε = 10⁻⁷, λ
  held over blocks of 50 steps, float32) and all three: the largest
  difference of a weight over the 1,001 steps; and the reference run with
  the installed PyTorch's Adam (ε after the bias correction) against the
  paper's PyTorch 1.2 placement.
- `schedule`: λ held over blocks of 50 steps against λ every step, over
  the NMU's ramp (λ = 10 from step 10⁶ to 2·10⁶).
- `thresholds`: every operation's success threshold from the training
  task's 25-element subsets (ours) and from the 26-element subsets of the
  reference's R script.
- `best_step`: the committed results' runs whose best step is step 0,
  which the reference's rule (every evaluation but step 0) would not pick.
- `data`: the reference's training stream (NumPy `RandomState`, float64
  cast to float32) against the JAX engine's (a counter-based float32
  stream): the targets' distribution.
- `targets`: the error of the float32 targets against op(a, b) of the
  float32 inputs in float64, as an MSE a perfect model would pay.
- `speed`: the JAX engine's seed-steps per second with the package's
  settings and with the reference's (`REFERENCE_SETTINGS`); `fit_speed`:
  the same for one run of `run_experiment` (`model.fit`, the backend's).
- `adam`: √v̂ of Adam's second moment against ε over real runs (NMU ×,
  the paper's recipe); long, resumable (`--adam-steps`).

    KERAS_BACKEND=jax python benchmarks/reference/differences.py
    KERAS_BACKEND=jax python benchmarks/reference/differences.py --parts adam

Every part replaces its own entry of the JSON file and rewrites the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # held.py

from difference_tables import EPSILONS, SETTINGS, tables  # noqa: E402
from trajectories import OUT  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
OPERATIONS = ("add", "sub", "mul", "div", "squared", "root")
# --- the training step ------------------------------------------------------------


def measure_steps() -> dict:
    """The largest weight difference per case under each of `SETTINGS`."""
    import replay

    cases: dict[str, dict[str, float]] = {}
    for names in replay.groups():
        for setting, (float64, fields) in SETTINGS.items():
            started = time.perf_counter()
            if float64:
                with replay.float64():
                    replayed = replay.replay(names, **fields)
            else:
                replayed = replay.replay(names, **fields)
            for name, value in zip(names, replay.weight_differences(replayed, names)):
                cases.setdefault(name, {})[setting] = value
            print(f"{'+'.join(names)} {setting}: {time.perf_counter() - started:.0f} s")
    paper, installed = (replay.record(n) for n in ("h4-s0", "h4-s0-installed-adam"))
    placement = max(
        float(np.abs(paper[f"snapshot_{i}"] - installed[f"snapshot_{i}"]).max())
        for i in (0, 1)
    )
    return {"cases": cases, "placement": {"h4-s0": placement}}


def measure_schedule() -> dict:
    """λ of the `nmu` preset over its ramp: held over 50 steps against every step."""
    from keras_nalu.presets import build_model
    from keras_nalu.regularizers import find_scheduled_regularizers
    from keras_nalu.sweeps.engines.schedule import strength_table

    model, callbacks = build_model("nmu", input_size=100)
    (schedule,) = callbacks
    regularizers = find_scheduled_regularizers(model)
    start, stop = 1_000_000, 2_000_001
    held = strength_table(schedule, regularizers, 50, start, stop, "float64")
    every = strength_table(schedule, regularizers, 1, start, stop, "float64")
    lag = np.abs(held - every).max()
    float32 = strength_table(schedule, regularizers, 1, start, stop, "float32")
    return {
        "largest_lag": float(lag),
        "mean_lag": float(np.abs(held - every).mean()),
        "float32_rounding": float(np.abs(float32 - every).max()),
        "strength": float(every.max()),
    }


# --- evaluation -------------------------------------------------------------------


def measure_thresholds() -> dict:
    """Every operation's threshold with 25-element subsets and with 26."""
    from keras_nalu.evaluation import success_threshold
    from keras_nalu.tasks import ArithmeticTask

    rows = {}
    for operation in OPERATIONS:
        ours = ArithmeticTask(operation=operation, seed=0)
        # R's a.start:a.end includes its end: 26 inputs, overlapping by 13.
        theirs = ArithmeticTask(
            operation=operation, explicit_subsets=((0, 26), (13, 39))
        )
        rows[operation] = {
            "subsets_25": [list(s) for s in ours.subsets],
            "subsets_26": [list(s) for s in theirs.subsets],
            "threshold_25": success_threshold(ours),
            "threshold_26": success_threshold(theirs),
        }
        print(operation, rows[operation])
    return {"operations": rows}


def measure_best_step() -> dict:
    """Runs of the committed results whose best step is step 0."""
    import pandas as pd

    counts = {"runs": 0, "best_at_step_0": 0, "solved_later": 0, "files": []}
    for path in sorted(RESULTS.glob("*/results.csv")):
        table = pd.read_csv(path, low_memory=False)
        if "best_step" not in table:
            continue
        at_zero = table["best_step"] == 0
        counts["runs"] += len(table)
        counts["best_at_step_0"] += int(at_zero.sum())
        counts["solved_later"] += int((at_zero & table["solved_at"].notna()).sum())
        counts["files"].append(str(path.relative_to(RESULTS)))
    return counts


# --- data -----------------------------------------------------------------------------


def _engine_stream(seeds, batches):
    """The JAX engine's training batches of NMU × seeds: x and t, float32."""
    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines.jax import JaxReplicaRun

    config = ExperimentConfig(model="nmu", operation="mul", iterations=1000)
    run = JaxReplicaRun(config, seeds)
    parts = [run.training_batch(step) for step in range(batches)]
    x = np.concatenate([np.asarray(p[0]) for p in parts], axis=1)
    t = np.concatenate([np.asarray(p[1]) for p in parts], axis=1)
    return run, x, t


def measure_data(seeds=range(10), batches=100) -> dict:
    """The two streams' targets: moments and the two-sample KS distance."""
    from reference_data import ReferenceData
    from scipy import stats

    _, _, ours = _engine_stream(list(seeds), batches)
    theirs = np.stack(
        [ReferenceData(seed=s).training_stream().draw(batches)[1] for s in seeds]
    )
    ours, theirs = ours.ravel().astype(np.float64), theirs.ravel().astype(np.float64)
    test = stats.ks_2samp(ours, theirs)
    return {
        "samples": int(ours.size),
        "ours": {"mean": float(ours.mean()), "std": float(ours.std())},
        "reference": {"mean": float(theirs.mean()), "std": float(theirs.std())},
        "ks_statistic": float(test.statistic),
        "ks_p_value": float(test.pvalue),
    }


def _target_error(x32, t32, subsets) -> float:
    """Mean square of t - op(a, b), a and b summed in float64 from float32 x."""
    x = x32.astype(np.float64)
    a, b = (x[..., s:e].sum(axis=-1) for s, e in subsets)
    return float(np.mean((t32[..., 0].astype(np.float64) - a * b) ** 2))


def measure_targets(seeds=range(10), batches=100) -> dict:
    """The float32 targets' error: the MSE an exact model pays for it (×)."""
    from reference_data import ReferenceData

    run, x, t = _engine_stream(list(seeds), batches)
    ours = [_target_error(x[r], t[r], run.tasks[r].subsets) for r in range(len(x))]
    ours_test = [
        _target_error(*run.tasks[r].test_data(), run.tasks[r].subsets)
        for r in range(len(x))
    ]
    theirs, theirs_test = [], []
    for seed in seeds:
        data = ReferenceData(seed=seed)
        theirs.append(
            _target_error(*data.training_stream().draw(batches), data.subsets)
        )
        theirs_test.append(_target_error(*data.test(), data.subsets))
    return {
        "training": {"ours": max(ours), "reference": max(theirs)},
        "test": {"ours": max(ours_test), "reference": max(theirs_test)},
        "threshold": float(run.thresholds[0]),
    }


# --- speed ----------------------------------------------------------------------------


def _speed_variants() -> dict:
    """The settings whose speed is measured: the package's, the reference's,
    and each of the reference's alone."""
    from keras_nalu.experiments import REFERENCE_SETTINGS

    return {
        "package": {},
        "epsilon": {"epsilon": REFERENCE_SETTINGS["epsilon"]},
        "lambda_every_step": {"steps_per_execution": 1},
        "reference": dict(REFERENCE_SETTINGS),
    }


def measure_speed(replicas=100, steps=6_000, repeats=2) -> dict:
    """Seed-steps per CPU second (the process's, every thread: the cores are
    shared) of the JAX engine: the package's settings and the reference's,
    and each of the reference's alone; the best of `repeats`."""
    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines.jax import JaxReplicaRun

    variants = _speed_variants()
    best = {name: 0.0 for name in variants}
    for _ in range(repeats):
        for name, fields in variants.items():
            config = ExperimentConfig(
                model="nmu",
                operation="mul",
                iterations=steps,
                eval_every=1000,
                sparsity_start=0,
                sparsity_end=steps,
                **fields,
            )
            run = JaxReplicaRun(config, list(range(replicas)), history=False)
            run.train_block(0, 1000)  # compiles
            started = time.process_time()
            for start in range(1000, steps, 1000):
                run.train_block(start, start + 1000)
            run.stacked_weights()  # waits for the device
            rate = replicas * (steps - 1000) / (time.process_time() - started)
            best[name] = max(best[name], rate)
            print(f"speed {name}: {rate:,.0f} seed-steps per CPU second")
    return {
        "replicas": replicas,
        "steps": steps,
        "seed_steps_per_second": best,
        "ratio": {name: best[name] / best["package"] for name in variants},
    }


def measure_fit_speed(steps=5_000, repeats=2) -> dict:
    """Steps per CPU second of `run_experiment` (Keras' `model.fit`, this
    backend) with the package's settings and the reference's: λ every step
    is `steps_per_execution=1`, a call of the compiled step per step."""
    import keras

    from keras_nalu.experiments import ExperimentConfig, run_experiment

    variants = _speed_variants()
    best = {name: 0.0 for name in variants}
    for _ in range(repeats):
        for name, fields in variants.items():
            config = ExperimentConfig(
                model="nmu", operation="mul", iterations=steps, **fields
            )
            started = time.process_time()
            _, record = run_experiment(config, verbose=False)
            rate = record["iterations"] / (time.process_time() - started)
            best[name] = max(best[name], rate)
            print(f"fit {name}: {rate:,.0f} steps per CPU second")
    return {
        "backend": keras.backend.backend(),
        "steps": steps,
        "steps_per_second": best,
        "ratio": {name: best[name] / best["package"] for name in variants},
    }


# --- Adam's ε in real runs ----------------------------------------------------------


def _adam_statistics(run) -> dict:
    """√v̂ of every weight of every replica against ε, at the run's step."""
    state = run.get_state().variables
    names = [v.name for v in run.optimizer.variables]
    step = int(state.optimizer[names.index("iteration")])
    correction = 1.0 - 0.999**step
    roots = np.concatenate(
        [
            np.sqrt(np.asarray(v, np.float64) / correction).ravel()
            for name, v in zip(names, state.optimizer)
            if "velocity" in name
        ]
    )
    nau, nmu = (np.asarray(w) for w in state.weights)
    at_bound = np.concatenate(
        [(np.abs(nau) == 1.0).ravel(), ((nmu == 0.0) | (nmu == 1.0)).ravel()]
    )
    # ε changes a step by 1 - (√v + 10⁻⁸)/(√v + 10⁻⁷) from one to the other
    # (Keras adds ε to √v; √v̂ ≈ √v once the bias correction is ~1).
    change = (EPSILONS[1] - EPSILONS[0]) / (roots + EPSILONS[1])
    quantiles = (0.0, 0.001, 0.01, 0.1, 0.5)
    return {
        "step": step,
        "sqrt_v_hat_quantiles": dict(
            zip(map(str, quantiles), map(float, np.quantile(roots, quantiles)))
        ),
        "share_changed_over_1_percent": float(np.mean(change > 0.01)),
        "share_changed_over_1_percent_inside": float(
            np.mean((change > 0.01) & ~at_bound)
        ),
        "share_at_a_bound": float(np.mean(at_bound)),
    }


@dataclasses.dataclass(frozen=True)
class AdamRuns:
    """The runs `measure_adam` reads Adam's √v̂ in.

    Attributes:
        hidden_size: the NMU preset's hidden size.
        steps: the steps trained (the preset's schedule, λ = 10 over steps
            10⁶ → 2·10⁶).
        seeds: how many seeds (0, 1, …).
        every: steps between two readings.
        solved: start every replica at an exact solution of its task, with
            λ at full strength from step 0: the state of a solved run late in
            its training (as `benchmarks/held.py`).
    """

    hidden_size: int = 10
    steps: int = 5_000_000
    seeds: int = 2
    every: int = 100_000
    solved: bool = False

    @property
    def key(self) -> str:
        return f"adam_h{self.hidden_size}" + ("_solved" if self.solved else "")


def measure_adam(runs: AdamRuns, previous: dict) -> dict:
    """√v̂ against ε every `runs.every` steps of NMU × runs (JAX engine),
    resumable from its backup."""
    from held import exact_solution

    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines import TrainingLimits, replica_run

    ramp = {"sparsity_start": 0, "sparsity_end": 1} if runs.solved else {}
    config = ExperimentConfig(
        model="nmu",
        operation="mul",
        hidden_size=runs.hidden_size,
        iterations=runs.steps,
        eval_every=math.gcd(10_000, runs.every),
        **ramp,
    )
    run = replica_run(config, list(range(runs.seeds)), history=False)
    backup = OUT / "adam.backup" / f"{runs.key}.npz"
    backup.parent.mkdir(exist_ok=True)
    if not run.restore_backup(backup) and runs.solved:
        for r in range(runs.seeds):
            run.set_weights(r, exact_solution(run, r))
    points = {int(k): v for k, v in previous.get("points", {}).items()}

    def progress(_):
        if run.step % runs.every == 0 and run.step not in points:
            points[run.step] = _adam_statistics(run)
            run.save_backup(backup)
            print(f"{runs.key} step {run.step}: {points[run.step]}")
            _write_entry(runs.key, _adam_entry(runs, points))

    run.train(progress=progress, limits=TrainingLimits(backup, 600))
    return _adam_entry(runs, points)


def _adam_entry(runs: AdamRuns, points) -> dict:
    return {
        **dataclasses.asdict(runs),
        "points": {str(k): points[k] for k in sorted(points)},
    }


# --- files ----------------------------------------------------------------------------


def _read() -> dict:
    path = OUT / "differences.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _write_entry(key: str, value) -> None:
    entries = _read()
    entries[key] = value
    (OUT / "differences.json").write_text(json.dumps(entries, indent=1) + "\n")
    (OUT / "differences.md").write_text(tables(entries), encoding="utf-8")


PARTS = {
    "steps": measure_steps,
    "schedule": measure_schedule,
    "thresholds": measure_thresholds,
    "best_step": measure_best_step,
    "data": measure_data,
    "targets": measure_targets,
    "speed": measure_speed,
    "fit_speed": measure_fit_speed,
}


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument(
        "--parts", default=",".join(PARTS), help=f"of {[*PARTS, 'adam']}"
    )
    options.add_argument(
        "--tables", action="store_true", help="only rewrite differences.md"
    )
    defaults = AdamRuns()
    options.add_argument("--adam-hidden-size", type=int, default=defaults.hidden_size)
    options.add_argument("--adam-steps", type=int, default=defaults.steps)
    options.add_argument("--adam-seeds", type=int, default=defaults.seeds)
    options.add_argument("--adam-every", type=int, default=defaults.every)
    options.add_argument(
        "--adam-solved", action="store_true", help="start at exact solutions"
    )
    args = options.parse_args(argv)
    if args.tables:
        (OUT / "differences.md").write_text(tables(_read()), encoding="utf-8")
        return 0
    for part in args.parts.split(","):
        started = time.perf_counter()
        if part == "adam":
            runs = AdamRuns(
                args.adam_hidden_size,
                args.adam_steps,
                args.adam_seeds,
                args.adam_every,
                args.adam_solved,
            )
            key, value = runs.key, measure_adam(runs, _read().get(runs.key, {}))
        elif part in PARTS:
            key, value = part, PARTS[part]()
        else:
            raise SystemExit(f"differences.py: unknown part {part!r}")
        if isinstance(value, dict):
            value["seconds"] = round(time.perf_counter() - started)
            value["machine"] = "2-core CPU"
        _write_entry(key, value)
        print(f"{part}: {json.dumps(value)[:2000]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
