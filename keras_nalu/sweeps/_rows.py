"""Row-by-row checks of a results CSV, so a malformed row is named by its line
before pandas fills a row cut short with empty cells and counts it."""

from __future__ import annotations

import csv
import io
import os
import re

import pandas as pd

CONFIG_ID = re.compile(r"^c[0-9a-f]{12}$")
"""A sweep's configuration id: `c` and 12 hexadecimal digits."""


def row_lines(path: str | os.PathLike) -> list[int]:
    """The line on which each data row of the CSV at `path` starts (blank
    lines skipped, as pandas skips them).

    Raises:
        ValueError: the file is not UTF-8 text, is empty, breaks the CSV
            quoting rules, has a row of another field count than the header,
            or a last row without its line break (it may be cut short); the
            message names the line and says what to do.
    """
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    lines: list[int] = []
    header = None
    line = 0
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for row in reader:
            start, line = line + 1, reader.line_num
            if not row:
                continue
            if header is None:
                header = row
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"line {start} has {len(row)} fields where the header has "
                    f"{len(header)} (a row cut short?); complete or delete that line"
                )
            lines.append(start)
    except csv.Error as error:
        if str(error) == "unexpected end of data":
            raise ValueError(
                f"line {line + 1} ends inside a quoted field (a row cut short?); "
                "complete or delete that line"
            ) from None
        raise ValueError(f"line {line + 1}: {error}") from None
    if header is None:
        raise ValueError("it is empty (no header line)")
    if lines and lines[-1] == start and not text.endswith(("\n", "\r")):
        raise ValueError(
            f"line {lines[-1]}, the last, has no line break at its end, so it may "
            "be cut short; check it and end it with a line break"
        )
    return lines


def first_bad_line(bad: pd.Series, lines: list[int]) -> int:
    """The line of the first row where the boolean Series `bad` is true."""
    return lines[int(bad.to_numpy().nonzero()[0][0])]


def check_identity(table: pd.DataFrame, lines: list[int]) -> str | None:
    """Why a row cannot be counted as a run, or None if every row can.

    A run needs its `model`, `operation`, `seed` (a whole number >= 0) and,
    in a sweep's file, a well-formed `config_id`.
    """
    for column in ("model", "operation", "seed"):
        if column in table and table[column].isna().any():
            line = first_bad_line(table[column].isna(), lines)
            return f"line {line} has no {column}; complete or delete that line"
    if "seed" in table:
        seeds = pd.to_numeric(table["seed"], errors="coerce")
        bad = seeds.isna() | (seeds < 0) | (seeds % 1 != 0)
        if bad.any():
            index = int(bad.to_numpy().nonzero()[0][0])
            return (
                f"line {lines[index]}: seed must be a whole number >= 0. "
                f"Received: seed={table['seed'].iloc[index]!r}"
            )
    if "config_id" in table:
        ids = table["config_id"].astype(str)
        bad = ~ids.map(lambda value: bool(CONFIG_ID.match(value)))
        if bad.any():
            index = int(bad.to_numpy().nonzero()[0][0])
            return (
                f"line {lines[index]}: malformed config_id {ids.iloc[index]!r} "
                "(expected c and 12 hex digits)"
            )
    return None
