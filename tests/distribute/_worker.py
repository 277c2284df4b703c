"""The distributed tests' shared recipe, and one worker of a multi-worker run.

Imported, it holds the fixed data, the initial weights, `make_model` and
`train`, shared by the single-device reference, the `MirroredStrategy` script
and the workers, so all of them train the same model on the same global
batches.

Run as a script (`python _worker.py OUT_DIR`), it is one worker of a
`MultiWorkerMirroredStrategy` cluster described by `TF_CONFIG` (set by the
test): it builds the model in the strategy's scope, applies
`keras_nalu.tf_distribute_patches.enable_multi_worker_fit`, trains every config (and
MULTI_STEP_CONFIG with `enable_steps_per_execution` as well) and writes what
it ended with to `OUT_DIR/worker_<task index>.npz`.
"""

import contextlib
import functools
import json
import os
import sys

import numpy as np

#: processes of the multi-worker cluster.
WORKERS = 2
INPUT_SIZE = 10
HIDDEN_SIZE = 2
GLOBAL_BATCH = 64
STEPS = 30
EVAL_EVERY = 10
#: λ = 1, switched on at step 5, at full strength from step 15.
SCHEDULE = {"sparsity": 1.0, "start": 5, "end": 15}
#: name -> (optimizer, learning rate, steps_per_execution). SGD makes the
#: comparison sensitive to the loss scale (Adam would hide a constant factor).
CONFIGS = {"sgd": ("sgd", 0.01, 1), "adam": ("adam", 0.01, 1)}
#: steps_per_execution > 1 under a strategy: Keras alone fails (see
#: `test_mirrored.py`), `keras_nalu.tf_distribute_patches.enable_steps_per_execution`
#: makes it work (see `test_distribute_helpers.py`).
MULTI_STEP_CONFIG = ("adam", 0.01, 5)
#: the name under which the workers save their MULTI_STEP_CONFIG run.
MULTI_STEP = "adam_multi_step"


def target(x):
    """t = (x0 + x1) · (x2 + x3): a NAU → NMU problem."""
    return (x[:, 0:2].sum(1) * x[:, 2:4].sum(1))[:, None]


def arrays() -> dict:
    """Fixed training, validation (interpolation) and test (extrapolation) sets."""
    rng = np.random.default_rng(9)
    x = rng.uniform(0.0, 1.0, (STEPS * GLOBAL_BATCH, INPUT_SIZE)).astype("float32")
    x_val = rng.uniform(0.0, 1.0, (256, INPUT_SIZE)).astype("float32")
    x_test = rng.uniform(1.0, 3.0, (256, INPUT_SIZE)).astype("float32")
    return {
        "train": (x, target(x)),
        "validation": (x_val, target(x_val)),
        "test": (x_test, target(x_test)),
    }


def initial_weights() -> list[np.ndarray]:
    rng = np.random.default_rng(90)
    return [
        rng.uniform(-0.5, 0.5, (INPUT_SIZE, HIDDEN_SIZE)).astype("float32"),
        rng.uniform(0.25, 0.75, (HIDDEN_SIZE, 1)).astype("float32"),
    ]


def make_model(config, strategy=None, regularizers_outside_scope=False):
    """The "nmu" preset (NAU → NMU), built and compiled in `strategy`'s scope.

    `config` is a name in `CONFIGS` or an (optimizer, rate, steps) tuple. With
    `regularizers_outside_scope`, the same model is a `keras.Sequential` whose
    sparsity regularizers (and so their strength variables) are created
    before entering the scope.
    """
    import keras

    from keras_nalu.callbacks import RegularizationSchedule
    from keras_nalu.layers import NAU, NMU
    from keras_nalu.presets import build_model
    from keras_nalu.regularizers import Sparsity

    optimizer, learning_rate, steps_per_execution = (
        CONFIGS[config] if isinstance(config, str) else config
    )
    schedule = (SCHEDULE["sparsity"], SCHEDULE["start"], SCHEDULE["end"])
    if regularizers_outside_scope:
        signed = Sparsity(*schedule, domain="signed")
        unsigned = Sparsity(*schedule, domain="unsigned")
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        if regularizers_outside_scope:
            model = keras.Sequential(
                [
                    keras.Input((INPUT_SIZE,)),
                    NAU(HIDDEN_SIZE, kernel_regularizer=signed),
                    NMU(1, kernel_regularizer=unsigned),
                ]
            )
            model.compile(
                keras.optimizers.get(
                    {
                        "class_name": optimizer,
                        "config": {"learning_rate": learning_rate},
                    }
                ),
                "mse",
                steps_per_execution=steps_per_execution,
            )
            callbacks = [RegularizationSchedule()]
        else:
            model, callbacks = build_model(
                "nmu",
                input_size=INPUT_SIZE,
                hidden_size=HIDDEN_SIZE,
                optimizer=optimizer,
                learning_rate=learning_rate,
                steps_per_execution=steps_per_execution,
                **SCHEDULE,
            )
        model.set_weights(initial_weights())
    return model, callbacks


