"""The former home of `run_experiment`, kept so that its imports keep working.

The arithmetic experiment lives in `keras_nalu.experiments.arithmetic`; import
it from `keras_nalu.experiments`.
"""

from keras_nalu import experiments as _experiments
from keras_nalu.experiments import *  # noqa: F403

__all__ = _experiments.__all__
