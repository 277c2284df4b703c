"""Griffe extension: reads the package's docstrings as they are written.

Two habits of the docstrings (Keras' own have them too) that griffe's Google
parser does not know are rewritten before it parses a docstring; the source
stays as it is.

- The `Example:` paragraph of `>>>` lines (which `tests/test_docs.py` runs)
  would render as Markdown text (`>>>` as nested quotes, `[1, 2]` as a
  link): each run of doctest lines and its expected output becomes a fenced
  `pycon` block, without `# doctest:` directives.
- An `Args:` entry may describe several arguments at once (`start, end,
  mode: ...`, its names possibly continued on the next line); it becomes
  one entry per argument with the same description.
"""

from __future__ import annotations

import re

import griffe

_DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


def fence_doctests(text: str) -> str:
    """Wraps every run of `>>>` lines and their output in a pycon fence."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip()
        if not stripped.startswith(">>>"):
            if stripped == "Example:" and line == stripped:
                line = "**Example:**"
            out.append(line)
            index += 1
            continue
        indent = line[: len(line) - len(stripped)]
        block = []
        while index < len(lines) and lines[index].strip():
            block.append(_DIRECTIVE.sub("", lines[index].removeprefix(indent)))
            index += 1
        out.extend([f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"])
    return "\n".join(out)


_GROUP = re.compile(r"^(?P<indent>\s+)(?P<names>[\w*]+(?:,\s*[\w*]+)+):(?P<rest>.*)$")


def split_argument_groups(text: str) -> str:
    """Turns `a, b: text` entries of an `Args:` section into one entry each."""
    lines = text.splitlines()
    out: list[str] = []
    in_args = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.strip() in ("Args:", "Arguments:"):
            in_args = True
        elif line and not line[0].isspace():
            in_args = False
        if in_args and line.rstrip().endswith(",") and index + 1 < len(lines):
            # Names continued on the next line: join them.
            following = lines[index + 1].strip()
            if re.match(r"^[\w*]+(?:,\s*[\w*]+)*:", following):
                line = line.rstrip() + " " + following
                index += 1
        match = _GROUP.match(line) if in_args else None
        if match is None:
            out.append(line)
            index += 1
            continue
        indent = match["indent"]
        body = []
        index += 1
        while index < len(lines) and (
            lines[index].startswith(indent + " ") and lines[index].strip()
        ):
            body.append(lines[index])
            index += 1
        for name in re.split(r",\s*", match["names"]):
            out.append(f"{indent}{name}:{match['rest']}")
            out.extend(body)
    return "\n".join(out)


class DocstringHabits(griffe.Extension):
    """Rewrites every docstring griffe loads, as the module docstring says."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is None:
            return
        text = split_argument_groups(obj.docstring.value)
        if ">>>" in text:
            text = fence_doctests(text)
        obj.docstring.value = text
