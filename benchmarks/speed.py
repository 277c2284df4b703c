"""Seed-iterations per second: one seed with model.fit vs vectorized replicas.

Measures, on Madsen & Johansen's (2020) default model (NAU → NMU, 100 inputs, batch 128,
evaluation every 1,000 steps as in the protocol):

(a) one seed through `run_experiment` with `steps_per_execution=1` (plain
    `model.fit`);
(b) one seed with `model.fit` tuned: the best of steps_per_execution 50 and
    1,000, with and without XLA;
(c) R vectorized replicas through `ReplicaRun` (default R = 100), with
    TensorFlow's default threading and with one intra-op thread (set before
    TensorFlow starts): the per-replica ops are small, and sharding each over
    both cores costs more than it gains while the next batch is drawn on the
    other core.

Each case runs in its own process (so its peak RSS is its own) and trains
twice, `--warmup` and `--warmup + --steps` steps; the rate is the difference
of steps over the difference of wall times, which removes building, tracing
and the step-0 evaluation. The best of `--repeats` is kept: the machine is
shared and its load varies. `--profile` adds where the time of one
vectorized step goes.

Usage:

    .venv/bin/python benchmarks/speed.py                  # all, ~10 min
    .venv/bin/python benchmarks/speed.py --replicas 10 --steps 1000  # quick

Writes `benchmarks/results/speed.json` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "speed.json"
CONFIG = {"model": "nmu", "operation": "mul", "input_size": 100, "eval_every": 1000}


def _config(**changes):
    from keras_nalu.experiment import ExperimentConfig

    return ExperimentConfig(**{**CONFIG, **changes})


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rate(train, warmup: int, steps: int) -> dict:
    """Steps per second from two runs of different length (constant costs cancel)."""
    short = train(warmup)
    long = train(warmup + steps)
    return {
        "steps_per_second": steps / (long - short),
        "short_wall_s": short,
        "long_wall_s": long,
    }


def case_single_fit(args) -> dict:
    """(a): `run_experiment` with steps_per_execution = 1."""
    from keras_nalu.experiment import run_experiment

    def train(steps):
        config = _config(iterations=steps, steps_per_execution=1, seed=args.seed)
        started = time.perf_counter()
        run_experiment(config, verbose=False)
        return time.perf_counter() - started

    result = _rate(train, args.warmup, args.steps)
    return {**result, "seed_iterations_per_second": result["steps_per_second"]}


def case_single_tuned(args) -> dict:
    """(b): `model.fit` on the task's stream, steps_per_execution × jit_compile."""
    import keras

    from keras_nalu.experiment import run_experiment
    from keras_nalu.models import build_model

    variants = {}
    for steps_per_execution in (50, 1000):
        for jit in (False, True):

            def train(steps, spe=steps_per_execution, jit=jit):
                config = _config(iterations=steps, seed=args.seed)
                task = config.task()
                keras.utils.set_random_seed(config.seed)
                model, callbacks = build_model(
                    config.model,
                    input_size=config.input_size,
                    jit_compile=jit,
                    steps_per_execution=spe,
                )
                started = time.perf_counter()
                for _ in range(steps // 1000):  # one epoch per evaluation
                    model.fit(
                        task.train_dataset(),
                        steps_per_epoch=1000,
                        epochs=1,
                        callbacks=callbacks,
                        verbose=0,
                    )
                    for x, t in (task.validation_data(), task.test_data()):
                        model.evaluate(x, t, batch_size=10_000, verbose=0)
                return time.perf_counter() - started

            name = f"steps_per_execution={steps_per_execution}, jit_compile={jit}"
            variants[name] = _rate(train, args.warmup, args.steps)["steps_per_second"]

    # The protocol path with its default (steps_per_execution = 50).
    def protocol(steps):
        config = _config(iterations=steps, seed=args.seed)
        started = time.perf_counter()
        run_experiment(config, verbose=False)
        return time.perf_counter() - started

    variants["run_experiment default (steps_per_execution=50)"] = _rate(
        protocol, args.warmup, args.steps
    )["steps_per_second"]
    best = max(variants, key=variants.get)
    return {
        "variants": variants,
        "best": best,
        "seed_iterations_per_second": variants[best],
    }


def case_replicas(args) -> dict:
    """(c): `ReplicaRun` over `--replicas` seeds."""
    from keras_nalu.sweeps.replicas import ReplicaRun

    seeds = list(range(args.seed, args.seed + args.replicas))
    setup = {}

    def train(steps):
        started = time.perf_counter()
        run = ReplicaRun(_config(iterations=steps), seeds)
        built = time.perf_counter()
        run.train(progress=False)
        setup[steps] = built - started
        return time.perf_counter() - built

    result = _rate(train, args.warmup, args.steps)
    return {
        **result,
        "replicas": args.replicas,
        "setup_s": max(setup.values()),
        "seed_iterations_per_second": result["steps_per_second"] * args.replicas,
    }


def case_profile(args) -> dict:
    """Where one vectorized step's time goes (ms per step, best of 3)."""
    import tensorflow as tf

    from keras_nalu.sweeps.replicas import ReplicaRun

    run = ReplicaRun(_config(iterations=1000), list(range(args.replicas)))
    k = 200
    x, t = run.training_batch(tf.constant(0, tf.int64))
    weights = [tf.identity(w.value) for w in run._weights]

    @tf.function
    def data_only(n):
        total = tf.constant(0.0)
        for i in tf.range(n):
            batch_x, _ = run.training_batch(tf.cast(i, tf.int64))
            total += batch_x[0, 0, 0]
        return total

    @tf.function
    def gradients_only(n):
        total = tf.constant(0.0)
        for _ in tf.range(n):
            losses, grads = run._losses_and_gradients(weights, x, t)
            total += losses[0] + grads[0][0, 0, 0]
        return total

    size = args.replicas * x.shape[1] * x.shape[2]

    @tf.function
    def philox_floor(n):
        # The random numbers alone, in one op: no replica can be fed for less.
        total = tf.constant(0.0)
        for i in tf.range(n):
            seed = tf.stack([tf.cast(i, tf.int64), tf.constant(1, tf.int64)])
            total += tf.reduce_sum(tf.random.stateless_uniform([size], seed))
        return total

    def full(n):
        run._train_block(tf.constant(0, tf.int64), tf.constant(run._strengths(0, n)))

    def timed(fn):
        fn(tf.constant(2)) if fn is not full else fn(2)
        best_wall, best_cpu = float("inf"), float("inf")
        for _ in range(3):
            wall, cpu = time.perf_counter(), time.process_time()
            fn(tf.constant(k)) if fn is not full else fn(k)
            best_wall = min(best_wall, (time.perf_counter() - wall) / k * 1e3)
            best_cpu = min(best_cpu, (time.process_time() - cpu) / k * 1e3)
        return {"wall_ms": best_wall, "cpu_ms": best_cpu}

    evaluation = []
    for _ in range(3):
        started = time.perf_counter()
        run._evaluate(0)
        evaluation.append(time.perf_counter() - started)
    return {
        "replicas": args.replicas,
        "data: R × (Philox draws of 128×100 + targets), per step": timed(data_only),
        "floor: the same number of Philox uniforms in one op, per step": timed(
            philox_floor
        ),
        "loss + gradients (vectorized stateless_call), per step": timed(gradients_only),
        "full step (next batch drawn alongside, Adam, masks), per step": timed(full),
        "evaluation (10^4 + 10^4 samples, all replicas), per call": {
            "wall_ms": min(evaluation) * 1e3
        },
    }


CASES = {
    "a": case_single_fit,
    "b": case_single_tuned,
    "c": case_replicas,
    "c1": case_replicas,  # the same with --intra-op-threads 1
    "profile": case_profile,
}


def _run_case(name: str, args) -> dict:
    command = [sys.executable, __file__, "--case", name]
    if name in ("c1", "profile"):
        command += ["--intra-op-threads", "1"]
    for flag in ("replicas", "steps", "warmup", "seed"):
        command += [f"--{flag}", str(getattr(args, flag))]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    best = None
    for _ in range(args.repeats if name != "profile" else 1):
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"case {name} failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rate = result.get("seed_iterations_per_second", 0)
        if best is None or rate > best.get("seed_iterations_per_second", 0):
            best = result
    return best


def _table(results: dict) -> str:
    a = results["a"]["seed_iterations_per_second"]
    rows = [
        ("(a) 1 seed, `model.fit`, steps_per_execution=1", results["a"]),
        (f"(b) 1 seed, `model.fit` tuned: {results['b']['best']}", results["b"]),
        (f"(c) {results['c']['replicas']} vectorized replicas", results["c"]),
        (
            f"(c) {results['c']['replicas']} vectorized replicas, 1 intra-op thread",
            results["c1"],
        ),
    ]
    lines = [
        "| case | seed-iterations/s | × (a) | peak RSS |",
        "|---|--:|--:|--:|",
    ]
    for label, result in rows:
        rate = result["seed_iterations_per_second"]
        lines.append(
            f"| {label} | {rate:,.0f} | {rate / a:.1f} | "
            f"{result['peak_rss_mb']:,.0f} MB |"
        )
    return "\n".join(lines) + "\n"


def _profile_table(profile: dict) -> str:
    lines = ["| part | wall ms | CPU ms |", "|---|--:|--:|"]
    for part, times in profile.items():
        if not isinstance(times, dict):
            continue
        cpu = times.get("cpu_ms")
        cpu_text = f"{cpu:.2f}" if cpu is not None else ""
        lines.append(f"| {part} | {times['wall_ms']:.2f} | {cpu_text} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--steps", type=int, default=3000, help="measured steps")
    parser.add_argument("--warmup", type=int, default=1000, help="steps subtracted")
    parser.add_argument("--repeats", type=int, default=2, help="best of N processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--profile", action="store_true", help="profile case (c), 1 intra-op thread"
    )
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--case", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--intra-op-threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.intra_op_threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_threads)
    if args.case:
        result = CASES[args.case](args)
        result["peak_rss_mb"] = _peak_rss_mb()
        print(json.dumps(result))
        return 0
    load_before = os.getloadavg()
    started = time.time()
    results = {}
    for name in ("a", "b", "c", "c1", *(("profile",) if args.profile else ())):
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        results[name] = _run_case(name, args)
    a = results["a"]["seed_iterations_per_second"]
    c = max(results[k]["seed_iterations_per_second"] for k in ("c", "c1"))
    record = {
        "results": results,
        "ratio_c_over_a": c / a,
        "ratio_c_over_b": c / results["b"]["seed_iterations_per_second"],
        "config": CONFIG,
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
        "seconds": time.time() - started,
    }
    try:
        import tensorflow as tf

        record["machine"]["tensorflow"] = tf.__version__
    except ImportError:
        pass
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(_table(results))
    if "profile" in results:
        print(_profile_table(results["profile"]))
    print(
        f"(c)/(a) = {c / a:.1f}; load average before/after: "
        f"{load_before[0]:.1f}/{record['machine']['load_average_after'][0]:.1f} "
        f"on {os.cpu_count()} CPUs; written to {out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
