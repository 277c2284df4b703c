"""The rules of a training step that every engine follows, in `keras.ops`."""

from __future__ import annotations

from keras import ops


def step_rules(
    constraints, losses, updated, before, per_replica, active, diverged, step
):
    """The variables, active replicas and divergence steps after one step
    (the rules: docs/architecture.md, `step.py`).

    `updated` holds every variable the step changes as the optimizer left
    it, the weights first (one per constraint, None for none), and `before`
    the same before the step; a variable not `per_replica` (the optimizer's
    step count) is taken as updated. `losses`, `active` (bool) and
    `diverged` (the step each replica diverged at, or -1) are `[R]`.
    """
    weights = [
        values if constraint is None else ops.vectorized_map(constraint, values)
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
