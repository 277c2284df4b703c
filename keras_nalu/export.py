"""Export for serving: TF Serving's SavedModel layout plus a small manifest.

Layout: `<export_dir>/<name>/<integer version>/saved_model.pb` (what TF
Serving's file-system source expects) and `<export_dir>/<name>/manifest.json`
describing every version: the task, the run's config and its result.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_nalu._files import atomic_write
from keras_nalu._optional import require

MANIFEST = "manifest.json"

MIN_FREE_BYTES = 16 * 2**20
"""Free space an output folder needs: a run's files take well under 1 MiB."""


def check_output_folder(
    path: str | os.PathLike,
    argument: str,
    value: str | os.PathLike | None = None,
    min_free_bytes: int = MIN_FREE_BYTES,
) -> Path:
    """Makes sure files can be written in the folder `path`, before any work.

    Creates the folder (and its parents) if needed, then writes and deletes
    a probe file in it, so a file in the way, a read-only folder or a full
    disk is found now, in one line, not after hours of training.

    Args:
        path: the output folder.
        argument: the argument or flag it was given as, e.g. `"--output-dir"`;
            the message names it.
        value: the value given for `argument`, if not `path` itself (e.g. the
            results file whose folder `path` is).
        min_free_bytes: the least free space to accept.

    Returns:
        The folder, as a `Path`.

    Raises:
        ValueError: `path` (or one of its parents) is a file, or the folder
            cannot be created or written, or its disk is nearly full.

    Example:

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_folder(root / "runs", "--output-dir").is_dir()
    True
    """
    path = Path(path)
    given = f"{argument} {str(path if value is None else value)!r}"
    for folder in (path, *path.parents):
        if folder.exists() and not folder.is_dir():
            raise ValueError(
                f"{given}: {folder} is a file, not a folder; pass another path."
            )
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ValueError(
            f"{given}: cannot write in {path} ({reason}); pass a folder you can "
            "write to."
        ) from None
    free = shutil.disk_usage(path).free
    if free < min_free_bytes:
        raise ValueError(
            f"{given}: only {free / 2**20:.1f} MiB free in {path}, less than the "
            f"{min_free_bytes / 2**20:.0f} MiB needed; free some space or pass "
            "another folder."
        )
    return path


def next_version(model_dir: Path) -> int:
    """One more than the highest integer version folder in `model_dir`."""
    versions = [
        int(child.name)
        for child in Path(model_dir).glob("*")
        if child.is_dir() and child.name.isdigit()
    ]
    return max(versions, default=0) + 1


def _write_json(path: Path, payload) -> None:
    text = json.dumps(payload, indent=2, sort_keys=True, default=_jsonable)
    with atomic_write(path, encoding="utf-8") as handle:
        handle.write(text)


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


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
    shape (batch, input_size)", not inside a MatMul. Writing it needs
    TensorFlow too, on the JAX backend as well (Keras converts the model
    with jax2tf).

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

    Example:

    >>> import keras, keras_nalu, tempfile
    >>> from keras_nalu.export import export_saved_model
    >>> model = keras.Sequential([keras.Input((2,)), keras_nalu.NAU(1)])
    >>> path = export_saved_model(model, tempfile.mkdtemp(), "adder")
    >>> path.name
    '1'
    """
    model_dir = Path(export_dir) / name
    version = next_version(model_dir) if version is None else int(version)
    if version < 1:
        raise ValueError(f"export expects version >= 1. Received: version={version}")
    path = model_dir / str(version)
    if path.exists():
        raise FileExistsError(
            f"{path} exists; TF Serving versions are immutable: pick another "
            "version or remove it."
        )
    _export_checked(model, path)
    input_shape = [None if d is None else int(d) for d in model.inputs[0].shape]
    entry = {
        "version": version,
        "path": str(Path(name) / str(version)),
        "signature": "serving_default",
        "input_shape": input_shape,
        "input_dtype": "float32",
        **(manifest or {}),
    }
    manifest_path = model_dir / MANIFEST
    document = {"name": name, "versions": {}}
    if manifest_path.exists():
        document = json.loads(manifest_path.read_text())
    document["versions"][str(version)] = entry
    document["latest"] = max(int(v) for v in document["versions"])
    _write_json(manifest_path, document)
    return path


def _export_checked(model: keras.Model, path: Path) -> None:
    """`model.export`, with the input width checked inside the served graph.

    TF Serving feeds a request's tensor into the graph without checking it
    against the signature, so a wrong width would fail in the first MatMul.
    """
    shape = model.inputs[0].shape if len(model.inputs) == 1 else ()
    width = shape[-1] if len(shape) == 2 else None
    backend = keras.backend.backend()
    if backend != "tensorflow":
        require("tensorflow", "SavedModel export")
    if backend != "tensorflow" or width is None:
        options = {}
        if backend == "jax":
            # Serving needs no gradients, and jax2tf cannot trace those of a
            # product (NMU) over a batch of unknown size.
            options["jax2tf_kwargs"] = {"with_gradient": False}
        model.export(str(path), format="tf_saved_model", verbose=False, **options)
        return
    import tensorflow as tf

    message = (
        f"serving_default expects inputs of shape (batch, {width}): {width} "
        f"float32 numbers per example. Send {width} numbers per example."
    )

    def serve(inputs):
        check = tf.debugging.assert_equal(
            tf.shape(inputs)[-1], tf.constant(width, tf.int32), message=message
        )
        with tf.control_dependencies([check]):
            return model(inputs, training=False)

    archive = keras.export.ExportArchive()
    archive.track(model)
    spec = tf.TensorSpec((None, width), tf.float32, name=model.inputs[0].name)
    archive.add_endpoint("serve", serve, input_signature=[spec])
    archive.write_out(str(path), verbose=False)


def save_keras_model(model: keras.Model, path: str | os.PathLike) -> Path:
    """Saves the `.keras` file (architecture, weights, optimizer state)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(path)
    return path


def write_record(record: dict, path: str | os.PathLike) -> Path:
    """Writes a run's result record as JSON (atomically)."""
    path = Path(path)
    _write_json(path, record)
    return path
