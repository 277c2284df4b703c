"""steps_per_execution > 1 under `MirroredStrategy` over two logical CPUs.

Run in a fresh process (`python _multi_step_script.py OUT_DIR`; the logical
devices must be configured before TensorFlow initializes). Trains
`_worker.MULTI_STEP_CONFIG` (steps_per_execution = 5) in the strategy's scope
with `keras_nalu.tf_distribute_patches.enable_steps_per_execution`, then writes

- `multi_step.npz`: its `_worker.train` result, under `_worker.MULTI_STEP`;
- `multi_step.json`: the replica count and what `evaluate` on the validation
  set returns after training, with 5 steps per execution (the workaround's
  function) and with 1 (Keras' own), both on the two replicas.

`fit`'s callbacks run once per execution: the result's `strengths` has one
row per execution (6 for 30 steps).
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

from keras_nalu.tf_distribute_patches import enable_steps_per_execution  # noqa: E402

#: the validation batch size for `evaluate`: 256 samples, 4 batches.
EVALUATE_BATCH = 64


def main(out_dir: Path) -> None:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
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


if __name__ == "__main__":
    main(Path(sys.argv[1]))
