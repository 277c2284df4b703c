"""Every code block of the README and of the docs site runs, or is checked.

- A ```python block runs. The blocks of one page run in order in one
  namespace, in a temporary folder that holds a copy of the committed
  reference models (`saved_models/reference-*`), so a page may load them and
  its exports land in the temporary folder.
- `<!-- test: replace OLD -> NEW -->` on the line before a block runs it with
  OLD replaced by NEW (OLD must occur): a block that shows a full budget runs
  with a tiny one. `<!-- test: skip REASON -->` does not run the block; the
  reason is required. Neither marker shows on the rendered page.
- A ```bash block is checked line by line: every `keras-nalu ...` command is
  parsed by the CLI's own parser (sub-command, flags and their values), every
  `make TARGET` names a target of the Makefile, and every `python FILE ...`
  names a file of the repository. Other commands must be known tools.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "examples" / "README.md",
        ROOT / "benchmarks" / "README.md",
        ROOT / "saved_models" / "README.md",
        *(ROOT / "docs").rglob("*.md"),
    ]
)
FENCE = re.compile(
    r"(?P<marker><!-- test: (?P<directive>.*?) -->\n)?"
    r"^```(?P<language>[\w-]*)[^\n]*\n(?P<code>.*?)^```",
    re.S | re.M,
)
REPLACE = re.compile(r"replace (?P<old>.+?) -> (?P<new>.+)")
#: Commands a bash block may show that these tests do not run or parse.
OTHER_TOOLS = {
    "saved_model_cli",
    "pip",
    "tensorflow_model_server",
    "bash",
    "git",
    "ray",
    "kubectl",
}


def blocks(page: Path, language: str) -> list[tuple[int, str, str | None]]:
    """`(line, code, directive)` of every block of `language` on `page`."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        if match["language"] == language:
            line = text.count("\n", 0, match.start("code"))
            found.append((line, match["code"], match["directive"]))
    return found


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def prepared(code: str, directive: str | None, where: str) -> str | None:
    """The code to run, or None for a skipped block."""
    if directive is None:
        return code
    if directive.startswith("skip"):
        reason = directive.removeprefix("skip").strip()
        assert reason, f"{where}: `test: skip` needs a reason"
        return None
    for part in directive.split(";"):
        match = REPLACE.fullmatch(part.strip())
        assert match, f"{where}: unknown test directive {part!r}"
        assert match["old"] in code, f"{where}: {match['old']!r} not in the block"
        code = code.replace(match["old"], match["new"])
    return code


PYTHON_PAGES = [page for page in PAGES if blocks(page, "python")]
BASH_PAGES = [page for page in PAGES if blocks(page, "bash")]


def test_the_readme_and_the_docs_show_code():
    assert ROOT / "README.md" in PYTHON_PAGES
    assert len(PYTHON_PAGES) >= 10 and len(BASH_PAGES) >= 5


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=page_id)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    models = tmp_path / "saved_models"
    for reference in (ROOT / "saved_models").glob("reference-*"):
        shutil.copytree(reference, models / reference.name)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for line, code, directive in blocks(page, "python"):
        where = f"{page_id(page)}, python block at line {line + 1}"
        code = prepared(code, directive, where)
        if code is None:
            continue
        # A failure names the page and the block's line in its traceback.
        exec(compile(code, where, "exec"), namespace)


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([\w-]+):", text, re.M))


def _check_keras_nalu(argv: list[str], where: str) -> None:
    from keras_nalu import cli

    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            cli.build_parser().parse_args(argv)
    except SystemExit as exit_:
        assert exit_.code == 0, f"{where}: keras-nalu {shlex.join(argv)}: {output}"


def _commands(code: str) -> list[str]:
    """The block's commands, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line for line in joined.splitlines() if line.strip()]


def check_command(line: str, where: str) -> None:
    words = shlex.split(line, comments=True)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        words = words[1:]  # an environment variable for this command only
    if not words:
        return
    if words[0] == "nice":
        words = words[3:] if words[1:2] == ["-n"] else words[1:]
    command, *args = words
    if command == "keras-nalu":
        _check_keras_nalu(args, where)
    elif command == "make":
        assert set(args) <= _make_targets(), f"{where}: no make target {args}"
    elif Path(command).name in ("python", "python3"):
        if args[0] == "-m":
            modules = ("pytest", "keras_nalu", "build", "venv")
            assert args[1] in modules, f"{where}: {line}"
        else:
            assert (ROOT / args[0]).is_file(), f"{where}: no file {args[0]}"
    else:
        # a tool may be named by its path, e.g. a virtual environment's pip
        assert Path(command).name in OTHER_TOOLS, (
            f"{where}: unknown command {command!r}"
        )


@pytest.mark.parametrize("page", BASH_PAGES, ids=page_id)
def test_bash_blocks_name_real_commands(page):
    for line, code, directive in blocks(page, "bash"):
        where = f"{page_id(page)}, bash block at line {line + 1}"
        if prepared(code, directive, where) is None:
            continue
        for command in _commands(code):
            check_command(command, where)


def test_the_readme_links_to_files_that_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert len(targets) >= 10
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


@pytest.mark.parametrize(
    "line",
    [
        "keras-nalu train --no-such-flag",
        "keras-nalu train --iterations many",
        "make no-such-target",
        "python benchmarks/no_such_script.py",
        "rm -rf /",
    ],
)
def test_a_wrong_command_fails_the_check(line):
    with pytest.raises(AssertionError):
        check_command(line, "test")
