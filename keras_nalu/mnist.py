"""The former home of the sequential MNIST experiment, kept so that its imports
keep working.

It lives in `keras_nalu.experiments.mnist`; import it from there.
"""

from keras_nalu.experiments import mnist as _mnist
from keras_nalu.experiments.mnist import *  # noqa: F403

__all__ = _mnist.__all__
