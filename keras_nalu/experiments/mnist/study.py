"""The success criterion: the exact baselines' bound, the verdicts, the rates."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from keras_nalu.experiments.mnist.run import MnistConfig, run_mnist


def mse_bound(
    baseline_records: Sequence[Mapping], confidence: float = 0.99
) -> dict[int, float]:
    """Per length, the upper one-sided t-bound of the exact baseline's mean MSE.

        bound_L = mean_L + t_{confidence, n-1} · s_L / √n

    over the n ≥ 2 baseline runs (Madsen & Johansen 2020, App. D.1: "the 1% one-sided
    upper confidence-interval, assuming a student-t distribution").

    Example:

    >>> from keras_nalu.experiments.mnist import mse_bound
    >>> runs = [{"test_lengths": [1], "test_mse": [m]} for m in (1.0, 2.0, 3.0)]
    >>> round(mse_bound(runs)[1], 3)
    6.021
    """
    from scipy import stats

    if len(baseline_records) < 2:
        raise ValueError(
            "mse_bound needs at least 2 baseline runs (seeds). "
            f"Received: {len(baseline_records)}"
        )
    by_length: dict[int, list[float]] = {}
    for record in baseline_records:
        for length, mse in zip(record["test_lengths"], record["test_mse"]):
            by_length.setdefault(int(length), []).append(float(mse))
    bound = {}
    for length, values in by_length.items():
        values = np.asarray(values)
        n = len(values)
        spread = values.std(ddof=1) / math.sqrt(n) if n > 1 else math.inf
        bound[length] = float(values.mean() + stats.t.ppf(confidence, n - 1) * spread)
    return bound


def judge(record: dict, bound: Mapping[int, float] | None) -> dict:
    """Adds `bound` and `success` (MSE under the bound) per test length.

    A length without a bound (or `bound` None: no baseline runs) has no
    verdict: its `success` is None, not False.

    Example:

    >>> record = {"test_lengths": [1, 10], "test_mse": [0.5, 9.0]}
    >>> judge(record, {1: 1.0})["success"]
    [True, None]
    """
    bound = {} if bound is None else bound
    lengths = record["test_lengths"]
    record["bound"] = [bound.get(int(length)) for length in lengths]
    record["success"] = [
        None if limit is None else bool(math.isfinite(mse) and mse < limit)
        for mse, limit in zip(record["test_mse"], record["bound"])
    ]
    return record


@dataclasses.dataclass
class MnistStudy:
    """The exact-unit baselines, the bound they set and the runs it judges."""

    baselines: list[dict]
    bound: dict[int, float] | None
    runs: list[dict]

    def summary(self) -> dict:
        """What `keras-nalu mnist` writes: the bound and success rate per length.

        Keys are strings (JSON's); without a bound both are None.
        """
        bound, rates = None, None
        if self.bound is not None:
            bound = {str(length): value for length, value in self.bound.items()}
            rates = {
                unit: {str(n): rate for n, rate in unit_rates.items()}
                for unit, unit_rates in success_rates(self.runs).items()
            }
        return {
            "operation": self.runs[0]["config"]["operation"],
            "bound": bound,
            "success_rate": rates,
            "baselines": self.baselines,
            "runs": self.runs,
        }


def run_study(
    configs: Sequence[MnistConfig],
    baselines: Sequence[MnistConfig] = (),
    verbose: bool = False,
    on_record=None,
) -> MnistStudy:
    """Trains the baselines, sets the bound, trains and judges every config.

    The protocol of Madsen & Johansen (2020), App. D.1: the exact-unit
    baseline runs (`unit="exact"`, two or more) set the MSE bound per
    length (`mse_bound`), and each run of `configs` succeeds at a length
    where its test MSE is under it (`judge`). Without baselines there is no
    bound, and no verdict: `success` is None per length.

    Args:
        configs: the runs to judge.
        baselines: the exact-unit runs that set the bound; none or >= 2.
        verbose: a progress bar per run.
        on_record: called as `on_record(config, record)` after each run
            (baselines first), before it is judged: e.g. to save it.

    Returns:
        A `MnistStudy` of the records, the judged runs in the order of
        `configs`.
    """

    def run(config):
        _, record = run_mnist(config, verbose=verbose)
        if on_record is not None:
            on_record(config, record)
        return record

    baseline_records = [run(config) for config in baselines]
    bound = mse_bound(baseline_records) if baseline_records else None
    return MnistStudy(
        baseline_records, bound, [judge(run(config), bound) for config in configs]
    )


def success_rates(records: Sequence[Mapping]) -> dict[str, dict[int, float | None]]:
    """`{unit: {length: fraction of seeds that succeed}}` of judged records.

    A length some seed has no verdict for (no bound) has rate None.
    """
    counts: dict[str, dict[int, list]] = {}
    for record in records:
        unit = record["config"]["unit"]
        for length, ok in zip(record["test_lengths"], record["success"]):
            counts.setdefault(unit, {}).setdefault(int(length), []).append(ok)
    return {
        unit: {
            length: None if None in oks else float(np.mean(oks))
            for length, oks in lengths.items()
        }
        for unit, lengths in counts.items()
    }
