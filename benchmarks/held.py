"""Does training hold a solution? An exact NMU solution, trained on.

Madsen & Johansen's (2020) arithmetic task on × (100 inputs, subsets of 25
with overlap ½, U[1, 2] → U[2, 6]): every replica starts from an exact
solution of its own task, the NAU's first two units summing the two subsets
and the NMU multiplying them (every other weight 0), and trains on with the
paper's recipe. Evaluated every 1,000 steps, as the papers do. The table
counts the evaluations whose extrapolation MSE is at or above the success
threshold: how often a solved run reads "not solved" at one evaluation (e.g.
at its final step), with the sparsity regularizer at its full strength
(the state of a run late in training) or without it, and with Keras' Adam ε
(10⁻⁷) or the reference code's (10⁻⁸).

    KERAS_BACKEND=jax python benchmarks/held.py                 # λ at full, ε 1e-7
    KERAS_BACKEND=jax python benchmarks/held.py --epsilon 1e-8
    KERAS_BACKEND=jax python benchmarks/held.py --no-regularizer
"""

from __future__ import annotations

import argparse

import numpy as np

from keras_nalu.evaluation.statistics import success_rate_interval
from keras_nalu.experiments import ExperimentConfig
from keras_nalu.sweeps.grid import parse_seeds
from keras_nalu.sweeps.replicas import ReplicaRun


def exact_solution(run: ReplicaRun, r: int) -> list[np.ndarray]:
    """NAU unit 0 sums subset a, unit 1 subset b; the NMU multiplies them."""
    nau, nmu = (np.zeros(w.shape, np.float32) for w in run.weights(r))
    (a_start, a_end), (b_start, b_end) = run.tasks[r].subsets
    nau[a_start:a_end, 0] = 1.0
    nau[b_start:b_end, 1] = 1.0
    nmu[:2, 0] = 1.0
    return [nau, nmu]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden-size", type=int, default=4)
    parser.add_argument("--seeds", default="0-7")
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--epsilon", type=float, help="Adam's ε; default Keras'")
    parser.add_argument(
        "--no-regularizer",
        action="store_true",
        help="λ = 0 (by default λ is at its full strength from the first step)",
    )
    args = parser.parse_args(argv)
    start = 10 * args.steps if args.no_regularizer else 0  # a ramp never reached
    config = ExperimentConfig(
        model="nmu",
        operation="mul",
        hidden_size=args.hidden_size,
        iterations=args.steps,
        eval_every=1_000,
        sparsity_start=start,
        sparsity_end=start + 1,
        epsilon=args.epsilon,
    )
    run = ReplicaRun(config, parse_seeds(args.seeds))
    for r in range(run.num_replicas):
        run.set_weights(r, exact_solution(run, r))
    run.train()
    print(
        f"\nNMU, hidden size {args.hidden_size}, exact start, {args.steps} steps, "
        f"λ {'0' if args.no_regularizer else 'at full strength'}, "
        f"Adam ε {args.epsilon or 'Keras default'}, engine {run.engine}\n"
    )
    print("| seed | evaluations above the threshold | largest extrapolation MSE |")
    print("|--:|--:|--:|")
    out = total = 0
    for record in run.results():
        extrapolation = np.array([h[2] for h in record["history"]])
        above = int(np.sum(~(extrapolation < record["threshold"])))
        out, total = out + above, total + len(extrapolation)
        seed, largest = record["config"]["seed"], extrapolation.max()
        print(f"| {seed} | {above} of {len(extrapolation)} | {largest:.3g} |")
    rate, low, high = success_rate_interval(out, total)
    print(
        f"\nAll seeds: {out} of {total} evaluations above the threshold, "
        f"{rate:.0%} [{low:.0%}, {high:.0%}]"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
