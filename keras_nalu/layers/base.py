"""What every arithmetic unit shares: units, input checks, shapes, dtypes."""

import keras
from keras import ops

from keras_nalu import _ops
from keras_nalu import constraints as nalu_constraints
from keras_nalu import initializers as nalu_initializers
from keras_nalu import regularizers as nalu_regularizers
from keras_nalu._validation import check_positive_int

LOW_PRECISION = ("float16", "bfloat16")


class ArithmeticLayer(keras.layers.Layer):
    """Base of the units: validates `units`, builds from the last input axis.

    Subclasses implement `build_weights(input_dim)` and `call(inputs)`. Inputs may
    carry any number of leading axes, `(..., input_dim)`; outputs are
    `(..., units)`.
    """

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        self.units = check_positive_int(type(self).__name__, "units", units)
        if "float" not in str(self.variable_dtype):
            # An integer unit has no gradient and its initializers fail deep
            # inside Keras; say so here.
            raise ValueError(
                f"{type(self).__name__} expects a floating dtype (float32, "
                "float64, a mixed_float16 policy, ...). Received: "
                f"dtype={self.variable_dtype!r}"
            )
        self.input_spec = keras.layers.InputSpec(min_ndim=2)
        self._weight_initializers = {}

    def build(self, input_shape):
        if len(input_shape) < 2:
            raise ValueError(
                f"{type(self).__name__} expects inputs of rank >= 2, "
                f"(batch, ..., features). Received: input_shape={input_shape}"
            )
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(
                f"{type(self).__name__} needs a known last input axis. "
                f"Received: input_shape={input_shape}"
            )
        self.build_weights(int(input_dim))
        self.input_spec = keras.layers.InputSpec(min_ndim=2, axes={-1: input_dim})

    def build_weights(self, input_dim: int) -> None:
        raise NotImplementedError

    def effective_weights(self) -> dict:
        """The weights the unit really computes with, by name, as tensors.

        Not the stored variables but what the forward pass uses: the clipped
        kernel of the NAU and NMU, W = tanh(Ŵ) ⊙ σ(M̂) of the NAC, σ(Ŵ) or
        clip(Ŵ, 0, 1) of the NAC•σ and NAC•NMU, both paths' W of the NALU and
        iNALU (`"kernel"`, `"mul_kernel"`), both units' kernels of the gated
        NAU/NMU, Re and Im of the NPU. Gates are not weights of the
        arithmetic; they are left out. Each value has shape
        `(input_dim, units)`; the sparsity error, `keras_nalu.explain` and
        the sequential-MNIST records read them here.

        Example:

        >>> import keras, keras_nalu
        >>> layer = keras_nalu.layers.NAU(1)
        >>> layer.build((None, 2))
        >>> _ = layer.kernel.assign([[1.5], [-0.25]])  # stored, out of the box
        >>> kernel = layer.effective_weights()["kernel"]
        >>> keras.ops.convert_to_numpy(kernel).tolist()
        [[1.0], [-0.25]]
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not define effective_weights()."
        )

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    @property
    def math_dtype(self) -> str:
        """float32 under a float16/bfloat16 policy: products and logs overflow."""
        dtype = self.compute_dtype
        return "float32" if dtype in LOW_PRECISION else dtype

    def to_math(self, x):
        return ops.cast(x, self.math_dtype)

    def to_output(self, y):
        return ops.cast(y, self.compute_dtype)

    def add_weight(self, *args, initializer=None, name=None, **kwargs):
        """`Layer.add_weight` that remembers which initializer drew each weight.

        `keras_nalu.callbacks.Reinitialization` re-draws a weight from it.
        """
        variable = super().add_weight(
            *args, initializer=initializer, name=name, **kwargs
        )
        if len(args) > 1:
            initializer = args[1]
        if initializer is not None:
            self._weight_initializers[variable.name] = keras.initializers.get(
                initializer
            )
        return variable

    def initializer_of(self, weight):
        """The initializer that drew `weight` (one of this layer's own), or None."""
        return self._weight_initializers.get(weight.name)

    def add_kernel(self, name, input_dim, initializer, regularizer, constraint):
        # autocast=False: under mixed_float16 the weight is read in float32.
        return self.add_weight(
            name=name,
            shape=(input_dim, self.units),
            initializer=initializer,
            regularizer=regularizer,
            constraint=constraint,
            autocast=False,
        )

    @property
    def variables(self):
        """The layer's state: its weights, and the strength of each schedule.

        A `ScheduledPenalty` keeps its strength λ in a variable that
        `RegularizationSchedule` assigns between steps. It is state the train
        step reads, like a `SeedGenerator`'s, but not a weight: it is left out
        of `weights`, `get_weights()` and `.keras` files (the schedule
        derives it again from `model.optimizer.iterations`), and listed here,
        so that it is in `non_trainable_variables` — the state a backend's
        compiled train step takes as an argument rather than as a constant
        frozen at trace time (Keras' JAX trainer). A regularizer shared by
        several layers gives one variable in `model.variables`.
        """
        variables = super().variables
        seen = {id(variable) for variable in variables}
        held = nalu_regularizers.find_scheduled_regularizers(self, sublayers=False)
        for regularizer in held:
            strength = regularizer.current_strength
            if id(strength) not in seen:
                seen.add(id(strength))
                variables.append(strength)
        return variables

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def resolve_initializer(identifier):
    return nalu_initializers.get(identifier)


def resolve_regularizer(identifier, default_factory=None):
    return nalu_regularizers.get(identifier, default_factory)


def resolve_constraint(identifier, min_value: float, max_value: float):
    if identifier == "clip":
        return nalu_constraints.Clip(min_value, max_value)
    if identifier == "forward_clip":
        return nalu_constraints.ForwardClip(min_value, max_value)
    return keras.constraints.get(identifier)


def clip_like_constraint(kernel, constraint):
    """Applies a `Clip` constraint in the forward pass too (Madsen & Johansen 2020, eq.
    5, 10); a `ForwardClip` (a `Clip` that leaves the stored weight free) only
    there.

    With any other constraint (or none, the "no clamp" ablation) the kernel is
    used as it is.
    """
    if isinstance(constraint, nalu_constraints.Clip):
        return _ops.clip(kernel, constraint.min_value, constraint.max_value)
    return kernel


def serialize_parts(layer, *names):
    """get_config entries for `<name>_initializer/_regularizer/_constraint`."""
    config = {}
    for name in names:
        config[f"{name}_initializer"] = keras.initializers.serialize(
            getattr(layer, f"{name}_initializer")
        )
        config[f"{name}_regularizer"] = keras.regularizers.serialize(
            getattr(layer, f"{name}_regularizer")
        )
        config[f"{name}_constraint"] = keras.constraints.serialize(
            getattr(layer, f"{name}_constraint")
        )
    return config


def gated_sum(gate, first, second_gate, second):
    """`gate ⊙ first + second_gate ⊙ second`, a path whose gate is 0 left out.

    A sigmoid gate reaches exactly 0 or 1 in float32 (past about ±17): the
    path it shuts is then left out rather than multiplied by 0, so that its
    overflow (inf) does not turn the output into NaN (0·inf), where the
    mathematical output is the open path's value. Gradients are unchanged:
    the shut path's is 0 either way, and so is σ' at a gate of 0 or 1.
    """
    first = ops.where(ops.equal(gate, 0.0), 0.0, first)
    second = ops.where(ops.equal(second_gate, 0.0), 0.0, second)
    return gate * first + second_gate * second
