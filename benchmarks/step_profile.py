"""Where a JAX engine step's time goes, and what packing and unrolling change.

    KERAS_BACKEND=jax python benchmarks/step_profile.py              # R = 1, 100
    KERAS_BACKEND=jax python benchmarks/step_profile.py --replicas 1000

For each replica count R, on this device, microseconds per training step
of a compiled block of `--steps` steps (every case compiled first, then the
best of `--repeats` rounds in which the cases take turns;
`jax.block_until_ready` after each):

- loop alone: `jax.lax.scan` over the steps with one sine to compute, the
  fixed cost of one iteration of XLA's loop;
- the step: the speed table's model (NAU → NMU on ×, 100 inputs, batch 128)
  with every replica's batch drawn in the step, as it trains;
- on a fixed batch: the same step on one batch drawn before the block, so
  the difference is the cost of drawing the batches;
- unrolled ×8: eight steps per iteration of the loop (`unroll=8`);
- one evaluation: `ReplicaRun.evaluate` (interpolation and extrapolation
  MSEs, sparsity error, verdicts), in µs per evaluation and per step at the
  protocol's one evaluation in 1,000 steps;
- Table 2's remaining recipes (NAC, Linear, NALU, NAU; R replicas each)
  one after the other (the sum of their steps) and packed into one program
  (`keras_nalu.sweeps.engines.jax.JaxReplicaRun.train_together`).

Writes `benchmarks/results/step-profile.json` and `.md` (or `--out`) and
prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import speed  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "step-profile.json"
CONFIG = {"model": "nmu", "operation": "mul", "input_size": 100, "eval_every": 1000}
TABLE_2_RECIPES = (("nac", "add"), ("linear", "sub"), ("nalu", "mul"), ("nau", "add"))


def _best(cases: dict, repeats: int) -> dict:
    """Seconds of each case's best run; every case is compiled first, then the
    cases take turns, so that each sees the machine's load alike."""
    import jax

    for run in cases.values():
        jax.block_until_ready(run())
    best = dict.fromkeys(cases, float("inf"))
    for _ in range(repeats):
        for name, run in cases.items():
            started = time.perf_counter()
            jax.block_until_ready(run())
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def profile(replicas: int, steps: int, repeats: int) -> dict:
    """Microseconds per step of each case at `replicas` replicas."""
    import jax
    import jax.numpy as jnp

    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.engines import replica_run
    from keras_nalu.sweeps.engines.jax import JaxReplicaRun

    class FixedBatch(JaxReplicaRun):
        def training_batch(self, step):
            return self.fixed

    seeds = list(range(replicas))
    config = ExperimentConfig(**CONFIG, iterations=10 * steps)
    drawn = replica_run(config, seeds)
    fixed = FixedBatch(config, seeds)
    fixed.fixed = jax.block_until_ready(drawn.training_batch(0))
    unrolled = replica_run(config, seeds, unroll=8)
    recipes = [
        replica_run(
            ExperimentConfig(model=model, operation=operation, iterations=10 * steps),
            seeds,
        )
        for model, operation in TABLE_2_RECIPES
    ]
    programs = {}  # the runs stay at step 0: each block is the same

    def block(*runs):
        def train():
            for run in runs:
                run.train_block(0, steps)
            return [run.carry.weights for run in runs]

        return train

    def together():
        JaxReplicaRun.train_together(recipes, steps, programs)
        return [run.carry.weights for run in recipes]

    def evaluate():
        drawn.evaluate(steps)
        return drawn.carry.weights

    # a loop that only counts, on a value XLA cannot fold away
    loop = jax.jit(
        lambda x: jax.lax.scan(lambda c, _: (c + jnp.sin(c), None), x, None, steps)[0]
    )
    seconds = _best(
        {
            "loop alone": lambda: loop(jnp.ones(1)),
            "the step": block(drawn),
            "on a fixed batch": block(fixed),
            "unrolled ×8": block(unrolled),
            "Table 2's four recipes, one by one": block(*recipes),
            "Table 2's four recipes, packed": together,
            "one evaluation": evaluate,
        },
        repeats,
    )
    micro = {name: 1e6 * value / steps for name, value in seconds.items()}
    micro["one evaluation"] = 1e6 * seconds["one evaluation"]
    micro["one evaluation, per step at 1 in 1,000"] = 1e3 * seconds["one evaluation"]
    return micro


def markdown(record: dict) -> str:
    counts = [str(r) for r in record["replicas"]]
    lines = [
        f"| µs per step ({record['device']}) | "
        + " | ".join(f"R = {r}" for r in counts)
        + " |",
        "|---|" + "--:|" * len(counts),
    ]
    for name in record["profiles"][counts[0]]:
        cells = [f"{record['profiles'][r][name]:,.1f}" for r in counts]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--replicas", default="1,100", help="R values")
    options.add_argument("--steps", type=int, default=1000, help="steps a block")
    options.add_argument("--repeats", type=int, default=5, help="best of N blocks")
    options.add_argument("--out", default=str(RESULTS))
    args = options.parse_args(argv)
    from keras_nalu.sweeps.engines import device_name

    load_before = os.getloadavg()
    started = time.time()
    counts = [int(r) for r in args.replicas.split(",") if r]
    record = {
        "replicas": counts,
        "device": device_name(),
        "profiles": {str(r): profile(r, args.steps, args.repeats) for r in counts},
        "config": CONFIG,
        "steps": args.steps,
        "repeats": args.repeats,
        "machine": speed.machine(load_before),
        "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    text = markdown(record)
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    print(
        f"load average before/after: {load_before[0]:.1f}/"
        f"{record['machine']['load_average_after'][0]:.1f} on {os.cpu_count()} "
        f"CPUs; written to {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
