"""The probe's table: a row per way to fill a device and per device, call by call.

`benchmarks/gpu_probe.py` adds to it; `measured_packing` reads from the
committed tables whether packing pays on a device kind.
"""

from __future__ import annotations

import json
from pathlib import Path

TABLE = "probe.json"
"""The table's file in OUT (and beside the committed rows); `probe.md` is its
Markdown."""


def read_table(path: Path) -> dict:
    """A probe table: `settings` (a row per setting measured, or failed, on a
    device), `checks` (the bit-for-bit checks) and `calls`; empty if `path`
    is missing. A table of a single call (before the table grew) is read as
    one call."""
    if not path.is_file():
        return {"settings": [], "checks": [], "calls": []}
    document = json.loads(path.read_text(encoding="utf-8"))
    if "calls" in document:
        return document
    rows = document.get("settings", [])
    trained_on = [r for r in rows if r["setting"].endswith(" (trained on)")]
    call = {
        key: document[key]
        for key in ("date", "seconds", "slice_s", "fastest", "machine")
        if key in document
    }
    if trained_on:
        name = trained_on[0]["setting"].removesuffix(" (trained on)")
        call["trained_on"] = {**trained_on[0], "setting": name}
    devices = {row["device"] for row in rows if "device" in row}
    call["device"] = devices.pop() if len(devices) == 1 else "?"
    rows = [
        {"date": document.get("date", ""), **row}
        for row in rows
        if row not in trained_on
    ]
    call["measured"] = [row["setting"] for row in rows]
    identity = document.get("identity")
    return {
        "settings": rows,
        "checks": [identity] if identity else [],
        "calls": [call],
    }


def write_table(out: Path, document: dict) -> None:
    """OUT/probe.json and OUT/probe.md."""
    text = json.dumps(document, indent=2) + "\n"
    (out / TABLE).write_text(text, encoding="utf-8")
    (out / "probe.md").write_text(table(document), encoding="utf-8")


def measured(document: dict, device: str) -> dict[str, dict]:
    """Each setting's last measured row on `device` (failed rows left out)."""
    return {
        row["setting"]: row
        for row in document["settings"]
        if row.get("device") == device and row.get("seed_steps")
    }


def fastest(document: dict, device: str) -> str | None:
    """The setting with the most seed-steps/s on `device`, if any was measured."""
    rows = measured(document, device).values()
    best = max(rows, key=lambda row: row["seed_steps_per_second"], default=None)
    return None if best is None else best["setting"]


def measured_packing(documents) -> dict[str, int]:
    """The replicas a pack holds by default on each device kind, by the probe
    tables `documents`: where a table measured `packed` faster than
    `one-by-one` and its check found packed steps bit for bit equal to steps
    alone, the pack size it measured; a device not listed packs nothing.

    `keras_nalu.sweeps.local.MEASURED_PACK_REPLICAS` is this of the committed
    tables (`tests/benchmarks/test_gpu_probe.py` checks it).
    """
    packing = {}
    for document in documents:
        devices = {row.get("device") for row in document["settings"]} - {None}
        for device in sorted(devices):
            rows = measured(document, device)
            checks = [
                check
                for check in document["checks"]
                if check.get("device") == device and "packed" in check
            ]
            if "packed" not in rows or "one-by-one" not in rows or not checks:
                continue
            faster = (
                rows["packed"]["seed_steps_per_second"]
                > rows["one-by-one"]["seed_steps_per_second"]
            )
            if faster and checks[-1]["packed"]:
                options = rows["packed"]["options"].split()
                replicas = options[options.index("--pack-replicas") + 1]
                packing[device] = int(replicas)
    return packing


def table(probe: dict) -> str:
    """The probe table's Markdown: a row per setting and device, the checks,
    the calls."""
    lines = [
        "Each way to fill a device, on the papers' plan "
        "(`benchmarks/gpu_probe.sh`): a row per setting and device, added by the "
        "call that measured it. `seed-steps/s` leaves the compile time out, "
        "`wall seed-steps/s` keeps it.",
        "",
        "| setting | device | JAX | measured | options | slice s | runs | seed-steps "
        "| wall s | compile s | seed-steps/s | wall seed-steps/s |",
        "|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for row in probe["settings"]:
        lines.append(_row(row))
    for check in probe["checks"]:
        if "packed" not in check:
            lines += ["", f"The bit-for-bit check failed: {check.get('error')}."]
            continue
        verdicts = [
            f"{name} {'yes' if check[name] else 'NO'}"
            for name in check
            if name == "packed" or name.startswith("unrolled")
        ]
        lines += [
            "",
            f"Every bit as trained alone on {check['device']} "
            f"({', '.join(check['recipes'])}, 10 replicas each, "
            f"{check['steps']:,} steps): " + "; ".join(verdicts) + ".",
        ]
    lines += ["", "The calls:", ""]
    lines += [f"- {_call_line(call)}" for call in probe["calls"]]
    return "\n".join(lines) + "\n"


def _row(row: dict) -> str:
    start = (
        f"| {row['setting']} | {row.get('device', '?')} | {row.get('jax', '?')} | "
        f"{row.get('date', '')} | {row['options']} | "
    )
    if "seed_steps" not in row:
        return start + f"| failed: {row.get('error', '')} | | | | | |"
    return start + (
        f"{row['slice_s']:.0f} | {row['runs']} | {row['seed_steps']:,} | "
        f"{row['seconds']:.1f} | {row['compile_s']:.1f} | "
        f"{row['seed_steps_per_second']:,.0f} | "
        f"{row['wall_seed_steps_per_second']:,.0f} |"
    )


def _call_line(call: dict) -> str:
    text = f"{call.get('date', '?')}, {call.get('device', '?')}"
    if "seconds" in call:
        text += f", {call['seconds']:.0f} s"
    if "measured" in call:
        text += f": measured {', '.join(call['measured']) or 'nothing'}"
    best = call.get("fastest")
    trained = call.get("trained_on")
    if trained:
        name = trained["setting"]
        text += (
            f"; the fastest there so far, {name}, "
            if best
            else f"; nothing measured there yet, {name} "
        )
        if "seed_steps" in trained:
            text += (
                f"trained on ({trained['seed_steps']:,} seed-steps in "
                f"{trained['seconds']:.0f} s)"
            )
        else:
            text += f"failed to train on: {trained['error']}"
    elif best:
        text += f"; the fastest there so far: {best}, not trained on"
    if call.get("failed"):
        text += f"; failed: {', '.join(call['failed'])}"
    machine = call.get("machine")
    if machine:
        text += (
            f". Load average {machine['load_average_before'][0]:.1f} before, "
            f"{machine['load_average_after'][0]:.1f} after, on {machine['cpus']} CPUs"
        )
    return text + "."
