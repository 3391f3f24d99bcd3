"""The kernel-parameter reference, docs/parameters.md, written from :mod:`oclla._knobs`.

For every family: what it parameterises; for every knob: its meaning, the
values it may take, its default on two example devices (derived by the same
rules a real device gets), the values the tuner tries and the files that
read it; then the family's settle step and cross-knob constraints::

    python -m oclla._knobs_doc > docs/parameters.md
"""

from __future__ import annotations

import argparse
import re
import sys

from ._device import DeviceInfo
from ._knobs import FAMILIES, Device, Tied, derive


def _example_devices():
    """(title, Device) of the devices the reference derives defaults for."""
    base = dict(index=0, vendor="", platform="", driver_version="", opencl_c_version="",
                fp64=True, compute_units=1, global_mem_size=8 << 30, max_alloc_size=2 << 30,
                max_clock_mhz=1000, profile=None)
    examples = (("GPU: 1024-item work-groups, 48 KiB local memory", "GPU", 1024, 48 << 10, 1),
                ("CPU: 4096-item work-groups, 8-wide float vectors", "CPU", 4096, 4 << 20, 8))
    out = []
    for title, kind, wg, local, width in examples:
        info = DeviceInfo(name=title, kind=kind, max_work_group_size=wg,
                          max_work_item_sizes=(wg, wg, min(wg, 64)), local_mem_size=local,
                          native_width_float=width, native_width_double=max(1, width // 2),
                          **base)
        out.append((title, Device(info, 4, native=lambda w=width: w,
                                  builds=lambda width: True)))
    return out


def _cell(value) -> str:
    if value is None or value == ():
        return ""
    if isinstance(value, Tied):
        return f"= {value.text}"
    if callable(value):
        return " ".join(value.__doc__.split()).split(": ", 1)[1].rstrip(".")
    return ", ".join(repr(v) if isinstance(v, str) else str(v) for v in value)


def markdown() -> str:
    """The reference of every family and knob (docs/parameters.md)."""
    devices = _example_devices()
    lines = ["# Kernel parameters", "",
             "Generated from the declarations in `oclla/_knobs.py` by "
             "`python -m oclla._knobs_doc > docs/parameters.md`; do not edit.", "",
             "`oclla._params.params(queue, family, dtype)` returns a family's set: an "
             "override, a tuned entry for the device (`oclla tune`, "
             "`oclla/data/tuned.json`) or the defaults derived from the device's limits. "
             "The defaults below are float32 ones on two example devices:", ""]
    lines += [f"- **{chr(65 + i)}**: {title}" for i, (title, _) in enumerate(devices)]
    for fam in FAMILIES.values():
        derived = [derive(fam.name, d) for _, d in devices]
        lines += ["", f"## `{fam.name}`", "", fam.doc, "",
                  "| knob | meaning | allowed | " + " | ".join(
                      f"default {chr(65 + i)}" for i in range(len(devices)))
                  + " | tuned (GPU) | tuned (CPU) | read by |",
                  "|---" * (6 + len(devices)) + "|"]
        for k in fam.knobs:
            tuned = k.tuned or {}
            defaults = [str(p.get(k.name, "")) for p in derived]
            readers = ", ".join(f"`{r}`" for r in k.read_by)
            lines.append(f"| `{k.name}` | {k.doc} | {k.allowed.text} | "
                         + " | ".join(defaults)
                         + f" | {_cell(tuned.get('GPU'))} | {_cell(tuned.get('CPU'))} | "
                         f"{readers} |")
        for title, fn in (("Derived sets are then settled", fam.settle),
                          ("Across knobs", fam.constraint)):
            if fn is not None and fn.__doc__:
                text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(fn.__doc__.split()))
                lines += ["", f"{title}: {text}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="python -m oclla._knobs_doc",
                            description="Print the kernel-parameter reference (Markdown)."
                            ).parse_args(argv)
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
