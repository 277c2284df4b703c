"""The rules of a training step that every engine follows, on any array module.

After the optimizer's update, each weight's constraint is applied to each
replica on its own; a replica whose loss or updated weights are not finite
keeps its variables as they were before the step (`where`, never a product
with 0), stops training and is recorded as diverged at `step + 1`; the other
replicas never see it. The engines call `step_rules` with their backend's
array functions, as `ReplicaOptimizer.clip` takes them.
"""

from __future__ import annotations


def step_rules(
    ops, constraints, losses, updated, before, per_replica, active, diverged, step
):
    """The variables, active replicas and divergence steps after one step.

    Args:
        ops: the backend's array functions: `isfinite`, `all(values, axis)`,
            `where`, `reshape` and `map_replicas(function, values)` (a
            function of one replica over the leading axis: `jax.vmap`,
            `tf.vectorized_map`).
        constraints: each trainable weight's constraint, or None; the
            weights are the first `len(constraints)` of `updated`.
        losses: each replica's loss at the step, `[R]`.
        updated: every variable the step changes, as the optimizer left it.
        before: the same variables before the step.
        per_replica: for each variable, whether it holds one slice per
            replica (a shared one, such as the optimizer's step count, is
            taken as updated).
        active: `[R]` bool, the replicas training at this step.
        diverged: `[R]` int, the step each replica diverged at, or -1.
        step: the step's index.

    Returns:
        `(variables, active, diverged)` after the step.
    """
    weights = [
        values if constraint is None else ops.map_replicas(constraint, values)
        for constraint, values in zip(constraints, updated)
    ]
    variables = weights + list(updated[len(weights) :])
    finite = ops.isfinite(losses)
    for values in weights:
        axes = tuple(range(1, len(values.shape)))
        finite = finite & ops.all(ops.isfinite(values), axis=axes)
    keep = active & finite

    def kept(new, old):
        mask = ops.reshape(keep, [-1] + [1] * (len(new.shape) - 1))
        return ops.where(mask, new, old)

    variables = [
        kept(new, old) if own else new
        for new, old, own in zip(variables, before, per_replica)
    ]
    return variables, keep, ops.where(active & ~finite, step + 1, diverged)