def train(model, callbacks, scheduled=True, fit_scope=None) -> dict:
    """Fits the 30 fixed global batches with the schedule and success callback.

    Returns the final weights, the `SuccessCriterion` evaluations as rows
    (step, interpolation MSE, extrapolation MSE), `strengths[i][r][k]`: the
    strength of regularizer r on replica k when execution i began, and the
    strength variables' classes. `scheduled=False` drops the
    `RegularizationSchedule` (the strength then stays 0); `fit_scope` is a
    strategy whose scope `fit` runs in.
    """
    import keras

    from keras_nalu.callbacks import RegularizationSchedule
    from keras_nalu.evaluation import SuccessCriterion
    from keras_nalu.regularizers import find_scheduled_regularizers

    data = arrays()
    regularizers = find_scheduled_regularizers(model)
    strengths = []
    scope = fit_scope.scope() if fit_scope is not None else contextlib.nullcontext()

    class RecordStrengths(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            local_results = self.model.distribute_strategy.experimental_local_results
            strengths.append(
                [
                    [float(v) for v in local_results(r.current_strength.value)]
                    for r in regularizers
                ]
            )

    judge = SuccessCriterion(
        data["validation"], data["test"], threshold=1e-3, eval_every=EVAL_EVERY
    )
    if not scheduled:
        callbacks = [c for c in callbacks if not isinstance(c, RegularizationSchedule)]
    with scope:
        model.fit(
            *data["train"],
            batch_size=GLOBAL_BATCH,
            epochs=1,
            shuffle=False,
            verbose=0,
            callbacks=[*callbacks, RecordStrengths(), judge],
        )
    return {
        "weights": [np.asarray(w) for w in model.get_weights()],
        "evaluations": np.array(
            [
                (e.step, e.interpolation_mse, e.extrapolation_mse)
                for e in judge.evaluations
            ]
        ),
        "strengths": np.array(strengths),
        "strength_types": [
            type(r.current_strength.value).__name__ for r in regularizers
        ],
        "iterations": int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
    }


@functools.cache
def reference(config, scheduled=True, regularizers_outside_scope=False) -> dict:
    """The single-device run of `config` (cached per process)."""
    model, callbacks = make_model(
        config, regularizers_outside_scope=regularizers_outside_scope
    )
    return train(model, callbacks, scheduled=scheduled)


def save_result(path, results: dict) -> None:
    """Writes `{config: train(...) result}` as one .npz file."""
    flat = {}
    for config, result in results.items():
        for i, weight in enumerate(result["weights"]):
            flat[f"{config}/weights/{i}"] = weight
        for key in ("evaluations", "strengths", "iterations", "strength_types"):
            flat[f"{config}/{key}"] = np.asarray(result[key])
    np.savez(path, **flat)


def load_result(path) -> dict:
    """Reads what `save_result` wrote back into `{config: result}`."""
    results = {}
    with np.load(path) as stored:
        for key in stored.files:
            config, field, *index = key.split("/")
            result = results.setdefault(config, {"weights": {}})
            if field == "weights":
                result["weights"][int(index[0])] = stored[key]
            else:
                result[field] = stored[key]
    for result in results.values():
        result["weights"] = [result["weights"][i] for i in sorted(result["weights"])]
        result["strength_types"] = result["strength_types"].tolist()
    return results


def main(out_dir: str) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    # First: the strategy has to configure TF's runtime before any op runs.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    from keras_nalu.tf_distribute_patches import (
        enable_multi_worker_fit,
        enable_steps_per_execution,
    )

    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    results = {}
    for config in CONFIGS:
        model, callbacks = make_model(config, strategy)
        enable_multi_worker_fit(model)
        # The model keeps its strategy: `fit` outside the scope all-reduces.
        assert model.distribute_strategy.num_replicas_in_sync == WORKERS
        results[config] = train(model, callbacks)
    # steps_per_execution > 1 needs the second workaround too (and `fit` may
    # run inside the scope as well).
    model, callbacks = make_model(MULTI_STEP_CONFIG, strategy)
    enable_steps_per_execution(enable_multi_worker_fit(model))
    results[MULTI_STEP] = train(model, callbacks, fit_scope=strategy)
    save_result(os.path.join(out_dir, f"worker_{index}.npz"), results)


if __name__ == "__main__":
    main(sys.argv[1])
    # TF's gRPC server has no clean shutdown: exiting normally waits ~10 s.
    sys.stdout.flush()
    os._exit(0)
