"""Training trajectories of Madsen & Johansen's own code, for the engine's tests.

Runs `experiments/simple_function_static.py` of the public stable-nalu
repository (Madsen & Johansen 2020, the NAU → NMU network on ×), imported
from a checkout given on the command line, nothing of it copied, in PyTorch
on the CPU, and writes, per case, what `tests/sweeps/test_reference.py`
needs to replay the run with the JAX engine:

- the initial weights, the data seeds and the subsets the reference drew;
- after every step: the loss (the MSE), λ, λ·R (R the sparsity penalty
  summed over the layers), a hash of the step's batch (`batch_hash`) and
  of each weight one projection (`projection`), so that every step is
  checked;
- every `--every` steps, the weights themselves;
- the reference's evaluations (interpolation and extrapolation MSE on its
  validation and test sets) at the steps it makes them and after the last
  step.

The reference's script runs unchanged, in float64: PyTorch's default dtype
is set to float64 before it builds its model, and its data loaders' float32
batches are handed to it as float64 (the float32 values, exactly). Around
it, this script only observes and seeds: it stubs the imports the reference
makes but does not use here (tensorboardX, torchvision, TensorFlow),
records at the network's `optimize` call (made after every optimizer step),
reads the loop's variables there (`loss_train_criterion`, `r_w_scale`, …),
and, for the case started near a solution, sets the initial weights.

Adam: by default as the paper's runs had it, PyTorch ≤ 1.2 (Aug.–Sep.
2019), which adds ε to √v before the bias correction, as Kingma & Ba (2015)
write it at the end of their §2 and as Keras does (`PaperEraAdam`, written
here from that formula). `--adam installed` keeps the installed PyTorch's
own Adam (ε after the bias correction, PyTorch ≥ 1.3) for the cases that
name it. Each file records which.

    python benchmarks/reference/trajectories.py --reference /path/to/stable-nalu
    python benchmarks/reference/trajectories.py --reference PATH --cases h4-s0

Output: `benchmarks/results/reference/<case>.npz` (compressed) and
`cases.json` (every case's settings, the reference's commit, the PyTorch
and NumPy versions).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import importlib.machinery
import inspect
import io
import json
import math
import os
import runpy
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "results" / "reference"
SCRIPT = Path("experiments") / "simple_function_static.py"
PROJECTION_SEED = 20200101
"""Seed of the projections: `projection_matrix(shape)` for every weight."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One run of the reference's script.

    Attributes:
        name: the file's name.
        hidden_size: the NAU's units (`--hidden-size`).
        seed: the reference's `--seed` (PyTorch's weights, NumPy's data).
        ramp: `(--regualizer-scaling-start, --regualizer-scaling-end)`.
        near: start from an exact solution moved into the box by this much
            (0: the reference's own initialization).
        adam: "paper" (`PaperEraAdam`) or "installed" (PyTorch's own).
    """

    name: str
    hidden_size: int
    seed: int
    ramp: tuple[int, int] = (200, 700)
    near: float = 0.0
    adam: str = "paper"


CASES = (
    *(Case(f"h{h}-s{s}", h, s) for h in (2, 4, 10) for s in (0, 1, 2)),
    Case("h4-near", 4, 3, ramp=(0, 100), near=0.005),
    Case("h4-s0-installed-adam", 4, 0, adam="installed"),
)


def projection_matrix(shape) -> np.ndarray:
    """The fixed weights each weight is projected on: U[-1, 1] of its shape.

    A weight W (in Keras' orientation, `[inputs, units]`) is recorded at
    every step as `sum(W * projection_matrix(W.shape))`.
    """
    return np.random.RandomState(PROJECTION_SEED).uniform(-1.0, 1.0, size=shape)


def batch_hash(x: np.ndarray, t: np.ndarray) -> int:
    """The first 8 bytes of SHA-256 of a float32 batch's bytes, as an integer."""
    digest = hashlib.sha256()
    for values in (x, t):
        digest.update(np.ascontiguousarray(values, np.float32).tobytes())
    return int.from_bytes(digest.digest()[:8], "little", signed=True)


# --- PyTorch --------------------------------------------------------------------


def paper_era_adam(torch):
    """Adam with ε added to √v before the bias correction (PyTorch ≤ 1.2)."""

    class PaperEraAdam(torch.optim.Optimizer):
        """θ ← θ − α·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m / (√v + ε), Kingma & Ba (2015), §2."""

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
            super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                beta_1, beta_2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["t"] = 0
                        state["m"] = torch.zeros_like(p)
                        state["v"] = torch.zeros_like(p)
                    state["t"] += 1
                    t, m, v = state["t"], state["m"], state["v"]
                    m.mul_(beta_1).add_(p.grad, alpha=1 - beta_1)
                    v.mul_(beta_2).addcmul_(p.grad, p.grad, value=1 - beta_2)
                    alpha = group["lr"] * math.sqrt(1 - beta_2**t) / (1 - beta_1**t)
                    p.addcdiv_(m, v.sqrt().add_(group["eps"]), value=-alpha)

    return PaperEraAdam


class SummaryWriter:
    """tensorboardX's `SummaryWriter`, writing nothing."""

    __module__ = "tensorboardX"  # where the pickled model finds it

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _nothing


def _nothing(*args, **kwargs):
    return None


def stub_unused_imports() -> None:
    """Empty modules for what the reference imports and does not use here."""

    stubs = {
        "tensorboardX": {"SummaryWriter": SummaryWriter},
        "torchvision": {},
        "tensorflow": {},
    }
    for name, attributes in stubs.items():
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        module.__dict__.update(attributes)
        sys.modules[name] = module


class Recorder:
    """Observes one run of the reference's script; `arrays()` is the file."""

    def __init__(self, case: Case, steps: int, every: int):
        self.case, self.steps, self.every = case, steps, every
        self.rows = {k: [] for k in ("loss", "lam", "penalty", "projection")}
        self.batch_hashes, self.set_hashes = [], []
        self.snapshots, self.snapshot_steps = [], []
        self.evaluations = []
        self.initial = None
        self.subsets = None
        self.loaders = 0

    @staticmethod
    def weights(model) -> list[np.ndarray]:
        """The network's weights in Keras' orientation, `[inputs, units]`."""
        return [
            layer.layer.W.detach().numpy().T.copy()
            for layer in (model.layer_1, model.layer_2)
        ]

    def on_reset(self, model, loop) -> None:
        """After `reset_parameters`: the start (set near a solution if asked)."""
        dataset = loop.get("dataset")
        if dataset is None:  # the call inside the network's constructor
            return
        self.subsets = [list(r) for r in dataset.subset_ranges]
        if self.case.near:
            self.set_near_solution(model)
        self.initial = self.weights(model)

    def set_near_solution(self, model) -> None:
        """NAU units 0, 1 sum the subsets, the NMU multiplies them; moved in."""
        import torch

        nau = np.zeros(tuple(model.layer_1.layer.W.shape))
        for unit, (start, end) in enumerate(self.subsets):
            nau[unit, start:end] = 1.0
        nmu = np.zeros(tuple(model.layer_2.layer.W.shape))
        nmu[0, : len(self.subsets)] = 1.0
        noise = np.random.RandomState(self.case.seed)
        with torch.no_grad():
            for layer, exact in ((model.layer_1, nau), (model.layer_2, nmu)):
                moved = noise.uniform(0.0, self.case.near, exact.shape)
                # Into the box: a 1 comes down, a 0 goes up (or, for the
                # NAU's signed weights, either way).
                signs = np.where(exact == 1.0, -1.0, 1.0)
                if layer is model.layer_1:
                    signs = np.where(exact == 1.0, -1.0, noise.choice([-1.0, 1.0]))
                layer.layer.W.copy_(torch.from_numpy(exact + signs * moved))

    def on_step(self, model, loop) -> None:
        """After the optimizer step and the clamps of step `epoch_i`."""
        step = loop["epoch_i"]
        weights = self.weights(model)
        self.rows["loss"].append(float(loop["loss_train_criterion"]))
        self.rows["lam"].append(loop["args"].regualizer * loop["r_w_scale"])
        self.rows["penalty"].append(float(loop["loss_train_regualizer"]))
        self.rows["projection"].append(
            [float(np.sum(w * projection_matrix(w.shape))) for w in weights]
        )
        if step % 1000 == 0:
            self.evaluations.append(
                (
                    step,
                    float(loop["interpolation_error"]),
                    float(loop["extrapolation_error"]),
                )
            )
        if (step + 1) % self.every == 0 or step == self.steps:
            self.snapshot_steps.append(step)
            self.snapshots.append(weights)

    def on_batch(self, loader: int, x, t) -> None:
        h = batch_hash(x.numpy(), t.numpy())
        (self.batch_hashes if loader == 0 else self.set_hashes).append(h)

    def arrays(self, loop) -> dict[str, np.ndarray]:
        self.evaluations.append(
            (
                self.steps + 1,
                float(loop["loss_valid_inter"]),
                float(loop["loss_valid_extra"]),
            )
        )
        arrays = {
            "initial_0": self.initial[0],
            "initial_1": self.initial[1],
            "loss": np.array(self.rows["loss"]),
            "lam": np.array(self.rows["lam"]),
            "penalty": np.array(self.rows["penalty"]),
            "projection": np.array(self.rows["projection"]),
            "batch_hash": np.array(self.batch_hashes[: self.steps + 1], np.int64),
            "set_hash": np.array(self.set_hashes, np.int64),
            "snapshot_step": np.array(self.snapshot_steps),
            "evaluation": np.array(self.evaluations),
            "subsets": np.array(self.subsets),
        }
        for i in range(2):
            arrays[f"snapshot_{i}"] = np.stack([s[i] for s in self.snapshots])
        return arrays


def _loop_variables() -> dict:
    """The variables of the reference script's loop, read from its frame."""
    frame = inspect.currentframe().f_back.f_back
    return frame.f_globals


def run_case(reference: Path, case: Case, steps: int, every: int) -> dict:
    """Runs the reference's script for `case`; returns the file's arrays."""
    import stable_nalu
    import torch

    recorder = Recorder(case, steps, every)
    network = stable_nalu.network.SimpleFunctionStaticNetwork
    fork = stable_nalu.dataset._simple_function_abstact.SimpleFunctionDatasetFork
    originals = (network.reset_parameters, network.optimize, fork.dataloader)

    def reset_parameters(self):
        originals[0](self)
        recorder.on_reset(self, _loop_variables())

    def optimize(self, loss):
        originals[1](self, loss)
        recorder.on_step(self, _loop_variables())

    def dataloader(self, batch_size=128):
        loader, index = originals[2](self, batch_size), recorder.loaders
        recorder.loaders += 1

        def batches():
            for x, t in loader:
                recorder.on_batch(index, x, t)
                yield x.double(), t.double()  # the float32 values, exactly

        return batches()

    argv = [
        str(SCRIPT),
        "--layer-type", "ReRegualizedLinearNAC",
        "--nac-mul", "mnac",
        "--operation", "mul",
        "--hidden-size", str(case.hidden_size),
        "--seed", str(case.seed),
        "--max-iterations", str(steps),
        "--regualizer-scaling-start", str(case.ramp[0]),
        "--regualizer-scaling-end", str(case.ramp[1]),
        "--no-cuda",
    ]  # fmt: skip
    optimizer = torch.optim.Adam
    network.reset_parameters, network.optimize = reset_parameters, optimize
    fork.dataloader = dataloader
    if case.adam == "paper":
        torch.optim.Adam = paper_era_adam(torch)
    saved_argv, log = sys.argv, io.StringIO()
    try:
        sys.argv = argv
        with contextlib.redirect_stdout(log):
            loop = runpy.run_path(str(reference / SCRIPT), run_name="__main__")
    finally:
        sys.argv = saved_argv
        torch.optim.Adam = optimizer
        network.reset_parameters, network.optimize = originals[:2]
        fork.dataloader = originals[2]
    return recorder.arrays(loop)


def reference_commit(reference: Path, given: str | None) -> str:
    if given:
        return given
    try:
        return subprocess.run(
            ["git", "-C", str(reference), "rev-parse", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(
            f"trajectories.py: {reference} is not a git checkout; pass its "
            "commit with --reference-commit"
        ) from None


def main(argv=None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--reference", required=True, help="a checkout of stable-nalu")
    options.add_argument(
        "--reference-commit", help="its commit, if the folder is not a git checkout"
    )
    options.add_argument("--cases", help="only these, comma-separated")
    options.add_argument("--steps", type=int, default=1000, help="--max-iterations")
    options.add_argument("--every", type=int, default=50, help="steps per snapshot")
    options.add_argument("--out", default=str(OUT))
    args = options.parse_args(argv)
    reference = Path(args.reference).resolve()
    if not (reference / SCRIPT).is_file():
        raise SystemExit(f"trajectories.py: no {SCRIPT} in {reference}")
    commit = reference_commit(reference, args.reference_commit)
    names = args.cases.split(",") if args.cases else [c.name for c in CASES]
    cases = [c for c in CASES if c.name in names]
    if len(cases) != len(names):
        raise SystemExit(f"trajectories.py: unknown cases in {names}")

    import torch

    stub_unused_imports()
    sys.path.insert(0, str(reference))
    scratch = tempfile.mkdtemp(prefix="stable-nalu-")
    os.environ["TENSORBOARD_DIR"] = os.environ["SAVE_DIR"] = scratch
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "cases.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    for case in cases:
        arrays = run_case(reference, case, args.steps, args.every)
        np.savez_compressed(out / f"{case.name}.npz", **arrays)
        index[case.name] = {
            **dataclasses.asdict(case),
            "steps": args.steps + 1,
            "every": args.every,
            "dtype": "float64",
            "epsilon": 1e-8,
            "adam_epsilon": (
                "before the bias correction (PyTorch <= 1.2, as the paper's runs)"
                if case.adam == "paper"
                else f"after the bias correction (PyTorch {torch.__version__})"
            ),
            "reference": "github.com/AndreasMadsen/stable-nalu",
            "reference_commit": commit,
            "torch": torch.__version__,
            "numpy": np.__version__,
        }
        evaluation = arrays["evaluation"]
        print(
            f"{case.name}: {args.steps + 1} steps, final loss "
            f"{arrays['loss'][-1]:.4g}, extrapolation MSE {evaluation[-1, 2]:.4g}"
        )
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
