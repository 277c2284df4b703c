"""The file rules of `keras_nalu._files`: the atomic write, the backup folder."""

import ast
import os
import re

import pytest

from keras_nalu._files import atomic_write, backup_folder, temporary_path


def test_the_file_is_replaced_whole_and_no_temporary_is_left(tmp_path):
    path = tmp_path / "new" / "table.csv"  # the folder is created
    with atomic_write(path, encoding="utf-8") as handle:
        handle.write("a\n")
        assert not path.exists()  # nothing there until the block succeeds
        assert handle.name == str(temporary_path(path))
    assert path.read_text(encoding="utf-8") == "a\n"
    assert os.listdir(path.parent) == ["table.csv"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(path, "wb") as handle:
            handle.write(b"half of the new")
            raise RuntimeError("disk full")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["table.csv"]


def test_a_named_temporary_is_used_and_a_bad_mode_refused(tmp_path):
    path, partial = tmp_path / "chunk.npz", tmp_path / ".chunk.npz.partial"
    with atomic_write(path, "wb", temporary=partial) as handle:
        assert handle.name == str(partial)
        handle.write(b"\x00")
    assert path.read_bytes() == b"\x00" and not partial.exists()
    with pytest.raises(ValueError, match="mode 'w' or 'wb'"):
        with atomic_write(path, "a"):
            pass


def test_a_sweeps_backups_lie_in_one_folder_beside_its_results_file(tmp_path):
    from keras_nalu.experiments import ExperimentConfig
    from keras_nalu.sweeps.chunks import Chunk, backup_files, chunk_backup

    results = tmp_path / "sweep.csv"
    assert backup_folder(results) == tmp_path / "sweep.csv.backup"
    backup = chunk_backup(results, Chunk(ExperimentConfig(), (0, 1)))
    assert backup.parent == backup_folder(results)
    backup.parent.mkdir()
    backup.write_bytes(b"")
    assert backup_files(results) == [backup]


def test_the_backup_folders_name_is_spelled_out_in_one_place():
    from tests.package_source import module_files

    spelled = [
        module
        for module, path in module_files().items()
        if '".backup"' in path.read_text(encoding="utf-8")
    ]
    assert spelled == ["keras_nalu._files"]


def test_a_keras_model_with_weights_not_finite_is_saved_with_a_warning(tmp_path):
    import keras
    import numpy as np

    from keras_nalu._files import save_keras_model
    from keras_nalu.layers import NAU

    layer = NAU(1, name="nau")
    model = keras.Sequential([keras.Input((2,)), layer], name="run")
    path = tmp_path / "model.keras"
    layer.kernel.assign([[np.nan], [-np.inf]])
    with pytest.warns(
        UserWarning,
        match=r"model\.keras holds 2 weights that are not finite, saved as they "
        r"are: run/nau/kernel\[0,0\] = nan, run/nau/kernel\[1,0\] = -inf$",
    ):
        save_keras_model(model, path)
    assert path.is_file()


def test_a_keras_model_that_fails_to_save_leaves_the_old_file(tmp_path):
    import keras

    from keras_nalu._files import save_keras_model

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    path = tmp_path / "model.keras"
    path.write_bytes(b"the run before")

    def half_a_save(target):
        with open(target, "wb") as handle:
            handle.write(b"half")
        raise OSError("disk full")

    model.save = half_a_save
    with pytest.raises(OSError, match="disk full"):
        save_keras_model(model, path)
    assert path.read_bytes() == b"the run before"
    assert os.listdir(tmp_path) == ["model.keras"]


# --- the rule: every file the package writes goes through `_files` ------------------

WRITE_METHODS = {
    "write_text",
    "write_bytes",
    "savefig",
    "to_csv",
    "to_json",
    "to_parquet",
    "to_pickle",
    "to_excel",
    "to_feather",
    "to_hdf",
    "tofile",
    "save",
    "savez",
    "savez_compressed",
    "savetxt",
    "touch",
}
"""Methods that write a file at the path they are given (`to_csv()` with no
path returns the text and writes nothing)."""

MOVES = {
    "os": {"replace", "rename", "renames", "link", "symlink"},
    "shutil": {"copy", "copy2", "copyfile", "copytree", "move"},
}
"""Functions that put a file in place of another."""

WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _dotted(node) -> str:
    """`os.replace` for the call `os.replace(...)`'s function, else ''."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def _writing_mode(call: ast.Call) -> bool:
    """An `open(...)` or `x.open(...)` whose mode writes ("w", "a", "x", "+")."""
    modes = [*call.args[:2], *(k.value for k in call.keywords if k.arg == "mode")]
    return any(
        isinstance(mode, ast.Constant)
        and isinstance(mode.value, str)
        and re.fullmatch(r"[rwaxbt+]+(:\w*)?", mode.value)
        and set(mode.value) & set("wax+")
        for mode in modes
    )


def _target(call: ast.Call, name: str):
    """The argument a write goes to: `dump(obj, file)`'s second, else the first."""
    keywords = {k.arg: k.value for k in call.keywords}
    for key in ("path_or_buf", "fname", "file", "fp", "path"):
        if key in keywords:
            return keywords[key]
    index = 1 if name == "dump" else 0
    return call.args[index] if len(call.args) > index else None


def _handles(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Names bound by `with atomic_write(...) as name`, and names only locked:
    `lock = open(...)` then `fcntl.flock(lock, ...)` (a lock file: nothing
    is written in it)."""
    atomic, locked = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With):
            for item in node.items:
                call, name = item.context_expr, item.optional_vars
                if (
                    isinstance(call, ast.Call)
                    and "atomic_write" in ast.unparse(call.func)
                    and isinstance(name, ast.Name)
                ):
                    atomic.add(name.id)
        if (
            isinstance(node, ast.Call)
            and _dotted(node.func) == "fcntl.flock"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            locked.add(node.args[0].id)
    return atomic, locked


def direct_writes(source: str) -> list[str]:
    """The calls of `source` that write a file without `_files`: each as
    `line: call`. A write into a handle of `atomic_write` is not one."""
    tree = ast.parse(source)
    atomic, locked = _handles(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if any(isinstance(t, ast.Name) and t.id in locked for t in node.targets):
                node.value.locks = True  # opened to be locked
        if not isinstance(node, ast.Call) or getattr(node, "locks", False):
            continue
        function, dotted = node.func, _dotted(node.func)
        name = getattr(function, "attr", getattr(function, "id", ""))
        if name == "open" and dotted != "os.open":
            writes = _writing_mode(node)
        elif dotted == "os.open":
            flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            devnull = node.args and _dotted(node.args[0]) == "os.devnull"
            writes = bool(flags & WRITE_FLAGS) and not devnull
        elif isinstance(function, ast.Attribute) and name in WRITE_METHODS | {"dump"}:
            target = _target(node, name)
            writes = target is not None and not (
                isinstance(target, ast.Name) and target.id in atomic
            )
        else:
            module, _, attr = dotted.partition(".")
            writes = attr in MOVES.get(module, ())
        if writes:
            found.append(f"{node.lineno}: {ast.unparse(node)[:60]}")
    return found


def test_the_rule_finds_each_way_of_writing_a_file():
    writes = [
        'open(path, "w")',
        'open(path, mode="ab")',
        'path.open("w", encoding="utf-8")',
        'tarfile.open(path, "w:gz")',
        'path.write_text("a")',
        "path.write_bytes(b'a')",
        "figure.savefig(path, dpi=120)",
        "table.to_csv(path, index=False)",
        "np.savez_compressed(path, a=a)",
        "model.save(path)",
        "json.dump(record, handle)",
        "os.replace(temporary, path)",
        "shutil.copy(path, other)",
        "os.open(path, os.O_WRONLY | os.O_CREAT)",
    ]
    for line in writes:
        assert direct_writes(line) == [f"1: {ast.unparse(ast.parse(line))}"], line
    reads = [
        "open(path)",
        'open(path, "rb")',
        'path.open(encoding="utf-8")',
        "Image.open(path)",
        "path.read_text()",
        "table.to_csv(index=False)",  # the text, no file
        "text.replace('a', 'b')",
        "table.copy()",
        "os.open(path.parent, os.O_RDONLY)",
        "os.open(os.devnull, os.O_WRONLY)",
        'with atomic_write(path, "wb") as file:\n    np.savez(file, a=a)',
        "with atomic_write(path, newline='') as handle:\n"
        "    table.to_csv(handle, index=False)\n"
        "    json.dump(record, handle)",
        'lock = open(lock_path, "a")\nfcntl.flock(lock, fcntl.LOCK_EX)',
    ]
    for source in reads:
        assert direct_writes(source) == [], source


def test_every_file_the_package_writes_goes_through_files():
    """`keras_nalu._files` writes (atomically: `atomic_write`); no other
    module opens a file to write, saves a table or a figure to a path, or
    moves a file in place."""
    from tests.package_source import module_files, place

    found = {
        f"{place(path)}:{line}"
        for module, path in module_files().items()
        if module != "keras_nalu._files"
        for line in direct_writes(path.read_text(encoding="utf-8"))
    }
    assert not found, f"files written without keras_nalu._files: {sorted(found)}"
