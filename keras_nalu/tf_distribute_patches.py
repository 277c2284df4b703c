"""Patches to Keras' TensorFlow trainer that let `fit` run under `tf.distribute`.

Keras 3.15 (TensorFlow backend) has bugs that stop `model.fit` under a
multi-replica strategy whatever the model; keras_nalu's units are not
involved (a plain `keras.layers.Dense` fails the same way):

- `enable_multi_worker_fit`: under `MultiWorkerMirroredStrategy`, `fit`
  fails before the first step (the batch reduction in
  `_maybe_symbolic_build`) and then at every step's logs
  (tensorflow/tensorflow#72388).
- `enable_steps_per_execution`: under any strategy with more than one
  replica, `steps_per_execution > 1` fails with "You must feed a value for
  placeholder tensor" (keras-team/keras#19246).

Both only change how `fit`/`evaluate` build the model, loop over the steps
of an execution and report their logs. Neither changes how gradients are
reduced across replicas or applied: training gives the same weights as one
device on the same global batches (`tests/distribute`). Both leave Keras'
behaviour unchanged where it works (no multi-worker strategy, a single
replica, `steps_per_execution == 1`) and are safe to call more than once.
"""

import functools
import inspect

import keras

#: Marks what this module installed, so a second call changes nothing.
_PATCHED = "_keras_nalu_distribute_patch"


def _keras_trainer_module():
    """Keras' TensorFlow trainer module, checked for the private names we use."""
    try:
        from keras.src.backend.tensorflow import trainer
    except ImportError as error:  # pragma: no cover - depends on Keras' layout
        raise RuntimeError(
            "keras_nalu.tf_distribute_patches patches Keras' private module "
            "keras.src.backend.tensorflow.trainer, which this Keras "
            f"({keras.__version__}) does not have. Check whether Keras has "
            "fixed tensorflow/tensorflow#72388 and keras-team/keras#19246 "
            "before calling this function."
        ) from error
    reduce_per_replica = getattr(trainer, "reduce_per_replica", None)
    parameters = (
        list(inspect.signature(reduce_per_replica).parameters)
        if callable(reduce_per_replica)
        else None
    )
    if parameters != ["values", "strategy", "reduction"]:
        raise RuntimeError(
            "keras_nalu.tf_distribute_patches patches the private function "
            "keras.src.backend.tensorflow.trainer.reduce_per_replica(values, "
            f"strategy, reduction), which this Keras ({keras.__version__}) "
            "does not have (found: "
            f"{'nothing' if parameters is None else parameters}). Check whether "
            "Keras has fixed tensorflow/tensorflow#72388 before calling this "
            "function."
        )
    return trainer


def _uses_tensorflow() -> bool:
    return keras.backend.backend() == "tensorflow"


def _patch_reduce_per_replica(trainer) -> None:
    """Reduces each step's logs across workers as one device would report them.

    Keras reduces them with `strategy.reduce("MEAN", v, axis=0)` under a
    multi-worker strategy, invalid for the scalar losses and metrics
    (tensorflow/tensorflow#72388). The mean over replicas (`axis=None`) is
    what `reduce_per_replica` returns for every other strategy. Process-wide:
    the function is a global of Keras' module.
    """
    if getattr(trainer.reduce_per_replica, _PATCHED, False):
        return
    import tensorflow as tf

    original = trainer.reduce_per_replica

    @functools.wraps(original)
    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy
        ):
            return tf.nest.map_structure(
                lambda value: strategy.reduce("MEAN", value, axis=None), values
            )
        return original(values, strategy, reduction)

    setattr(reduce_per_replica, _PATCHED, True)
    trainer.reduce_per_replica = reduce_per_replica


