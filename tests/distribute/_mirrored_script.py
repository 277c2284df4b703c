"""Trains the recipe under `MirroredStrategy` over two logical CPUs.

Run in a fresh process (`python _mirrored_script.py OUT_DIR`): the two logical
devices must be configured before TensorFlow initializes its runtime. Writes

- `mirrored.npz`: every config's `train` result (see `_worker.train`), and
  as "sgd_outside" that of "sgd" with its regularizers created outside the
  scope;
- `model.keras` and `saved_models/mirrored/1`: the "sgd" model, exported;
- `predictions.npz`: test inputs and that model's predictions on them;
- `facts.json`: the replica count and what `fit` with steps_per_execution > 1
  did under the strategy, without the workaround;
- `multi_step.npz`: the `_worker.train` result of `_worker.MULTI_STEP_CONFIG`
  (steps_per_execution = 5) trained in the strategy's scope with
  `keras_nalu.tf_distribute_patches.enable_steps_per_execution`, under
  `_worker.MULTI_STEP`. `fit`'s callbacks run once per execution: its
  `strengths` has one row per execution (6 for 30 steps);
- `multi_step.json`: what `evaluate` on the validation set returns after that
  training, with 5 steps per execution (the workaround's function) and with 1
  (Keras' own), both on the two replicas.
"""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu,
    [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()],
)

import _worker  # noqa: E402
import numpy as np  # noqa: E402

from keras_nalu._files import save_keras_model  # noqa: E402
from keras_nalu.export import export_saved_model  # noqa: E402
from keras_nalu.tf_distribute_patches import enable_steps_per_execution  # noqa: E402

#: the validation batch size for `evaluate`: 256 samples, 4 batches.
EVALUATE_BATCH = 64


def multi_step_outcome(strategy) -> dict:
    """What `fit` does with steps_per_execution > 1 under the strategy."""
    model, callbacks = _worker.make_model(_worker.MULTI_STEP_CONFIG, strategy)
    try:
        result = _worker.train(model, callbacks)
    except Exception as error:  # noqa: BLE001 - reported to the test
        return {"error": f"{type(error).__name__}: {str(error)[-2000:]}"}
    return {"error": None, "weights": [w.tolist() for w in result["weights"]]}


def multi_step_with_the_workaround(strategy, out_dir: Path) -> None:
    """Trains and evaluates MULTI_STEP_CONFIG with `enable_steps_per_execution`."""
    model, callbacks = _worker.make_model(_worker.MULTI_STEP_CONFIG, strategy)
    enable_steps_per_execution(model)
    result = _worker.train(model, callbacks)
    _worker.save_result(out_dir / "multi_step.npz", {_worker.MULTI_STEP: result})
    x_val, y_val = _worker.arrays()["validation"]
    evaluations = {}
    for steps in (_worker.MULTI_STEP_CONFIG[2], 1):
        # Keras' own function evaluates one step per execution.
        model.steps_per_execution, model.test_function = steps, None
        evaluations[steps] = model.evaluate(
            x_val, y_val, batch_size=EVALUATE_BATCH, verbose=0, return_dict=True
        )
    facts = {"replicas": strategy.num_replicas_in_sync, "evaluate": evaluations}
    (out_dir / "multi_step.json").write_text(json.dumps(facts))


def main(out_dir: Path) -> None:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    results, models = {}, {}
    for config in _worker.CONFIGS:
        # The Keras pattern: build and compile in the scope, fit outside it.
        model, callbacks = _worker.make_model(config, strategy)
        results[config] = _worker.train(model, callbacks)
        models[config] = model
    model, callbacks = _worker.make_model(
        "sgd", strategy, regularizers_outside_scope=True
    )
    results["sgd_outside"] = _worker.train(model, callbacks)
    _worker.save_result(out_dir / "mirrored.npz", results)

    trained = models["sgd"]
    save_keras_model(trained, out_dir / "model.keras")
    export_saved_model(trained, out_dir / "saved_models", "mirrored", version=1)
    inputs = _worker.arrays()["test"][0][:16]
    np.savez(
        out_dir / "predictions.npz",
        inputs=inputs,
        outputs=np.asarray(trained(inputs, training=False)),
    )
    # Before Keras' own multi-step failure below, which this run must not see.
    multi_step_with_the_workaround(strategy, out_dir)
    facts = {
        "replicas": strategy.num_replicas_in_sync,
        "multi_step": multi_step_outcome(strategy),
    }
    (out_dir / "facts.json").write_text(json.dumps(facts))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
