"""λ(t) of every preset's scheduled regularizers, as the tests compare them.

`strengths()` reads, through the public API only, the strength each
scheduled regularizer of every preset of `keras_nalu.presets` has at a
fixed set of optimizer steps (its own schedule, the `RegularizationSchedule`
the preset trains with, a loss gate opened and closed), imposed schedules,
and the engines' `strength_table`. `schedule_strengths.json` holds what the
code gave before the schedules became objects; the values must stay equal,
float for float.
"""

import json
import math

import numpy as np

from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.presets import PRESETS, build_model
from keras_nalu.regularizers import Sparsity, find_scheduled_regularizers
from keras_nalu.sweeps.engines.schedule import strength_table


def _steps(config: dict) -> list[int]:
    """Every boundary ±1, points inside the ramp, growth steps, random steps."""
    steps = {0, 1, 2, 3, 10**7}
    last = 100
    if config.get("start") is not None:
        start, end = config["start"], config["end"]
        steps |= {start - 1, start, start + 1, end - 1, end, end + 1, 2 * end}
        steps |= {start + (end - start) * k // 64 for k in range(65)}
        last = end
    if config.get("initial_strength") is not None:
        growths = math.ceil(
            math.log(config["strength"] / config["initial_strength"])
            / math.log(config["growth"])
        )
        every = config["growth_every"]
        for k in range(growths + 3):
            steps |= {k * every - 1, k * every, k * every + 1}
        last = every * (growths + 3)
    rng = np.random.default_rng(0)
    steps |= {int(t) for t in rng.integers(0, last + last // 4, 64)}
    return sorted(t for t in steps if t >= 0)


def _regularizer_strengths(regularizer) -> dict:
    config = regularizer.get_config()
    steps = _steps(config)
    entry = {
        "class": type(regularizer).__name__,
        "config": config,
        "steps": steps,
        "strengths": [regularizer.strength_at(t) for t in steps],
    }
    if getattr(regularizer, "loss_gated", False):
        regularizer.set_enabled(True, 0)
        entry["gate_open"] = [regularizer.strength_at(t) for t in steps]
        regularizer.set_enabled(False, 0)
        entry["gate_closed"] = [regularizer.strength_at(t) for t in steps]
    return entry


def _key(regularizer) -> str:
    return json.dumps([type(regularizer).__name__, regularizer.get_config()])


def strengths() -> dict:
    """The record that `schedule_strengths.json` holds.

    `regularizers`: λ(t) of each distinct scheduled regularizer (class and
    config) at its steps, and with the loss gate open and closed;
    `presets`: each preset's regularizers, in the order the model holds
    them, λ(t) through the preset's `RegularizationSchedule` and the
    engines' `strength_table` (blocks of 1000 steps) at the union of their
    steps; `imposed`: λ(t) of imposed `RegularizationSchedule`s.
    """
    regularizers, presets = {}, {}
    for name in sorted(PRESETS):
        model, callbacks = build_model(name, input_size=2)
        found = find_scheduled_regularizers(model)
        if not found:
            continue
        for regularizer in found:
            regularizers.setdefault(
                _key(regularizer), _regularizer_strengths(regularizer)
            )
        entry = {"regularizers": [_key(r) for r in found]}
        schedule = next(
            (c for c in callbacks if isinstance(c, RegularizationSchedule)), None
        )
        if schedule is not None:
            steps = sorted({t for r in found for t in regularizers[_key(r)]["steps"]})
            entry["steps"] = steps
            entry["callback"] = [
                [schedule.strength_for(r, t) for t in steps] for r in found
            ]
            entry["table"] = [
                strength_table(schedule, found, 1000, t, t + 1)[0].tolist()
                for t in steps
            ]
        presets[name] = entry
    imposed = {}
    for strength, start, end, mode in (
        (0.1, 5_000, 50_000, "linear"),
        (10.0, 1_000_000, 2_000_000, "linear"),
        (2.0, 10, 50, "exp"),
        (1e-5, 0, 100_000, "exp"),
        (3.0, None, None, "linear"),
    ):
        schedule = RegularizationSchedule(strength, start, end, mode)
        steps = _steps({"start": start, "end": end})
        imposed[f"{strength}-{start}-{end}-{mode}"] = {
            "steps": steps,
            "strengths": [schedule.strength_for(Sparsity(), t) for t in steps],
        }
    return {"regularizers": regularizers, "presets": presets, "imposed": imposed}
