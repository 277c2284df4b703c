"""Export for serving: TF Serving's SavedModel layout or ONNX, plus a manifest.

Layout: `<export_dir>/<name>/<integer version>/saved_model.pb` (what TF
Serving's file-system source expects), or `.../<version>/model.onnx`, and
`<export_dir>/<name>/manifest.json` describing every version: its format,
the task, the run's config and its result. TF Serving serves the highest
version; the manifest names it `latest`. A model folder holds one format,
so that a folder TF Serving is pointed at never has a version it cannot
serve.
"""

import contextlib
import functools
import io
import json
import os
import warnings
from pathlib import Path

import keras
import numpy as np

from keras_nalu._files import write_json
from keras_nalu._optional import require
from keras_nalu.errors import ArgumentError, literal

MANIFEST = "manifest.json"

# Serving needs no gradients, and jax2tf cannot trace those of a product (NMU)
# over a batch of unknown size.
_JAX2TF_OPTIONS = {"with_gradient": False}

EXPORT_FORMATS = ("saved_model", "onnx")
"""What `keras-nalu train --export-format` writes."""

#: The file that marks a version folder as each format's, and the format's name.
_FORMAT_FILES = {"saved_model": "saved_model.pb", "onnx": "model.onnx"}
_FORMAT_LABELS = {"saved_model": "SavedModel", "onnx": "ONNX"}

#: The converter Keras' ONNX export uses on each backend, and what it is in.
_ONNX_CONVERTERS = {"tensorflow": "tf2onnx", "jax": "jax2onnx", "torch": "onnxscript"}


def latest_version(model_dir: str | os.PathLike) -> int | None:
    """The highest integer version folder in `model_dir`, or None if none.

    It is the version TF Serving serves (its default policy serves the
    highest), and the manifest's `latest`.
    """
    versions = [
        int(child.name)
        for child in Path(model_dir).glob("*")
        if child.is_dir() and child.name.isdigit()
    ]
    return max(versions, default=None)


def next_version(model_dir: str | os.PathLike) -> int:
    """One more than the highest integer version folder in `model_dir`."""
    return (latest_version(model_dir) or 0) + 1


def export_saved_model(
    model: keras.Model,
    export_dir: str | os.PathLike = "saved_models",
    name: str = "model",
    version: int | None = None,
    manifest: dict | None = None,
) -> Path:
    """Exports `model` for TF Serving and records it in the manifest.

    The SavedModel has a `serving_default` signature (and a `serve`
    endpoint) mapping the float32 input vector `(batch, input_size)` to the
    prediction; loading it needs TensorFlow only, not keras_nalu. The
    signature states the input width, and the served function checks it: an
    input of another width fails with "serving_default expects inputs of
    shape (batch, input_size)", not inside a MatMul; an empty batch gives an
    empty prediction. Writing it needs TensorFlow too, on the JAX backend as
    well (Keras converts the model with jax2tf); the export of either backend
    serves alike. On PyTorch, export to ONNX (`export_onnx`).

    The new version becomes the manifest's `latest`, and the version TF
    Serving serves: this function always writes it. (`export_run`, and so
    `keras-nalu train`, writes it only for a run that solved the task, or
    where the model has no version yet, unless told to overwrite.)

    Args:
        model: a built Keras model.
        export_dir: the base folder (TF Serving's model base path's parent).
        name: the model's name, a folder under `export_dir`.
        version: the integer version; default one more than the highest.
        manifest: extra JSON-able facts to record (task, config, result).

    Returns:
        The version folder.

    Raises:
        ImportError: TensorFlow is not installed (one line saying so).
        ValueError: Keras runs on PyTorch.

    Example:

    >>> import keras, keras_nalu, tempfile
    >>> from keras_nalu.export import export_saved_model
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.layers.NAU(1)])
    >>> path = export_saved_model(model, tempfile.mkdtemp(), "adder")
    >>> path.name
    '1'
    """
    check_export_format("saved_model")
    model_dir, version, path = _new_version(export_dir, name, version, "saved_model")
    _export_checked(model, path)
    _record_version(
        model_dir,
        name,
        version,
        {
            "format": "saved_model",
            "path": str(Path(name) / str(version)),
            "signature": "serving_default",
            "input_shape": _input_shape(model),
            "input_dtype": "float32",
            **(manifest or {}),
        },
    )
    return path