def _patch_symbolic_build(model) -> None:
    """Builds `model` from one replica's share of the first batch.

    Before the first step, `fit`/`evaluate` (`_maybe_symbolic_build`) read
    one batch from the distributed dataset and `strategy.reduce("MEAN", ...,
    axis=None)` it to a plain batch, only to take its shapes and dtypes.
    `MultiWorkerMirroredStrategy` cannot reduce that (x, y) structure ("Attempt
    to convert a value (PerReplica...) to a Tensor"). This replacement, set
    on the model instance only, passes the first local replica's batch
    instead: same shapes, same dtypes, no cross-worker op.
    """
    original = getattr(model, "_maybe_symbolic_build", None)
    if getattr(original, _PATCHED, False):
        return
    parameters = list(inspect.signature(original).parameters) if original else None
    if parameters != ["iterator", "data_batch"]:
        raise RuntimeError(
            "keras_nalu.tf_distribute_patches.enable_multi_worker_fit replaces "
            "the private method Model._maybe_symbolic_build(iterator, "
            "data_batch), which "
            f"this Keras ({keras.__version__}) does not have (found: "
            f"{'nothing' if parameters is None else parameters})."
        )
    import tensorflow as tf

    def first_replica(value):
        if isinstance(value, tf.distribute.DistributedValues):
            return model.distribute_strategy.experimental_local_results(value)[0]
        return value

    def _maybe_symbolic_build(iterator=None, data_batch=None):
        if iterator is not None and data_batch is None:
            for _, _, batches in iterator:
                data_batch = tf.nest.map_structure(first_replica, next(batches))
                break
        return original(iterator=None, data_batch=data_batch)

    setattr(_maybe_symbolic_build, _PATCHED, True)
    # An instance attribute: other models, and the class, keep Keras' method.
    model._maybe_symbolic_build = _maybe_symbolic_build


def enable_multi_worker_fit(model):
    """Lets `model.fit` and `evaluate` run under `MultiWorkerMirroredStrategy`.

    With Keras 3.15, `fit` fails for every model under
    `tf.distribute.MultiWorkerMirroredStrategy`, for two reasons. This
    function patches both:

    1. Before the first step, `fit` and `evaluate` reduce one batch of the
       distributed dataset with `strategy.reduce("MEAN", batch, axis=None)`
       (in `Model._maybe_symbolic_build`), only to learn its shapes. A
       multi-worker strategy cannot reduce an (x, y) structure: "Attempt to
       convert a value (PerReplica...) with an unsupported type to a
       Tensor". Patch: `model._maybe_symbolic_build` (on this model instance
       only) builds from the first local replica's batch instead: same
       shapes and dtypes, no cross-worker op.
    2. Each step's scalar logs (loss, metrics) are reduced across workers
       with `strategy.reduce("MEAN", v, axis=0)`, invalid for a scalar
       (tensorflow/tensorflow#72388). Patch: the private function
       `keras.src.backend.tensorflow.trainer.reduce_per_replica` reduces them
       with `axis=None` under a multi-worker strategy: the mean over
       replicas, which is what one device, or `MirroredStrategy`, reports.
       This replacement is process-wide and only changes the "auto"/"mean"
       reductions under `MultiWorkerMirroredStrategy`; every other strategy
       and reduction goes to Keras' function unchanged.

    Neither touches how gradients are all-reduced or applied: the updates,
    hence the weights, are Keras' (on two workers they match one device's
    within 10⁻⁵ in `tests/distribute`). The model keeps the strategy it was
    built under, so `fit` may run inside or outside `strategy.scope()`.

    Call it once per model, after building it in the strategy's scope and
    before `fit`. Calling it again is a no-op. It is also a no-op (returns
    `model` untouched) when the model's strategy (`model.distribute_strategy`)
    is not a `MultiWorkerMirroredStrategy`, and on a backend other than
    TensorFlow.

    Args:
        model: a compiled Keras model, built inside a
            `MultiWorkerMirroredStrategy` scope.

    Returns:
        `model`, patched in place.

    Raises:
        RuntimeError: when Keras no longer has the private
            `keras.src.backend.tensorflow.trainer.reduce_per_replica(values,
            strategy, reduction)` or `Model._maybe_symbolic_build(iterator,
            data_batch)` this relies on. Check then whether the Keras in use
            has fixed the bugs above.

    Example:

    >>> import keras
    >>> from keras_nalu.tf_distribute_patches import enable_multi_worker_fit
    >>> from keras_nalu.presets import build_model
    >>> model, callbacks = build_model("nmu", input_size=4)
    >>> enable_multi_worker_fit(model) is model  # no strategy: a no-op
    True

    On each worker of a cluster (`TF_CONFIG` set), with `x`, `y` the same
    global data on every worker:

        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        with strategy.scope():
            model, callbacks = build_model("nmu", input_size=10)
        enable_multi_worker_fit(model)
        model.fit(x, y, batch_size=128, callbacks=callbacks)
    """
    if not _uses_tensorflow():
        return model
    import tensorflow as tf

    if not isinstance(
        model.distribute_strategy, tf.distribute.MultiWorkerMirroredStrategy
    ):
        return model
    trainer = _keras_trainer_module()
    _patch_symbolic_build(model)
    _patch_reduce_per_replica(trainer)
    return model


