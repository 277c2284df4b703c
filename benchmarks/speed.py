"""Seed-iterations per second: `model.fit`, the TensorFlow engine, the JAX engine.

Measures, on Madsen & Johansen's (2020) NAU → NMU model (100 inputs, batch
128, × task, evaluation every 1,000 steps as in the protocol, included):

- `fit`: one seed through `run_experiment` (`model.fit` on the TensorFlow
  backend, its default steps_per_execution = 50);
- `tensorflow R=…`: R seeds as vectorized replicas on the TensorFlow engine;
- `jax R=…`: R seeds on the JAX engine (R = 1 is its single seed);
- with `--profile`, where a JAX engine step's time goes: the same block of
  steps with every replica's batch drawn in the step, and with one fixed
  batch instead; their difference is the cost of the random numbers and
  targets.

Each case runs in its own process with its `KERAS_BACKEND`, trains `--warmup`
steps once to compile, then twice more, `--warmup` and `--warmup + steps`
steps; the rate is the difference of steps over the difference of wall times,
which removes building, tracing and compiling. `steps` is `--steps`, or more
for few replicas: at least `--seed-steps / R`, so that every case measures
about as many seed-steps.
The best of `--repeats` processes is kept (a shared machine's load
varies). Cases whose backend is not installed are skipped (e.g. TensorFlow on
a GPU machine that has only JAX).

Usage:

    .venv/bin/python benchmarks/speed.py                        # CPU set
    .venv/bin/python benchmarks/speed.py --replicas 1,100,1000,10000 \\
        --engines jax --steps 20000                              # a GPU

Writes `benchmarks/results/speed.json` (or `--out`) and prints a Markdown
table with the device of every row.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "speed.json"
CONFIG = {"model": "nmu", "operation": "mul", "input_size": 100, "eval_every": 1000}


def _config(**changes):
    from keras_nalu.experiments import ExperimentConfig

    return ExperimentConfig(**{**CONFIG, **changes})


def _rate(train, warmup: int, steps: int) -> dict:
    """Steps per second from two runs of different length (constant costs cancel).

    A first, untimed run compiles: the two timed runs then reuse its compiled
    steps alike (timing the first run itself would subtract its compilation
    from the second's wall time, a negative rate on a fast device).
    """
    train(warmup)
    short = train(warmup)
    long = train(warmup + steps)
    return {
        "steps_per_second": steps / (long - short),
        "short_wall_s": short,
        "long_wall_s": long,
    }


def _device() -> str:
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return "CPU" if device.platform == "cpu" else device.device_kind
    return "CPU"


def _steps(args) -> int:
    """Measured steps: `--steps`, or `--seed-steps / R` if that is more."""
    return max(args.steps, -(-args.seed_steps // args.replicas))


def case_fit(args) -> dict:
    """One seed through `run_experiment` (the `keras-nalu train` path)."""
    from keras_nalu.experiments import run_experiment

    def train(steps):
        config = _config(iterations=steps, seed=args.seed)
        started = time.perf_counter()
        run_experiment(config, verbose=False)
        return time.perf_counter() - started

    result = _rate(train, args.warmup, _steps(args))
    return {**result, "seed_iterations_per_second": result["steps_per_second"]}


def case_replicas(args) -> dict:
    """`ReplicaRun` of the Keras backend's engine over `args.replicas` seeds."""
    from keras_nalu.sweeps.engines import replica_run

    seeds = list(range(args.seed, args.seed + args.replicas))
    setup = {}

    def train(steps):
        started = time.perf_counter()
        run = replica_run(_config(iterations=steps), seeds)
        built = time.perf_counter()
        run.train(progress=False)
        setup[steps] = built - started
        return time.perf_counter() - built

    result = _rate(train, args.warmup, _steps(args))
    return {
        **result,
        "setup_s": max(setup.values()),
        "seed_iterations_per_second": result["steps_per_second"] * args.replicas,
    }


def case_profile(args) -> dict:
    """JAX engine: a block with the batches drawn in the step, and without."""
    import jax

    from keras_nalu.sweeps.engines import replica_run
    from keras_nalu.sweeps.engines.jax import JaxReplicaRun

    class FixedBatch(JaxReplicaRun):
        """Trains every step on batch 0, drawn once outside the step."""

        def training_batch(self, step):
            return self._fixed

    seeds = list(range(args.replicas))
    config = _config(iterations=10 * args.steps)
    drawn = replica_run(config, seeds)
    fixed = FixedBatch(config, seeds)
    fixed._fixed = jax.block_until_ready(drawn.training_batch(0))
    block = 1000
    for run in (drawn, fixed):
        run._train_block(0, run.strengths(0, block))  # compiles
        jax.block_until_ready(run.carry.weights)
    times = {"drawn": float("inf"), "fixed": float("inf")}
    cpu = dict(times)
    for _ in range(5):  # alternating, so both see the same load
        for name, run in (("drawn", drawn), ("fixed", fixed)):
            wall, used = time.perf_counter(), time.process_time()
            run._train_block(0, run.strengths(0, block))
            jax.block_until_ready(run.carry.weights)
            times[name] = min(times[name], (time.perf_counter() - wall) / block * 1e3)
            cpu[name] = min(cpu[name], (time.process_time() - used) / block * 1e3)
    return {
        "step_ms_batches_drawn": times["drawn"],
        "step_ms_fixed_batch": times["fixed"],
        "cpu_ms_batches_drawn": cpu["drawn"],
        "cpu_ms_fixed_batch": cpu["fixed"],
        "random_numbers_and_targets_share": 1 - cpu["fixed"] / cpu["drawn"],
    }


CASES = {"fit": case_fit, "replicas": case_replicas, "profile": case_profile}


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _run_case(case: str, engine: str, replicas: int, args) -> dict:
    command = [sys.executable, __file__, "--case", case]
    for flag in ("steps", "seed_steps", "warmup", "seed"):
        command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    command += ["--replicas", str(replicas)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": engine}
    best = None
    for _ in range(args.repeats if case != "profile" else 1):
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"case {case} failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rate = result.get("seed_iterations_per_second", 0)
        if best is None or rate > best.get("seed_iterations_per_second", 0):
            best = result
    return best


def _table(rows: list[dict]) -> str:
    lines = [
        "| engine | replicas | device | seed-iterations/s | setup |",
        "|---|--:|---|--:|--:|",
    ]
    for row in rows:
        setup = row.get("setup_s")
        lines.append(
            f"| {row['label']} | {row['replicas']} | {row['device']} | "
            f"{row['seed_iterations_per_second']:,.0f} | "
            f"{'' if setup is None else f'{setup:.1f} s'} |"
        )
    return "\n".join(lines) + "\n"


def _ratios(rows: list[dict]) -> dict:
    """The issue's targets: JAX over TF at R = 100, JAX R = 1 over `fit`."""
    rate = {(r["engine"], r["replicas"]): r["seed_iterations_per_second"] for r in rows}
    ratios = {}
    if ("jax", 100) in rate and ("tensorflow", 100) in rate:
        ratios["jax R=100 / tensorflow R=100"] = (
            rate["jax", 100] / rate["tensorflow", 100]
        )
    if ("jax", 1) in rate and ("fit", 1) in rate:
        ratios["jax R=1 / fit"] = rate["jax", 1] / rate["fit", 1]
    return ratios


def machine(load_before) -> dict:
    """The machine a benchmark ran on, its load before and after, and the
    versions of the packages that trained."""
    from importlib import metadata

    versions = {}
    for name in ("jax", "jaxlib", "keras", "tensorflow", "numpy"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def _list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


def parser() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--replicas", default="1,100,1000", help="R values")
    options.add_argument(
        "--engines", default="fit,tensorflow,jax", help="fit, tensorflow, jax"
    )
    options.add_argument("--steps", type=int, default=3000, help="measured steps")
    options.add_argument(
        "--seed-steps",
        type=int,
        default=300_000,
        help="measure at least this many seed-steps: steps >= seed-steps / R",
    )
    options.add_argument("--warmup", type=int, default=1000, help="steps subtracted")
    options.add_argument("--repeats", type=int, default=2, help="best of N processes")
    options.add_argument("--seed", type=int, default=0)
    options.add_argument(
        "--tf-max-replicas",
        type=int,
        default=100,
        help="largest R for the TensorFlow engine (it is slow beyond)",
    )
    options.add_argument("--profile", action="store_true", help="JAX step profile")
    options.add_argument("--out", default=str(RESULTS))
    options.add_argument("--case", choices=sorted(CASES), help=argparse.SUPPRESS)
    return options


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.case:
        args.replicas = int(args.replicas)
        result = CASES[args.case](args)
        result["device"] = _device()
        print(json.dumps(result))
        return 0
    load_before = os.getloadavg()
    started = time.time()
    rows, skipped, profile = measure(args)
    record = {
        "rows": rows,
        "ratios": _ratios(rows),
        "profile": profile,
        "skipped": skipped,
        "config": CONFIG,
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "machine": machine(load_before),
        "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
        "seconds": time.time() - started,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    report(record)
    print(
        f"load average before/after: {load_before[0]:.1f}/"
        f"{record['machine']['load_average_after'][0]:.1f} on {os.cpu_count()} "
        f"CPUs; written to {out}",
        file=sys.stderr,
    )
    return 0


def measure(args) -> tuple[list[dict], list[str], dict | None]:
    """Every engine and replica count asked for, each in its own processes:
    the rows, the engines skipped (not installed) and the JAX step profile."""
    engines = _list(args.engines)
    replica_counts = [int(r) for r in _list(args.replicas)]
    have = {
        "fit": _installed("tensorflow"),
        "tensorflow": _installed("tensorflow"),
        "jax": _installed("jax"),
    }
    rows, skipped = [], []
    plan = [("fit", 1)] if "fit" in engines else []
    for engine in ("tensorflow", "jax"):
        if engine in engines:
            limit = args.tf_max_replicas if engine == "tensorflow" else None
            plan += [(engine, r) for r in replica_counts if limit is None or r <= limit]
    for engine, replicas in plan:
        if not have[engine]:
            skipped.append(f"{engine} (not installed)")
            continue
        print(f"measuring {engine} R={replicas} ...", file=sys.stderr, flush=True)
        backend = "tensorflow" if engine == "fit" else engine
        case = "fit" if engine == "fit" else "replicas"
        result = _run_case(case, backend, replicas, args)
        label = "`run_experiment` (model.fit)" if engine == "fit" else engine
        rows.append({**result, "engine": engine, "label": label, "replicas": replicas})
    profile = None
    if args.profile and have["jax"]:
        print("profiling the JAX engine at R=100 ...", file=sys.stderr, flush=True)
        profile = _run_case("profile", "jax", 100, args)
    return rows, skipped, profile


def report(record: dict) -> None:
    """Prints the table, the ratios, the profile and what was skipped."""
    print(_table(record["rows"]))
    for name, value in record["ratios"].items():
        print(f"{name}: {value:.2f}")
    profile = record["profile"]
    if profile:
        print(
            "JAX engine, R=100, per step (wall / CPU ms): "
            f"{profile['step_ms_batches_drawn']:.2f} / "
            f"{profile['cpu_ms_batches_drawn']:.2f} with the batches drawn in the "
            f"step, {profile['step_ms_fixed_batch']:.2f} / "
            f"{profile['cpu_ms_fixed_batch']:.2f} on a fixed batch: drawing the "
            "random numbers and targets is "
            f"{profile['random_numbers_and_targets_share']:.0%} of a step's CPU time"
        )
    if record["skipped"]:
        print(f"skipped: {', '.join(record['skipped'])}")


if __name__ == "__main__":
    sys.exit(main())