def check_export_format(export_format: str) -> None:
    """Fails now, in one line, where this backend cannot write `export_format`.

    A SavedModel needs TensorFlow, and Keras writes one on the TensorFlow and
    JAX backends (on PyTorch only through torch_xla). ONNX needs the
    converter Keras uses on the backend: tf2onnx (TensorFlow), jax2onnx
    (JAX) or onnxscript (PyTorch), all in the `[onnx]` extra.

    Raises:
        ValueError: an unknown format, or a SavedModel on PyTorch.
        ImportError: what the export needs is not installed.
    """
    if export_format not in EXPORT_FORMATS:
        raise ArgumentError(
            "",
            "export_format",
            export_format,
            problem=f"{{export_format}} must be one of {list(EXPORT_FORMATS)}",
        )
    backend = keras.backend.backend()
    if export_format == "saved_model":
        if backend not in ("tensorflow", "jax"):
            raise ValueError(
                "A SavedModel export needs the TensorFlow or JAX backend; Keras "
                f"runs on {backend!r}. Export to ONNX instead (export_onnx; "
                "keras-nalu train --export-format onnx)."
            )
        require("tensorflow", "SavedModel export")
        return
    extra = "keras-arithmetic-units[onnx]"
    converter = _ONNX_CONVERTERS.get(backend)
    if converter is None:
        raise ValueError(
            f"Keras exports ONNX on the {', '.join(_ONNX_CONVERTERS)} backends; "
            f"Keras runs on {backend!r}."
        )
    require("onnx", "ONNX export", extra)
    require(converter, f"ONNX export on {backend}", extra)


def export_onnx(
    model: keras.Model,
    export_dir: str | os.PathLike = "saved_models",
    name: str = "model",
    version: int | None = None,
    manifest: dict | None = None,
) -> Path:
    """Exports `model` as ONNX and records it in the manifest.

    Writes `<export_dir>/<name>/<version>/model.onnx` with Keras'
    `model.export(format="onnx")`, on any of the three backends. The graph
    maps a float32 batch `(batch, input_size)` to the prediction, the batch
    size left free; loading it needs an ONNX runtime only, e.g.
    `onnxruntime.InferenceSession`, which refuses an input of another width.

    Args:
        model: a built Keras model with one input.
        export_dir: the base folder.
        name: the model's name, a folder under `export_dir`.
        version: the integer version; default one more than the highest.
        manifest: extra JSON-able facts to record (task, config, result).

    Returns:
        The `.onnx` file.

    Raises:
        ImportError: the backend's converter is not installed (one line
            naming the `[onnx]` extra).

    Example:

    >>> import keras, tempfile
    >>> from keras_nalu.export import export_onnx
    >>> from keras_nalu.layers import NAU
    >>> model = keras.Sequential([keras.Input((2,)), NAU(1)])
    >>> export_onnx(model, tempfile.mkdtemp(), "adder").name
    'model.onnx'
    """
    check_export_format("onnx")
    model_dir, version, path = _new_version(export_dir, name, version, "onnx")
    # Keras exports a model it has called; JAX's `fit` and `predict` run the
    # model statelessly, which does not count.
    model(np.zeros((1, *model.inputs[0].shape[1:]), "float32"))
    path.mkdir(parents=True)
    file = path / "model.onnx"
    with _quiet_converters():
        model.export(str(file), format="onnx", verbose=False)
    _record_version(
        model_dir,
        name,
        version,
        {
            "format": "onnx",
            "path": str(Path(name) / str(version) / file.name),
            "input_shape": _input_shape(model),
            "input_dtype": "float32",
            **(manifest or {}),
        },
    )
    return file


@contextlib.contextmanager
def _quiet_converters():
    """tf2onnx and PyTorch's exporter print to stdout and warn at length."""
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        yield


