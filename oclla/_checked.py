"""Remembered verdicts on what a device can build and run, in memory and in the user's cache.

A verdict is ``(ok, why)`` under a key naming the device, its driver, the
device-limit profile, the dtype and what was tried (a parameter family and its
values, or a vector width).  Verdicts live in ``checked.json`` beside the
user's tuned-parameter file (:func:`oclla._params.user_file`), so a second
process on the same machine does not repeat a check; ``OCLLA_CHECKED_FILE``
names another file.  The file is untrusted input: anything malformed is
ignored, and writes replace it atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading

VERSION = 1
_lock = threading.RLock()
_memory: dict = {}           # key -> (ok, why)
_loaded_from: list = []      # [path] once the file was read


def path() -> str:
    env = os.environ.get("OCLLA_CHECKED_FILE")
    if env:
        return env
    from ._params import user_file
    return os.path.join(os.path.dirname(user_file()), "checked.json")


def key(info, dtype_name: str, what: str, values=None) -> str:
    """The key of a verdict on ``what`` (with parameter ``values``) for this device."""
    limits = (f"{info.profile}:{info.kind}:{info.max_work_group_size}:"
              f"{'x'.join(map(str, info.max_work_item_sizes))}:{info.local_mem_size}:"
              f"{info.native_width_float}:{info.native_width_double}:{int(info.fp64)}:"
              f"{info.max_alloc_size}:{info.global_mem_size}"
              if info.profile else "")
    parts = [info.name, info.driver_version, limits, dtype_name, what]
    if values is not None:
        parts.append(json.dumps(values, sort_keys=True))
    return "|".join(parts)


def _read_file(file: str) -> dict:
    try:
        if not os.path.isfile(file) or os.path.getsize(file) > 1 << 24:
            return {}
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return {}
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}
    return {k: (bool(v[0]), str(v[1])) for k, v in entries.items()
            if isinstance(k, str) and isinstance(v, list) and len(v) == 2}


def _ensure_loaded() -> None:
    file = path()
    if _loaded_from != [file]:
        _memory.clear()
        _memory.update(_read_file(file))
        _loaded_from[:] = [file]


def get(k: str):
    """The verdict ``(ok, why)`` under ``k``, or None."""
    with _lock:
        _ensure_loaded()
        return _memory.get(k)


def put(k: str, ok: bool, why: str = "") -> None:
    """Remember a verdict (merged into the file with what other processes wrote)."""
    with _lock:
        _ensure_loaded()
        _memory[k] = (ok, why)
        file = path()
        merged = {**_read_file(file), k: (ok, why)}
        try:
            os.makedirs(os.path.dirname(file) or ".", exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(file) or ".", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"version": VERSION,
                           "entries": {k2: list(v) for k2, v in merged.items()}}, f, indent=0)
            os.replace(tmp, file)
        except OSError:
            pass                   # a read-only cache: the verdict stays in memory


def forget() -> None:
    """Drop the in-memory verdicts (the file is read again at the next lookup)."""
    with _lock:
        _memory.clear()
        _loaded_from.clear()
