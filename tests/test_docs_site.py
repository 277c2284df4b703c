"""The docs site's own code: the README figure's script and the griffe extension.

`mkdocs build --strict` (in `make test`) builds the site; these tests pin
what its helpers do.
"""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def load(relative_path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / relative_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_figure_is_small_and_a_png():
    data = (ROOT / "docs" / "assets" / "extrapolation.png").read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) < 60_000


def test_figure_script_trains_both_models_and_draws(tmp_path, monkeypatch):
    figure = load("docs/figures/extrapolation.py", "docs_figure_extrapolation")
    monkeypatch.delitem(sys.modules, "docs_figure_extrapolation")
    out = tmp_path / "figure.png"
    report = figure.main(["--steps", "50", "--out", str(out)])
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert set(report) == {"NAU → NMU", "MLP (ReLU 64-64)", "formula", "figure"}
    for name in ("NAU → NMU", "MLP (ReLU 64-64)"):
        assert set(report[name]) == {"mse on U[-2, 2]", "mse on U[-6, 6]"}
    # 50 steps solve nothing: explain says so rather than print a formula.
    assert report["formula"].startswith("no formula: ")
    numbers = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert numbers["NAU → NMU"] == report["NAU → NMU"] and numbers["steps"] == 50


@pytest.fixture(scope="module")
def docstrings():
    pytest.importorskip("griffe")
    module = load("docs/hooks/docstrings.py", "docs_hooks_docstrings")
    yield module
    sys.modules.pop("docs_hooks_docstrings", None)


def test_doctest_runs_become_pycon_fences(docstrings):
    text = "Summary.\n\nExample:\n\n>>> f([1, 2])  # doctest: +ELLIPSIS\n[1, 2]\n\nEnd."
    assert docstrings.fence_doctests(text).splitlines() == [
        "Summary.",
        "",
        "**Example:**",
        "",
        "```pycon",
        ">>> f([1, 2])",
        "[1, 2]",
        "```",
        "",
        "End.",
    ]


def test_grouped_arguments_become_one_entry_each(docstrings):
    text = (
        "Summary.\n\nArgs:\n    units: size.\n    start, end,\n"
        "        mode: the ramp;\n        see eq. 14.\n\nReturns:\n    x, y: z."
    )
    assert docstrings.split_argument_groups(text).splitlines() == [
        "Summary.",
        "",
        "Args:",
        "    units: size.",
        "    start: the ramp;",
        "        see eq. 14.",
        "    end: the ramp;",
        "        see eq. 14.",
        "    mode: the ramp;",
        "        see eq. 14.",
        "",
        "Returns:",
        "    x, y: z.",
    ]


def test_every_cell_of_the_backends_table_names_a_test():
    text = (ROOT / "docs" / "backends.md").read_text(encoding="utf-8")
    header = "| backend | layers | `fit` | callbacks | replica engines | export |"
    lines = text[text.index(header) :].splitlines()
    rows = [line for line in lines[2:] if line.startswith("|")][:3]
    assert [row.split("|")[1].strip() for row in rows] == [
        "TensorFlow",
        "JAX",
        "PyTorch",
    ]
    for row in rows:
        for cell in row.split("|")[2:-1]:
            named = re.findall(r"`(tests/[\w/]+\.py)::(test_\w+)`", cell)
            assert named, f"no test named in: {cell.strip()}"
            for path, name in named:
                source = (ROOT / path).read_text(encoding="utf-8")
                assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name}"
