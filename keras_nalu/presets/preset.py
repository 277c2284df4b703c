"""`Preset`: one of the papers' models as data — its units, λ and schedule."""

import dataclasses
from collections.abc import Mapping
from typing import Any

#: The learning rate of a preset that names none (Madsen & Johansen 2020).
DEFAULT_LEARNING_RATE = 1e-3

#: Output kinds that add ε to |x| before dividing by it (the NMRU in
#: training; the NPUs' log(|x| + ε)), or floor it (the DMU's log max(|x|,
#: 10⁻¹¹)), so a divisor near 0 stays finite: the division paper (Mistry et
#: al. 2021) and the DMU's author train them on U[-2, 2].
ZERO_SAFE_DIVISION_KINDS = frozenset(
    {"nmru", "npu", "real_npu", "real_npu_modified", "dmu_add", "dmu_sub"}
)


@dataclasses.dataclass(frozen=True)
class Preset:
    """A two-layer model of Madsen & Johansen (2020), Table 4 (or of the paper of its
    unit), or one unit alone for the single-module task.

    Attributes:
        name: the preset's name (`keras-nalu train --model NAME`).
        layers: the kind of the hidden and of the output layer (see
            `make_layer`), or of the output layer alone: a single module
            maps the inputs to the output (`hidden_size` is unused).
        sparsity: λ_sparse, or None for units without a sparsity regularizer.
            One λ(t) for every unit of the model (Madsen & Johansen 2020, §2.7): the
            NAU/NMU sparsity terms and the NPU's L1 penalty.
        start: step at which λ starts to ramp up.
        end: step at which λ reaches `sparsity`.
        description: one line for `--help` and the README.
        optimizer_options: extra optimizer arguments, e.g. `{"clipvalue":
            0.1}` (gradient clipping of the iNALU).
        metrics: metrics to compile, e.g. `("mse",)` for a loss without the
            regularizers that a callback can monitor.
        callbacks: callbacks the preset trains with, as `{class name in
            keras_nalu.callbacks: constructor arguments}`.
        revision: raised by one whenever the recipe changes. A revision
            above 0 enters `keras_nalu.sweeps.results.config_id`, so results
            rows of the older recipe are no longer resumed or reused for this
            one.
        learning_rate: the recipe's learning rate, used when `build_model`
            is given none; None for `DEFAULT_LEARNING_RATE`.
        l1: keyword arguments of the `keras_nalu.regularizers.L1` that the
            Real NPU kinds put on every parameter (Heim et al.'s growing β),
            or None.
    """

    name: str
    layers: tuple[str, ...]
    sparsity: float | None = None
    start: int | None = None
    end: int | None = None
    description: str = ""
    optimizer_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    callbacks: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    revision: int = 0
    learning_rate: float | None = None
    l1: Mapping[str, Any] | None = None

    def __post_init__(self):
        if not 1 <= len(self.layers) <= 2:
            raise ValueError(
                "Preset expects one or two layer kinds. "
                f"Received: layers={self.layers!r}"
            )

    @property
    def single_module(self) -> bool:
        """Whether the model is one unit from the inputs to the output."""
        return len(self.layers) == 1

    @property
    def divides_near_zero(self) -> bool:
        """Whether its output unit may divide by inputs near 0 (the NMRU, the
        NPUs: `ZERO_SAFE_DIVISION_KINDS`).

        `ExperimentConfig` passes it to `ArithmeticTask(allow_zero_divisor=...)`,
        which otherwise refuses division over an input range that holds 0.
        """
        return self.layers[-1] in ZERO_SAFE_DIVISION_KINDS
