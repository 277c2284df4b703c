"""`enable_multi_worker_fit` under a real one-worker MultiWorkerMirroredStrategy.

Run in a fresh process (`python _multi_worker_fit_script.py OUT_DIR`):
TensorFlow once crashed (SIGSEGV) in the test process itself while deleting
a MultiWorkerMirroredStrategy iterator under load, taking the xdist worker
with it. Here a crash fails only the tests that read this script's facts.

Writes `OUT_DIR/multi_worker_fit.json`:

- `patches`: what `enable_multi_worker_fit` changed on the first call, kept on
  the second, and did for a second model;
- `fit`: weights, iterations and loss history of a patched model fitted
  outside the scope, and of the same model on one device;
- `broken`: for each way Keras' private `reduce_per_replica` can go
  ("missing", "signature") and each helper, the `RuntimeError` message (or
  None) and whether the model was left unpatched.

The process ends with `os._exit` once the file is written, so TensorFlow's
teardown of the strategy cannot turn a finished run into a crash.
"""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
from _dense import data, dense_model, fit  # noqa: E402
from keras.src.backend.tensorflow import trainer  # noqa: E402

from keras_nalu.tf_distribute_patches import (  # noqa: E402
    enable_multi_worker_fit,
    enable_steps_per_execution,
)


def patches(strategy) -> dict:
    model = dense_model(strategy=strategy)
    keras_reduce = trainer.reduce_per_replica
    enable_multi_worker_fit(model)
    build, reduce = vars(model)["_maybe_symbolic_build"], trainer.reduce_per_replica
    again = enable_multi_worker_fit(model)
    other = enable_multi_worker_fit(dense_model(strategy=strategy))
    return {
        "reduction_patched": reduce is not keras_reduce,
        "second_call_returns_the_model": again is model,
        "second_call_keeps_the_build_patch": (
            vars(model)["_maybe_symbolic_build"] is build
        ),
        "second_call_keeps_the_reduction": trainer.reduce_per_replica is reduce,
        "other_model_has_its_own_build_patch": (
            vars(other)["_maybe_symbolic_build"] is not build
        ),
        "other_model_shares_the_reduction": trainer.reduce_per_replica is reduce,
        "strategy_kept": model.distribute_strategy is strategy,
    }, model


def fitted(model) -> dict:
    weights, iterations, history = fit(model, validation_data=data(64))
    want, want_iterations, want_history = fit(dense_model())
    return {
        "iterations": iterations,
        "want_iterations": want_iterations,
        "weights": [w.tolist() for w in weights],
        "want_weights": [w.tolist() for w in want],
        "loss": history["loss"],
        "want_loss": want_history["loss"],
        "history_keys": sorted(history),
    }


def broken(strategy) -> dict:
    keras_reduce = trainer.reduce_per_replica
    outcomes = {}
    for how in ("missing", "signature"):
        for enable in (enable_multi_worker_fit, enable_steps_per_execution):
            if how == "missing":
                del trainer.reduce_per_replica
            else:
                trainer.reduce_per_replica = lambda values, strategy: values
            model = dense_model(strategy=strategy)
            try:
                enable(model)
                message = None
            except RuntimeError as error:
                message = str(error)
            finally:
                trainer.reduce_per_replica = keras_reduce
            outcomes[f"{how}/{enable.__name__}"] = {
                "error": message,
                "unpatched": "_maybe_symbolic_build" not in vars(model),
            }
    return outcomes


def main(out_dir: Path) -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    keras_reduce = trainer.reduce_per_replica
    facts, model = patches(strategy)
    result = {"patches": facts, "fit": fitted(model)}
    trainer.reduce_per_replica = keras_reduce
    result["broken"] = broken(strategy)
    path = out_dir / "multi_worker_fit.json"
    path.write_text(json.dumps(result))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