def _convert_optionals(data):
    """Keras' data contract: an empty `tf.experimental.Optional` means None."""
    import tensorflow as tf

    return tf.nest.map_structure(
        lambda item: None if isinstance(item, tf.experimental.Optional) else item,
        data,
    )


def _make_multi_step_function(model, step_function, trainer):
    """Keras' multi-step function without a `tf.cond` around the step.

    Keras 3.15 runs `steps_per_execution` steps in a `tf.while_loop` whose
    body wraps the replicated step (`strategy.run`) in a `tf.cond`; with more
    than one replica that graph fails (keras-team/keras#19246). Here the
    first batch of an execution is fetched eagerly (none left: StopIteration,
    as in Keras, before any op of a step runs), the first step runs
    unconditionally, and the loop's own condition stops after
    `steps_per_execution` steps or at the end of the data. The batches are
    fetched as Keras fetches them (never one beyond the execution), and the
    steps, their order and the returned logs (the last step's) are Keras'.
    """
    import tensorflow as tf

    steps = model.steps_per_execution

    def one_step(data):
        strategy = model.distribute_strategy
        outputs = strategy.run(step_function, args=(_convert_optionals(data),))
        # Looked up per trace: `enable_multi_worker_fit` may have replaced it.
        return trainer.reduce_per_replica(outputs, strategy, reduction="auto")

    # Like Keras: no AutoGraph (the loop is explicit), retraced on shape changes.
    one_step = tf.function(
        one_step,
        reduce_retracing=True,
        jit_compile=model.jit_compile,
        autograph=False,
    )

    @functools.partial(tf.function, reduce_retracing=True, autograph=False)
    def multi_step(iterator, first):
        outputs = one_step(first.get_value())
        following = iterator.get_next_as_optional()  # steps > 1

        def more(done, outputs, following):
            return tf.logical_and(done < steps, following.has_value())

        def step(done, outputs, following):
            outputs = one_step(following.get_value())
            following = tf.cond(
                done + 1 < steps,
                iterator.get_next_as_optional,
                lambda: following,
            )
            return done + 1, outputs, following

        _, outputs, _ = tf.while_loop(more, step, [tf.constant(1), outputs, following])
        return outputs

    def function(iterator):
        if isinstance(iterator, (tf.data.Iterator, tf.distribute.DistributedIterator)):
            # Fetched here, so that an exhausted iterator runs no op of a step.
            first = iterator.get_next_as_optional()
            if not first.has_value():
                raise StopIteration
            return multi_step(iterator, first)
        # train_on_batch / test_on_batch: a generator of one batch.
        for _, data in zip(range(steps), iterator):
            outputs = one_step(data)
        return outputs

    return function


