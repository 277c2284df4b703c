"""The replicas' verdicts as a run goes: evaluations folded, stops, divergence."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from keras_nalu.evaluation import Evaluation, EvaluationSummary


@dataclasses.dataclass
class Verdicts:
    """Each replica's verdict so far, and whether it still trains.

    Per replica: its `EvaluationSummary`, the step it stopped at (None while
    it trains), whether its loss or weights stopped being finite, whether it
    is `active` (`[R]` bool), and every `Evaluation` (`history`, None for a
    run that keeps none).
    """

    summaries: list[EvaluationSummary]
    iterations: list[int | None]
    loss_diverged: list[bool]
    active: np.ndarray
    history: list[list[Evaluation]] | None

    @classmethod
    def start(cls, thresholds, history: bool = True) -> Verdicts:
        """No evaluation yet, every replica training (one per threshold)."""
        replicas = len(thresholds)
        return cls(
            summaries=[EvaluationSummary(float(t)) for t in thresholds],
            iterations=[None] * replicas,
            loss_diverged=[False] * replicas,
            active=np.ones(replicas, dtype=bool),
            history=[[] for _ in range(replicas)] if history else None,
        )

    @property
    def evaluated(self) -> bool:
        """Whether any replica has an evaluation."""
        return any(summary.evaluations for summary in self.summaries)

    def record(self, r: int, evaluation: Evaluation) -> None:
        self.summaries[r].update(evaluation)
        if self.history is not None:
            self.history[r].append(evaluation)

    def stop(self, r: int, step: int) -> None:
        self.active[r] = False
        self.iterations[r] = step

    def judge(
        self,
        step: int,
        interpolation,
        extrapolation,
        sparsity: dict[int, float],
        stop_on_success: bool,
    ) -> None:
        """Records the active replicas' evaluation at `step` (MSEs `[R]`, each
        active replica's sparsity error) and stops those not finite or, with
        `stop_on_success`, solved (below their summary's threshold)."""
        for r in np.flatnonzero(self.active):
            evaluation = Evaluation(
                step, float(interpolation[r]), float(extrapolation[r]), sparsity[r]
            )
            self.record(r, evaluation)
            finite = np.isfinite([interpolation[r], extrapolation[r]]).all()
            solved = evaluation.extrapolation_mse < self.summaries[r].threshold
            if not finite or (stop_on_success and solved):
                self.stop(r, step)

    def diverge(self, diverged_at: np.ndarray) -> None:
        """Stops the active replicas that diverged (`diverged_at[r] >= 0`)."""
        for r in np.flatnonzero(self.active & (diverged_at >= 0)):
            step = int(diverged_at[r])
            self.loss_diverged[r] = True
            self.record(r, Evaluation(step, math.nan, math.nan, math.nan))
            self.stop(r, step)

    def finish(self, step: int) -> None:
        """The replicas still active trained to `step`, the last one."""
        for r in np.flatnonzero(self.active):
            self.iterations[r] = step

    def verdict(self, r: int) -> dict:
        """Replica r's verdict, threshold and number of evaluations."""
        summary = self.summaries[r]
        return {
            **summary.result(loss_diverged=self.loss_diverged[r]),
            "threshold": summary.threshold,
            "evaluations": summary.evaluations,
        }

    def history_rows(self, r: int) -> list[tuple] | None:
        """Replica r's evaluations as tuples, or None without a history."""
        if self.history is None:
            return None
        return [dataclasses.astuple(e) for e in self.history[r]]
