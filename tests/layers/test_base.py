"""What every unit shares (ArithmeticLayer): its schedules' strengths are state."""

import keras
import numpy as np
import pytest

from keras_nalu.layers import (
    NAC,
    NALU,
    NAU,
    NMU,
    NPU,
    ArithmeticCell,
    GatedNAUNMU,
    NACMul,
    RealNPU,
    iNALU,
)
from keras_nalu.regularizers import (
    L1,
    OutOfBounds,
    Sparsity,
    find_scheduled_regularizers,
)

#: A unit with scheduled regularizers, and how many distinct ones it holds.
UNITS = {
    "NAU": (lambda: NAU(2), 1),
    "NMU": (lambda: NMU(2), 1),
    "NAC": (lambda: NAC(2, kernel_regularizer=Sparsity(0.1)), 1),  # Ŵ and M̂
    "NACMul_nmu": (lambda: NACMul(2, parametrization="nmu"), 1),
    "NALU": (
        lambda: NALU(
            2, kernel_regularizer=Sparsity(0.1), gate_regularizer=OutOfBounds()
        ),
        2,
    ),
    "NPU": (lambda: NPU(2, kernel_regularizer=L1(0.1, start=0, end=10)), 1),
    "RealNPU": (lambda: RealNPU(2, kernel_regularizer=L1(0.1)), 1),
    "iNALU": (lambda: iNALU(2), 1),  # one Saturation on every parameter
    "GatedNAUNMU": (lambda: GatedNAUNMU(2), 2),  # the NAU's and the NMU's
}


def _model(unit):
    return keras.Sequential([keras.Input((3,)), unit])


@pytest.mark.parametrize("make_unit, count", list(UNITS.values()), ids=list(UNITS))
def test_strengths_are_non_trainable_state_not_weights(make_unit, count):
    model = _model(make_unit())
    strengths = [r.current_strength for r in find_scheduled_regularizers(model)]
    assert len(strengths) == count
    # In the state a compiled train step takes as arguments, once each ...
    state = model.non_trainable_variables
    assert sorted(map(id, state)) == sorted(map(id, strengths))
    # ... and not weights: get/set_weights, count_params and .keras files
    # see only the units' parameters.
    weight_ids = {id(w) for w in model.weights}
    assert not weight_ids & {id(s) for s in strengths}
    assert len(model.get_weights()) == len(model.trainable_weights)
    model.set_weights(model.get_weights())


def test_a_shared_regularizer_gives_one_variable():
    shared = Sparsity(1.0, start=0, end=10)
    model = keras.Sequential(
        [
            keras.Input((3,)),
            NAU(2, kernel_regularizer=shared),
            NAU(1, kernel_regularizer=shared),
        ]
    )
    assert [id(v) for v in model.non_trainable_variables] == [
        id(shared.current_strength)
    ]
    assert sum(v is shared.current_strength for v in model.variables) == 1


def test_cells_and_nested_models_list_their_units_strengths():
    unit = NMU(1)
    rnn = keras.layers.RNN(ArithmeticCell(unit, 1.0))
    inner = keras.Sequential([keras.Input((4, 1)), rnn])
    model = keras.Sequential([keras.Input((4, 1)), inner])
    strength = unit.kernel_regularizer.current_strength
    assert [id(v) for v in model.non_trainable_variables] == [id(strength)]


def test_keras_file_holds_only_the_weights(tmp_path):
    model = _model(NAU(2, name="nau"))
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(loaded.layers[0].kernel),
        keras.ops.convert_to_numpy(model.layers[0].kernel),
    )
    store = {}
    model.layers[0].save_own_variables(store)
    assert list(store) == ["0"]  # the kernel: files from before still load