def _needs_multi_step_workaround(model) -> bool:
    return (
        model.steps_per_execution > 1
        and not model.run_eagerly
        and model.distribute_strategy.num_replicas_in_sync > 1
    )


def enable_steps_per_execution(model):
    """Lets `fit` and `evaluate` run `steps_per_execution > 1` on several replicas.

    With Keras 3.15, a model compiled with `steps_per_execution > 1` fails
    under a `tf.distribute` strategy with more than one replica (e.g.
    `MirroredStrategy` on two devices) with "You must feed a value for
    placeholder tensor" (keras-team/keras#19246), whatever the model. The
    cause is the graph of Keras' multi-step function: a `tf.while_loop` whose
    body wraps the replicated step (`strategy.run`) in a `tf.cond`.

    This function replaces `model.make_train_function` and
    `model.make_test_function` (on this model instance only) by ones that
    build the same loop without that `tf.cond`: the first batch of an
    execution is fetched before the loop (none left ends the epoch, as in
    Keras), its step runs unconditionally, and the loop's own condition
    stops after `steps_per_execution` steps or at the end of the data. The
    steps, their order, the batches they read, the callbacks' view (one call
    per execution) and the logs are those of Keras' function, and so are the
    weights: on two replicas, and on two workers, with
    `steps_per_execution=5` they match one device's within 10⁻⁶ in
    `tests/distribute`. It does not change how gradients are reduced or
    applied. `model.unrolled_steps_per_execution` is ignored (one step per
    loop iteration); `predict` is not affected by the bug and keeps Keras'
    function.

    Keras' own functions are kept, and used, whenever the workaround is not
    needed: `steps_per_execution == 1`, `run_eagerly=True`, or a single
    replica (no strategy). The choice is made when `fit`/`evaluate` build
    their function, so the model may be recompiled freely. Calling this
    again is a no-op. Combine it with `enable_multi_worker_fit` under
    `MultiWorkerMirroredStrategy`.

    Args:
        model: a compiled Keras model, built inside the strategy's scope.

    Returns:
        `model`, patched in place.

    Raises:
        RuntimeError: when Keras no longer has the private
            `keras.src.backend.tensorflow.trainer.reduce_per_replica(values,
            strategy, reduction)` this calls for each step's logs.

    Example:

    >>> import numpy as np
    >>> from keras_nalu.tf_distribute_patches import enable_steps_per_execution
    >>> from keras_nalu.presets import build_model
    >>> model, callbacks = build_model("nmu", input_size=4, steps_per_execution=2)
    >>> enable_steps_per_execution(model) is model
    True
    >>> x = np.ones((8, 4), "float32")
    >>> history = model.fit(x, x[:, :1], batch_size=2, verbose=0)
    >>> int(model.optimizer.iterations)  # one device: Keras' own function
    4

    Under `MirroredStrategy` on two devices, the same lines with the model
    built in `strategy.scope()` run the 4 steps as 2 executions of 2.
    """
    if not _uses_tensorflow():
        return model
    trainer = _keras_trainer_module()
    for kind, step_name in (("train", "train_step"), ("test", "test_step")):
        make_name = f"make_{kind}_function"
        attribute = f"{kind}_function"
        keras_make = getattr(model, make_name)
        if getattr(keras_make, _PATCHED, False):
            continue

        def make_function(
            force=False,
            keras_make=keras_make,
            attribute=attribute,
            step_name=step_name,
        ):
            if getattr(model, attribute) is not None and not force:
                return getattr(model, attribute)
            if not _needs_multi_step_workaround(model):
                keras_make(force=force)
                return getattr(model, attribute)
            function = _make_multi_step_function(
                model, getattr(model, step_name), trainer
            )
            setattr(model, attribute, function)
            return function

        setattr(make_function, _PATCHED, True)
        setattr(model, make_name, make_function)
    return model