def read_manifest(model_dir: str | os.PathLike) -> dict:
    """The manifest of a model's export folder, checked to be one.

    Args:
        model_dir: `<export_dir>/<name>`.

    Returns:
        The manifest: `{"name", "versions": {version: entry}, "latest"}`, or
        one without versions where the folder has no manifest yet.

    Raises:
        ValueError: `manifest.json` there is not a manifest this module
            wrote (not JSON, or without its versions); it is named, and left
            as it is: nothing is exported over it.

    Example:

    >>> import tempfile
    >>> read_manifest(tempfile.mkdtemp())["versions"]
    {}
    """
    model_dir = Path(model_dir)
    path = model_dir / MANIFEST
    if not path.exists():
        return {"name": model_dir.name, "versions": {}}
    reason = None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # a folder, binary or broken JSON
        document = None
        reason = getattr(error, "strerror", None) or "not JSON"
    versions = document.get("versions") if isinstance(document, dict) else None
    if reason is None and not (
        isinstance(versions, dict)
        and all(
            key.isdigit() and isinstance(entry, dict) for key, entry in versions.items()
        )
    ):
        reason = "no 'versions' of exported models"
    if reason is not None:
        raise ValueError(
            f"{path} is not an export manifest ({reason}); it is left as it is, "
            "and nothing is exported beside it: export to another folder or "
            "name, or move it aside."
        )
    return document


def check_model_folder(
    export_dir: str | os.PathLike, name: str, export_format: str
) -> Path:
    """The model folder `<export_dir>/<name>`, checked to take an `export_format`.

    A model folder holds the versions of one format. TF Serving, pointed at
    the folder, serves its highest version: an ONNX version beside
    SavedModels would become one it cannot serve (no `saved_model.pb`), so
    another format is refused there, and the other way round.

    Raises:
        ValueError: the folder holds versions of another format; or its
            `manifest.json` is not one (`read_manifest`). Nothing is written.

    Example:

    >>> import tempfile
    >>> check_model_folder(tempfile.mkdtemp(), "adder", "onnx").name
    'adder'
    """
    model_dir = Path(export_dir) / name
    read_manifest(model_dir)  # a foreign manifest: refused before writing
    for other, file in _FORMAT_FILES.items():
        versions = sorted(
            int(child.name)
            for child in model_dir.glob("*")
            if child.name.isdigit() and (child / file).exists()
        )
        if other != export_format and versions:
            raise ArgumentError(
                "",
                "name",
                name,
                problem=f"{literal(model_dir)} holds {_FORMAT_LABELS[other]} versions "
                f"({', '.join(map(str, versions))}); a model folder holds one "
                "format, so that TF Serving, which serves the highest version, "
                "never finds one it cannot serve: export the "
                f"{_FORMAT_LABELS[export_format]} model under another name",
            )
    return model_dir


def _new_version(export_dir, name: str, version: int | None, export_format: str):
    """`(model folder, version, version folder)`; the version folder is new."""
    model_dir = check_model_folder(export_dir, name, export_format)
    version = next_version(model_dir) if version is None else int(version)
    if version < 1:
        raise ValueError(f"export expects version >= 1. Received: version={version}")
    path = model_dir / str(version)
    if path.exists():
        raise FileExistsError(
            f"{path} exists; versions are immutable (as TF Serving's): pick "
            "another version or remove it."
        )
    return model_dir, version, path


def _input_shape(model) -> list:
    return [None if d is None else int(d) for d in model.inputs[0].shape]


def _record_version(model_dir: Path, name: str, version: int, entry: dict) -> None:
    """Adds `entry` as `version` to `model_dir`'s manifest (atomically)."""
    manifest_path = model_dir / MANIFEST
    document = read_manifest(model_dir)
    document["versions"][str(version)] = {"version": version, **entry}
    document["latest"] = max(int(v) for v in document["versions"])
    write_json(manifest_path, document)


