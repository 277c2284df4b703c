"""λ(t): the schedules (ramp, growth, gate) and their one use everywhere.

`schedule_strengths.json` holds the strengths the code gave before the
schedules became objects (recorded by `_strengths.strengths()` at that
commit): every preset's scheduled regularizers at their boundary, ramp,
growth and random steps, through their own schedule, the preset's
`RegularizationSchedule` and the engines' `strength_table`, and imposed
schedules. They must stay equal, float for float.
"""

import json
import math
from pathlib import Path

import keras
import pytest

from keras_nalu import layers, regularizers
from keras_nalu.callbacks import RegularizationSchedule
from keras_nalu.regularizers import L1, Saturation, Sparsity, ZRegularizer
from keras_nalu.regularizers.schedules import Constant, Gate, Growth, Ramp
from keras_nalu.sweeps.engines.schedule import strength_table
from tests.backend import to_numpy
from tests.regularizers._strengths import strengths

RECORDED = json.loads(
    (Path(__file__).parent / "schedule_strengths.json").read_text(encoding="utf-8")
)


def _exactly_equal(new, old, path=""):
    """Equal values of equal types (1e-08 is not 1.0000000000000001e-08)."""
    if isinstance(old, dict):
        assert new.keys() >= old.keys(), path
        for key in old:
            _exactly_equal(new[key], old[key], f"{path}/{key}")
    elif isinstance(old, list):
        assert len(new) == len(old), path
        for i, (a, b) in enumerate(zip(new, old, strict=True)):
            _exactly_equal(a, b, f"{path}[{i}]")
    else:
        assert (new, type(new)) == (old, type(old)), path


@pytest.fixture(scope="module")
def current():
    return json.loads(json.dumps(strengths()))


def test_every_preset_keeps_its_recorded_strengths(current):
    assert len(RECORDED["presets"]) == 18 and len(RECORDED["regularizers"]) == 13
    _exactly_equal(current["regularizers"], RECORDED["regularizers"], "regularizers")
    _exactly_equal(current["presets"], RECORDED["presets"], "presets")


def test_imposed_schedules_keep_their_recorded_strengths(current):
    _exactly_equal(current["imposed"], RECORDED["imposed"], "imposed")


def test_ramp_factor_linear():
    # Madsen & Johansen (2020), eq. 14: 0 before start, linear in between, 1 after end.
    ramp = Ramp(1.0, 100, 300)
    for step in (0, 50, 99, 100):
        assert ramp.factor(step) == 0.0
    assert ramp.factor(150) == pytest.approx(0.25)
    assert ramp.factor(200) == pytest.approx(0.5)
    for step in (300, 301, 10**9):
        assert ramp.factor(step) == 1.0


def test_ramp_factor_exp():
    ramp = Ramp(1.0, 100, 300, mode="exp")
    assert ramp.factor(100) == 0.0
    assert ramp.factor(50) == 0.0
    for step in (150, 300, 700):
        expected = 1.0 - math.exp(-(step - 100) / 200)
        assert ramp.factor(step) == pytest.approx(expected)
    # start = 0, end = 10⁵: the reference code's 1 - exp(-10⁻⁵·t).
    assert Ramp(1.0, 0, 100_000, "exp").factor(25_000) == pytest.approx(
        1.0 - math.exp(-0.25)
    )


def test_strength_at_follows_the_schedule():
    reg = Sparsity(10.0, start=1_000, end=2_000)
    assert [reg.strength_at(t) for t in (0, 1_000, 1_250, 2_000, 5_000)] == [
        0.0,
        0.0,
        pytest.approx(2.5),
        10.0,
        10.0,
    ]
    assert reg.strength_at(1_500) == pytest.approx(5.0)
    exp = Sparsity(10.0, start=1_000, end=2_000, mode="exp")
    assert exp.strength_at(3_000) == pytest.approx(10.0 * (1.0 - math.exp(-2.0)))
    # Unscheduled: the constant strength from the start.
    assert Sparsity(3.0).strength_at(0) == 3.0


