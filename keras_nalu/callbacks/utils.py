"""What the callbacks share: optimizer slots and the loss-stall test.

None of these is a callback; the callbacks of this package (and the replica
engines, `keras_nalu.sweeps`) call them.
"""

import keras
import numpy as np

#: Optimizer state per variable, by optimizer class: the attributes holding
#: one slot variable per trainable variable (Keras 3 optimizers).
_SLOT_ATTRIBUTES = (
    (keras.optimizers.Adam, ("_momentums", "_velocities", "_velocity_hats")),
    (keras.optimizers.SGD, ("momentums",)),
    (keras.optimizers.RMSprop, ("_velocities", "_momentums", "_average_gradients")),
)


def optimizer_slots(optimizer, variable) -> list:
    """The optimizer's per-variable state for `variable` (Adam m, v; ...).

    Handles Adam (and AdamW), SGD (its momentum) and RMSprop, also inside a
    `LossScaleOptimizer`; an unbuilt optimizer has none yet. Other optimizers
    raise a ValueError rather than be reset half-way.

    Example:

    >>> import keras
    >>> from keras_nalu.callbacks import optimizer_slots
    >>> variable = keras.Variable([1.0, 2.0], name="w")
    >>> adam = keras.optimizers.Adam()
    >>> adam.build([variable])
    >>> [slot.name for slot in optimizer_slots(adam, variable)]
    ['w_momentum', 'w_velocity']
    """
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    attributes = next(
        (names for cls, names in _SLOT_ATTRIBUTES if isinstance(optimizer, cls)),
        None,
    )
    if attributes is None:
        supported = ", ".join(cls.__name__ for cls, _ in _SLOT_ATTRIBUTES)
        raise ValueError(
            "Cannot reset the state of optimizer "
            f"{type(optimizer).__name__}; supported: {supported}."
        )
    if not optimizer.built:
        return []
    try:
        index = optimizer._get_variable_index(variable)
    except KeyError:
        return []  # not trained by this optimizer
    slots = []
    for attribute in attributes:
        per_variable = getattr(optimizer, attribute, None) or []
        if index < len(per_variable) and per_variable[index] is not None:
            slots.append(per_variable[index])
    return slots


def reset_optimizer_slots(optimizer, variables) -> None:
    """Sets the optimizer's state of `variables` to zero (see `optimizer_slots`)."""
    for variable in variables:
        for slot in optimizer_slots(optimizer, variable):
            # zeros_like(slot) fails on a JAX variable; zeros of its shape do not.
            slot.assign(keras.ops.zeros(slot.shape, dtype=slot.dtype))


def loss_stalled(losses, loss_threshold: float) -> bool:
    """The iNALU reinitialization test on a loss history.

    With the history split into a first and a second half, the loss stalls
    above the threshold if mean(first) <= mean(second) + std(second) and
    mean(second) > loss_threshold. A non-finite loss in the second half counts
    as stalled.

    Example:

    >>> from keras_nalu.callbacks import loss_stalled
    >>> loss_stalled([5.0, 4.9, 5.1, 5.0], loss_threshold=1.0)
    True
    >>> loss_stalled([9.0, 7.0, 5.0, 3.0], loss_threshold=1.0)
    False
    """
    losses = np.asarray(losses, dtype=np.float64)
    if losses.size < 2:
        return False
    first, second = losses[: losses.size // 2], losses[losses.size // 2 :]
    if not np.all(np.isfinite(second)):
        return True
    return bool(
        np.mean(first) <= np.mean(second) + np.std(second)
        and np.mean(second) > loss_threshold
    )