def _export_checked(model: keras.Model, path: Path) -> None:
    """`model.export`, with the input width checked inside the served graph.

    TF Serving feeds a request's tensor into the graph without checking it
    against the signature, so a wrong width would fail in the first MatMul
    (on JAX, in a dump of the converted module). On JAX, an empty batch
    skips the converted model, whose batch size must be at least 1.
    """
    shape = model.inputs[0].shape if len(model.inputs) == 1 else ()
    width = shape[-1] if len(shape) == 2 else None
    backend = keras.backend.backend()
    if backend != "tensorflow":
        require("tensorflow", "SavedModel export")
    if width is None or backend not in ("tensorflow", "jax"):
        options = {}
        if backend == "jax":
            options["jax2tf_kwargs"] = _JAX2TF_OPTIONS
        model.export(str(path), format="tf_saved_model", verbose=False, **options)
        return
    import tensorflow as tf

    message = (
        f"serving_default expects inputs of shape (batch, {width}): {width} "
        f"float32 numbers per example. Send {width} numbers per example."
    )
    spec = tf.TensorSpec((None, width), tf.float32, name=model.inputs[0].name)
    if backend == "jax":
        call = _jax2tf_call(model, spec)
        output = model.outputs[0]
        nothing = tf.zeros([0, *output.shape[1:]], output.dtype)
    else:
        call = functools.partial(model, training=False)

    def serve(inputs):
        check = tf.debugging.assert_equal(
            tf.shape(inputs)[-1], tf.constant(width, tf.int32), message=message
        )
        with tf.control_dependencies([check]):
            if backend == "jax":
                return tf.cond(
                    tf.shape(inputs)[0] > 0, lambda: call(inputs), lambda: nothing
                )
            return call(inputs)

    archive = keras.export.ExportArchive()
    if backend == "jax":  # a tf.function: added as it is, not converted again
        serve = tf.function(serve, input_signature=[spec], autograph=False)
        serve.get_concrete_function()
        archive.add_endpoint("serve", serve)
    else:
        archive.track(model)
        archive.add_endpoint("serve", serve, input_signature=[spec])
    archive.write_out(str(path), verbose=False)


def _jax2tf_call(model: keras.Model, spec):
    """The JAX `model` as a TF function of `spec`, through Keras' jax2tf export."""
    archive = keras.export.ExportArchive()
    return archive.track_and_add_endpoint(
        "serve", model, [spec], jax2tf_kwargs=_JAX2TF_OPTIONS
    )


#: The fields of a run's record that its manifest entry keeps as `result`.
_RESULT_FIELDS = (
    "success",
    "solved_at",
    "best_step",
    "interpolation_mse",
    "extrapolation_mse",
    "threshold",
    "sparsity_error",
    "final_step",
    "final_interpolation_mse",
    "final_extrapolation_mse",
    "final_sparsity_error",
    "solved_at_end",
    "iterations",
    "diverged",
    "formula",
    "formula_verdict",
)


def export_run(
    model: keras.Model,
    record: dict,
    export_dir: str | os.PathLike = "saved_models",
    name: str = "model",
    export_format: str = "saved_model",
    overwrite: bool = False,
) -> Path | None:
    """Exports a trained run as its model's new latest version, if it is fit to.

    TF Serving serves the highest version, so a run that did not solve its
    task (`record["success"]` false) is not exported where the model already
    has a version, unless `overwrite`: `record["not_exported"]` then says
    why, and nothing is written. Otherwise `export_saved_model` or
    `export_onnx` writes it, with the run's task, config and result in the
    manifest, and `record[export_format]` is the path written.

    Args:
        model: the run's trained model.
        record: the run's record (`run_experiment`'s); updated in place.
        export_dir: the base folder.
        name: the model's name, a folder under `export_dir`.
        export_format: `"saved_model"` or `"onnx"`.
        overwrite: export an unsolved run over a served model all the same.

    Returns:
        The path written, or None where the run is not exported.

    Raises:
        ValueError, ImportError, OSError: as the export function raises them.
    """
    check_export_format(export_format)
    model_dir = Path(export_dir) / name
    served = latest_version(model_dir)
    if served is not None and not record["success"] and not overwrite:
        record["not_exported"] = (
            f"the run did not solve the task, and {model_dir} serves version "
            f"{served}; pass --overwrite to export it as version {served + 1}, "
            "the new latest, anyway"
        )
        return None
    export = export_onnx if export_format == "onnx" else export_saved_model
    result = {key: record.get(key) for key in _RESULT_FIELDS}
    path = export(
        model,
        export_dir,
        name,
        manifest={"task": record["task"], "config": record["config"], "result": result},
    )
    record[export_format] = str(path)
    return path