def test_l1_growth_schedule_is_heims():
    # β_start 1e-9, ×10 every 10⁴ steps, up to β_end 1e-7 (reference code's
    # Decimal arithmetic: exactly 1e-8, then 1e-7 from step 2·10⁴ on).
    reg = L1(1e-7, initial_strength=1e-9)
    steps = [0, 1, 9_999, 10_000, 19_999, 20_000, 30_000, 10**7]
    strengths = [reg.strength_at(t) for t in steps]
    assert strengths == [1e-9, 1e-9, 1e-9, 1e-8, 1e-8, 1e-7, 1e-7, 1e-7]
    assert reg.scheduled and float(to_numpy(reg.current_strength)) == pytest.approx(
        1e-9
    )
    other = L1(1e-5, initial_strength=1e-7, growth=2.0, growth_every=5)
    assert [other.strength_at(t) for t in (4, 5, 10)] == [1e-7, 2e-7, 4e-7]


def test_each_regularizer_holds_one_schedule_object():
    assert type(Sparsity(2.0).schedule) is Constant
    ramp = Sparsity(2.0, start=10, end=20).schedule
    assert type(ramp) is Ramp and (ramp.strength, ramp.start, ramp.end) == (
        2.0,
        10,
        20,
    )
    growth = L1(1e-7, initial_strength=1e-9, growth_every=5).schedule
    assert type(growth) is Growth and (growth.initial, growth.every) == (1e-9, 5)
    gated = Saturation(loss_threshold=1.0, start=0, end=10).schedule
    assert type(gated) is Gate and type(gated.schedule) is Ramp and not gated.open
    assert type(ZRegularizer(start=0, end=4).schedule) is Ramp


def test_only_a_schedule_that_moves_with_the_step_is_scheduled():
    assert not Sparsity(2.0).scheduled
    assert Sparsity(2.0, start=10, end=20).scheduled
    assert L1(1e-7, initial_strength=1e-9).scheduled
    # A loss gate is driven by LossGatedRegularization, not by the step.
    assert not Saturation(loss_threshold=1.0).scheduled
    assert Saturation(loss_threshold=1.0, start=0, end=10).scheduled


def test_gate_switches_the_schedule_inside_on_and_off():
    gate = Gate(Ramp(4.0, 0, 10))
    assert [gate(t) for t in (0, 5, 20)] == [0.0, 0.0, 0.0]
    gate.open = True
    assert [gate(t) for t in (0, 5, 20)] == [0.0, 2.0, 4.0]
    reg = Saturation(0.5, loss_threshold=1.0)
    assert not reg.enabled and reg.strength_at(100) == 0.0
    reg.set_enabled(True, 100)
    assert reg.enabled and reg.strength_at(100) == 0.5
    assert float(to_numpy(reg.current_strength)) == 0.5


def test_the_callback_and_the_engines_read_the_regularizers_schedules():
    own, other = Sparsity(2.0, start=10, end=20), L1(1e-7, initial_strength=1e-9)
    schedule = RegularizationSchedule()
    assert schedule.schedule_for(own) is own.schedule
    assert schedule.schedule_for(other) is other.schedule
    imposed = RegularizationSchedule(1.0, start=0, end=4)
    assert imposed.schedule_for(own) is imposed.schedule_for(other)
    assert [imposed.strength_for(own, t) for t in (0, 2, 4)] == [0.0, 0.5, 1.0]
    table = strength_table(schedule, [own, other], 5, 8, 23)
    held = [t - t % 5 for t in range(8, 23)]
    assert table[:, 0].tolist() == [own.strength_at(t) for t in held]
    assert table.dtype == "float32" and table.shape == (15, 2)


def test_one_discovery_finds_weights_attributes_and_sum_parts():
    ramp, growth = Sparsity(1.0, start=0, end=5), L1(1e-7, initial_strength=1e-9)
    gated = Saturation(loss_threshold=1.0)
    unit = layers.NAU(2, kernel_regularizer=regularizers.Sum([ramp, growth]))
    unit.z = ZRegularizer(identity="additive")  # a penalty the layer calls itself
    dense = keras.layers.Dense(1, kernel_regularizer=gated)
    model = keras.Sequential([keras.Input((3,)), unit, dense])
    found = regularizers.find_scheduled_regularizers(model)
    assert found == [ramp, growth, gated, unit.z]
    assert regularizers.find_scheduled_regularizers(unit, sublayers=False) == [
        ramp,
        growth,
        unit.z,
    ]
    assert [r for r in found if r.loss_gated] == [gated]
    # The unit lists the strengths of what it holds among its variables.
    strengths = {id(r.current_strength) for r in (ramp, growth, unit.z)}
    assert strengths <= {id(v) for v in unit.variables}
