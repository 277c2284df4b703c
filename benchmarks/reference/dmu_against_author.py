"""The DMU held against its author's code in float64: outputs and gradients.

    git --git-dir=NALM.git archive 9350f32 stable_nalu | tar -x -C /tmp/dmu
    KERAS_BACKEND=tensorflow python benchmarks/reference/dmu_against_author.py /tmp/dmu

NALM.git is the git folder of `marict/nalm-benchmark`, Curry's fork of the
NALM benchmark. The argument is a checkout of it at commit 9350f32
(2025-09-01, the last commit before the paper of 2025-09-09), or any folder
holding its `stable_nalu/layer/dag.py`.
Nothing of it is copied here: the script imports that file, with stubs for
the modules it imports but the DMU does not use (`debug_utils.tap`, the
`ExtendedTorchModule` base and its summary writer).

The author's `DAGLayer` is built as the paper's table script runs it
(`scripts/comprehensive_table_test.py`: one step, `--freeze-O`, the output
selector off since the depth is 1, the input LayerNorm on) for each
initialization, DMU_add (`op="add"`, operands (1, 1)) and DMU_sub
(`op="sub"`, operands (1, -1)), with random gate weights; the same weights
go into `keras_nalu.layers.DMU` in float64. Compared, on inputs of every
sign and of magnitudes from 10⁻³ to 10³ (and exact zeros):

- the output in training mode (`model.train()` / `training=True`: the soft
  gate and the training limits) and at evaluation (`model.eval()` /
  `training=False`: the one-hot gate, the wider limits);
- the gradient of a weighted sum of the training outputs with respect to
  the gate's weights (the LayerNorm's scale and offset, W and b).

Prints the largest relative difference of each, writes them to `--out`
(`benchmarks/results/dmu-against-author.json`, which the docs quote), and
exits 1 if one exceeds 10⁻¹² (outputs) or 10⁻¹⁰ (gradients).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import types
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "results" / "dmu-against-author.json"
OUTPUT_TOLERANCE = 1e-12
GRADIENT_TOLERANCE = 1e-10


def load_author_layer(checkout: Path):
    """`DAGLayer` from the checkout's `stable_nalu/layer/dag.py`, with stubs."""
    import torch

    debug_utils = types.ModuleType("debug_utils")
    debug_utils.tap = lambda tensor, *args, **kwargs: tensor
    abstract = types.ModuleType("stable_nalu.abstract")

    class ExtendedTorchModule(torch.nn.Module):
        def __init__(self, default_name, *args, **kwargs):
            super().__init__()

    abstract.ExtendedTorchModule = ExtendedTorchModule
    packages = {}
    for name in ("stable_nalu", "stable_nalu.layer"):
        package = types.ModuleType(name)
        package.__path__ = [str(checkout / name.replace(".", "/"))]
        packages[name] = package
    sys.modules.update(
        {"debug_utils": debug_utils, "stable_nalu.abstract": abstract, **packages}
    )
    path = checkout / "stable_nalu" / "layer" / "dag.py"
    spec = importlib.util.spec_from_file_location("stable_nalu.layer.dag", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.DAGLayer


def inputs(rng: np.random.Generator) -> np.ndarray:
    """Pairs of every sign, magnitudes 10⁻³ … 10³, a few exact zeros."""
    magnitude = 10.0 ** rng.uniform(-3.0, 3.0, (256, 2))
    sign = rng.choice([-1.0, 1.0], (256, 2))
    x = magnitude * sign
    x[:4] = [[0.0, 2.0], [3.0, 0.0], [-1.5, 1.5], [2.0, 2.0]]
    return x


def relative(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def compare(dag_class, initialization: str, seed: int) -> dict[str, float]:
    import keras
    import tensorflow as tf
    import torch

    from keras_nalu.layers import DMU

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    author = dag_class(
        in_features=2,
        out_features=1,
        dag_depth=1,
        op=initialization,
        freeze_O=True,
        no_selector=True,
        _enable_taps=False,
    ).double()
    with torch.no_grad():
        for parameter in (*author.input_norm.parameters(), *author.G_head.parameters()):
            parameter.copy_(torch.from_numpy(rng.normal(0.0, 1.0, parameter.shape)))
    ours = DMU(1, initialization=initialization, dtype="float64")
    ours.build((None, 2))
    ours.norm_scale.assign(author.input_norm.weight.detach().numpy())
    ours.norm_offset.assign(author.input_norm.bias.detach().numpy())
    ours.gate_kernel.assign(author.G_head.weight.detach().numpy().T)
    ours.gate_bias.assign(author.G_head.bias.detach().numpy())

    x = inputs(rng)
    weights = rng.normal(0.0, 1.0, (len(x), 1))
    differences = {}
    for mode, training in (("training", True), ("evaluation", False)):
        author.train(training)
        expected = author(torch.from_numpy(x)).detach().numpy()
        got = keras.ops.convert_to_numpy(ours(x, training=training))
        differences[f"output, {mode}"] = relative(got, expected)

    author.train(True)
    author.zero_grad()
    (author(torch.from_numpy(x)) * torch.from_numpy(weights)).sum().backward()
    expected = [
        author.input_norm.weight.grad.numpy(),
        author.input_norm.bias.grad.numpy(),
        author.G_head.weight.grad.numpy().T,
        author.G_head.bias.grad.numpy(),
    ]
    variables = [ours.norm_scale, ours.norm_offset, ours.gate_kernel, ours.gate_bias]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(ours(x, training=True) * weights)
    got = tape.gradient(loss, [v.value for v in variables])
    differences["gradient, training"] = max(
        relative(g, e) for g, e in zip(got, expected)
    )
    return differences


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="the author's code at 9350f32")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT, help="the JSON written")
    args = parser.parse_args(argv)
    import keras

    if keras.backend.backend() != "tensorflow":
        raise SystemExit("run with KERAS_BACKEND=tensorflow (its float64 gradients)")
    dag_class = load_author_layer(args.checkout.resolve())
    worst: dict[str, float] = {}
    for initialization in ("add", "sub"):
        for seed in range(args.seeds):
            for key, value in compare(dag_class, initialization, seed).items():
                name = f"DMU_{initialization}: {key}"
                worst[name] = max(worst.get(name, 0.0), value)
    failed = False
    for name, value in worst.items():
        limit = GRADIENT_TOLERANCE if "gradient" in name else OUTPUT_TOLERANCE
        failed |= value > limit
        print(f"{name:<36} largest relative difference {value:.2e} (limit {limit:g})")
    print("FAILED" if failed else "the same to float64 rounding")
    record = {"seeds": args.seeds, "largest_relative_difference": worst}
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
