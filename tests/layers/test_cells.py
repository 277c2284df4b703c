"""ArithmeticCell: any unit as the step of keras.layers.RNN (Trask et al. 2018, App.
B)."""

import keras
import numpy as np
import pytest

from keras_nalu.keras_utils import iter_layers
from keras_nalu.layers import NAU, NMU, ArithmeticCell, GatedNAUNMU, iNALU
from keras_nalu.regularizers import find_scheduled_regularizers
from tests.backend import BACKEND, to_numpy
from tests.layers.contract import check_keras_round_trip
from tests.serving import serve_in_fresh_process


def _recurrent_model(unit, initial_state_value, input_size=1, name="rnn"):
    cell = ArithmeticCell(unit, initial_state_value=initial_state_value)
    rnn = keras.layers.RNN(cell, return_sequences=True, name=name)
    model = keras.Sequential([keras.Input((None, input_size)), rnn])
    return model, cell


def test_nau_cell_accumulates_the_sum_exactly_over_1000_steps():
    model, cell = _recurrent_model(NAU(1), 0.0)
    _ = cell.unit.kernel.assign([[1.0], [1.0]])  # [x_t, h_{t-1}]
    x = np.random.default_rng(10).integers(-9, 10, (3, 1000, 1)).astype("float32")
    y = model.predict(x, verbose=0)
    np.testing.assert_array_equal(y, np.cumsum(x, axis=1))


def test_nmu_cell_from_one_accumulates_the_product():
    model, cell = _recurrent_model(NMU(1), 1.0)
    _ = cell.unit.kernel.assign([[1.0], [1.0]])
    x = np.random.default_rng(11).choice([-2.0, -1.0, 1.0, 2.0], (3, 40, 1))
    x = x.astype("float32")
    y = model.predict(x, verbose=0)
    np.testing.assert_array_equal(y, np.cumprod(x, axis=1))
    # from the default initial state 0 the same cell multiplies by 0
    zero, zero_cell = _recurrent_model(NMU(1), 0.0)
    _ = zero_cell.unit.kernel.assign([[1.0], [1.0]])
    np.testing.assert_array_equal(zero.predict(x, verbose=0), 0.0)


def test_cell_contract():
    cell = ArithmeticCell(NAU(2))
    assert cell.state_size == 2 and cell.output_size == 2
    rnn = keras.layers.RNN(cell)
    y = rnn(np.ones((4, 5, 3), "float32"))
    assert tuple(y.shape) == (4, 2)
    assert tuple(cell.unit.kernel.shape) == (3 + 2, 2)  # input + state
    assert len(rnn.weights) == 1
    assert len(rnn.losses) == 1  # the NAU's sparsity regularizer
    state = cell.get_initial_state(batch_size=4)[0]
    np.testing.assert_array_equal(state, np.zeros((4, 2)))
    one = ArithmeticCell(NMU(2), initial_state_value=1.0)
    np.testing.assert_array_equal(one.get_initial_state(batch_size=3)[0], 1.0)
    config = cell.get_config()
    clone = ArithmeticCell.from_config(config)
    assert type(clone.unit) is NAU and clone.get_config() == config


def test_cell_trains():
    model, cell = _recurrent_model(NAU(1), 0.0, input_size=2)
    model.compile(keras.optimizers.Adam(0.05), "mse", jit_compile=False)
    x = np.random.default_rng(12).uniform(1.0, 2.0, (8, 4, 2)).astype("float32")
    before = to_numpy(cell.unit.kernel).copy()
    model.fit(x, np.cumsum(x[..., :1], axis=1), epochs=1, verbose=0)
    assert not np.allclose(before, to_numpy(cell.unit.kernel))


def test_callbacks_find_units_inside_cells():
    model, cell = _recurrent_model(GatedNAUNMU(1), 0.0)
    found = list(iter_layers(model))
    assert cell in found and cell.unit in found and cell.unit.nmu in found
    assert len(find_scheduled_regularizers(model)) == 2


@pytest.mark.parametrize(
    "unit, initial_state_value, match",
    [
        (keras.layers.ReLU(), 0.0, "unit="),
        ("nau", 0.0, "unit="),
        (NAU(1), float("nan"), "initial_state_value="),
        (NAU(1), True, "initial_state_value="),
    ],
)
def test_cell_validation_names_the_argument(unit, initial_state_value, match):
    with pytest.raises(ValueError, match=match):
        ArithmeticCell(unit, initial_state_value=initial_state_value)


def _round_trip_model():
    model, _ = _recurrent_model(iNALU(2), 1.0, input_size=2, name="rnn")
    return model


def _round_trip_inputs():
    return np.random.default_rng(13).uniform(1.0, 2.0, (3, 6, 2)).astype("float32")


def test_keras_and_saved_model_round_trips(tmp_path):
    model, x = _round_trip_model(), _round_trip_inputs()
    loaded = check_keras_round_trip(model, x, tmp_path, export=True)
    loaded_cell = loaded.get_layer("rnn").cell
    assert isinstance(loaded_cell, ArithmeticCell)
    assert isinstance(loaded_cell.unit, iNALU)
    assert loaded_cell.initial_state_value == 1.0
    if BACKEND == "tensorflow":  # the SavedModel, in a process of its own
        served = serve_in_fresh_process(tmp_path / "saved_model", x, tmp_path)
        np.testing.assert_allclose(served, model.predict(x, verbose=0), rtol=1e-5)
