"""Program binaries shipped for the devices whose parameters ship, built from once.

A program is compiled from its OpenCL C text on first use (:mod:`oclla._programs`).
On NVIDIA that is two compilers in turn: OpenCL C to PTX, then PTX to the GPU's
machine code, and the first is about two thirds of the time (H100 and H200: 0.05-1.8 s a
program, 6-9 s for the first calls of the six routines of ``benchmarks/cold_start.py``
in one dtype).  For the NVIDIA devices that have entries in ``oclla/data/tuned.json``,
the package holds the PTX of every program :func:`oclla.warmup` builds there with those
parameters (``oclla/data/prebuilt/<target>.zip``, one store per target: ``nvidia-sm_90``
holds compute capability 9.0, the H100 and the H200).  A program whose exact text and
options have an entry in the device's store is built from that PTX (the second compiler
alone); any other program is compiled from its text as before: another device, other
parameters (a tuning run, an override, a device-limit profile), a kernel source changed
since the store was written (the key is a hash of the text), or a driver that refuses the
PTX (an older one than wrote it).  ``OCLLA_PREBUILT=0`` turns the stores off.

A store is a zip file: ``index.json`` (``{"format": 1, "driver": ..., "devices": [...],
"entries": {key: {"source": ..., "options": [...], "size": bytes}}}``) and one member
``<key>.ptx`` per entry, ``key`` = :func:`key` of the program's text and options.  It is
read as untrusted input: sizes are checked before anything is read, the zip's checksums
before anything is used, and a store or entry that fails any check is ignored (logged at
debug level on the ``oclla`` logger).

Written by ``python -m oclla._prebuilt`` on the device itself (see :func:`main`).
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import logging
import lzma
import os
import sys
import tempfile
import threading
import zipfile
import zlib
from importlib import resources

import pyopencl as cl

from . import kernels_cl

_log = logging.getLogger("oclla")

FORMAT = 1
#: The largest index and the largest program binary a store may hold (the largest PTX
#: of the shipped programs is 0.4 MB).
MAX_INDEX_BYTES = 4 << 20
MAX_BINARY_BYTES = 16 << 20

_lock = threading.Lock()
_indexes: dict = {}               # store path -> its entries ({} if absent or unreadable)

#: What reading a damaged or foreign zip file raises: a missing member (KeyError), a
#: checksum, size or form that does not match (BadZipFile, ValueError), compressed data
#: cut short or garbled (EOFError, LZMAError, zlib.error), an encrypted member
#: (RuntimeError) or an unknown compression method (NotImplementedError).
_UNREADABLE = (OSError, ValueError, KeyError, EOFError, RuntimeError, NotImplementedError,
               zipfile.BadZipFile, lzma.LZMAError, zlib.error)


def enabled() -> bool:
    """Whether programs may be built from shipped binaries (``OCLLA_PREBUILT`` not 0)."""
    return os.environ.get("OCLLA_PREBUILT", "1") != "0"


def target(device: cl.Device) -> str | None:
    """The store a device's programs come from: ``nvidia-sm_<major><minor>`` for an NVIDIA
    device that reports its compute capability, else None (no store)."""
    try:
        if "NVIDIA" not in device.platform.name.upper():
            return None
        major = device.compute_capability_major_nv
        minor = device.compute_capability_minor_nv
    except (cl.Error, AttributeError):
        return None
    return f"nvidia-sm_{major}{minor}"


def key(text: str, options) -> str:
    """The entry of a program: SHA-256 of its options and its full text (headers inlined,
    :func:`oclla.kernels_cl.read_source`), in hex."""
    digest = hashlib.sha256()
    digest.update("\0".join(options).encode())
    digest.update(b"\0\0")
    digest.update(text.encode())
    return digest.hexdigest()


def store_path(name: str) -> str:
    """The path of the shipped store ``name`` (which may not exist)."""
    return str(resources.files("oclla").joinpath("data", "prebuilt", f"{name}.zip"))


def _read_index(archive: zipfile.ZipFile) -> dict:
    """The entries of an open store; ValueError if its index is missing, too large or
    malformed."""
    info = archive.getinfo("index.json")
    if info.file_size > MAX_INDEX_BYTES:
        raise ValueError(f"index of {info.file_size} bytes")
    data = json.loads(archive.read(info).decode())
    if not (isinstance(data, dict) and data.get("format") == FORMAT
            and isinstance(data.get("entries"), dict)):
        raise ValueError("not a format-1 index")
    entries = data["entries"]
    for k, e in entries.items():
        if not (isinstance(e, dict) and isinstance(e.get("size"), int)
                and 0 < e["size"] <= MAX_BINARY_BYTES and isinstance(e.get("source"), str)
                and isinstance(e.get("options"), list)):
            raise ValueError(f"malformed entry {k!r}")
    return entries


def _entries(path: str) -> dict:
    """The entries of the store at ``path``, read once per process ({} if it is absent
    or fails a check)."""
    with _lock:
        if path in _indexes:
            return _indexes[path]
    entries = {}
    if os.path.exists(path):
        try:
            with zipfile.ZipFile(path) as archive:
                entries = _read_index(archive)
        except _UNREADABLE as exc:
            _log.debug("ignoring the program store %s: %s", path, exc)
    with _lock:
        _indexes[path] = entries
    return entries


def forget() -> None:
    """Read the stores' indexes again at their next use (after a store is rewritten)."""
    with _lock:
        _indexes.clear()


def binary(device: cl.Device, text: str, options) -> bytes | None:
    """The shipped binary of the program (text, options) for ``device``, or None."""
    name = target(device) if enabled() else None
    if name is None:
        return None
    path = store_path(name)
    k = key(text, options)
    entry = _entries(path).get(k)
    if entry is None:
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(f"{k}.ptx")
            if info.file_size != entry["size"]:
                raise ValueError(f"{info.file_size} bytes where the index says {entry['size']}")
            return archive.read(info)          # checks the member's CRC
    except _UNREADABLE as exc:
        _log.debug("ignoring the stored binary of %s in %s: %s", entry["source"], path, exc)
        return None


def build(ctx: cl.Context, text: str, options, source: str) -> cl.Program | None:
    """The program (text, options) built from its shipped binary on ``ctx``'s one device,
    or None where there is none or the driver refuses it (the caller then compiles
    the text)."""
    if len(ctx.devices) != 1:
        return None
    data = binary(ctx.devices[0], text, options)
    if data is None:
        return None
    try:
        return cl.Program(ctx, ctx.devices, [data]).build(options=list(options))
    except cl.Error as exc:
        _log.debug("the stored binary of kernels_cl/%s %s did not build, compiling the "
                   "source: %s", source, " ".join(options), exc)
        return None


def write(path: str, programs, *, driver: str, devices) -> tuple:
    """Write the store at ``path``: ``programs`` ((source, options, binary) each) and the
    entries of the store already there whose key still matches its source's text
    (entries of changed sources are dropped).  Returns (entries written, entries
    dropped)."""
    old = _entries(path)
    kept, dropped, old_devices = {}, 0, []
    if old:
        with zipfile.ZipFile(path) as archive:
            old_devices = json.loads(archive.read("index.json").decode()).get("devices", [])
            for k, e in old.items():
                if _current(k, e):
                    kept[k] = (e["source"], tuple(e["options"]), archive.read(f"{k}.ptx"))
                else:
                    dropped += 1
    for source, options, data in programs:
        kept[key(kernels_cl.read_source(source), options)] = (source, tuple(options), data)
    index = {"format": FORMAT, "driver": driver,
             "devices": sorted(set(old_devices) | set(devices)),
             "entries": {k: {"source": s, "options": list(o), "size": len(d)}
                         for k, (s, o, d) in sorted(kept.items())}}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".zip")
    os.close(fd)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_LZMA) as archive:
            archive.writestr("index.json", json.dumps(index, indent=1, sort_keys=True))
            for k, (_, _, data) in sorted(kept.items()):
                archive.writestr(f"{k}.ptx", data)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    forget()
    return len(kept), dropped


def _current(k: str, entry: dict) -> bool:
    """Whether a store entry is the program its source's text and options give now."""
    try:
        return key(kernels_cl.read_source(entry["source"]), entry["options"]) == k
    except (OSError, ValueError):
        return False


def status(device: cl.Device) -> tuple | None:
    """(entries, entries current) of ``device``'s store, or None where it has none."""
    name = target(device)
    if name is None or not os.path.exists(store_path(name)):
        return None
    entries = _entries(store_path(name))
    return len(entries), sum(_current(k, e) for k, e in entries.items())


def main(argv=None) -> int:
    """``python -m oclla._prebuilt [--dtype both] [--entries-of DEVICE]``: build every
    program :func:`oclla.warmup` builds on the selected device (``OCLLA_DEVICE``) from
    source, and add their binaries to the device's store (``--store`` to write another
    file).  ``--entries-of NAME`` chooses the parameters as the shipped entries of the
    device NAME give them (a device of the same target: the H100's on an H200)."""
    parser = argparse.ArgumentParser(prog="python -m oclla._prebuilt")
    parser.add_argument("--dtype", default="both", choices=("float32", "float64", "both"))
    parser.add_argument("--entries-of", default=None, metavar="DEVICE")
    parser.add_argument("--store", default=None, metavar="PATH")
    args = parser.parse_args(argv)
    os.environ["OCLLA_PREBUILT"] = "0"           # every program from its source
    import oclla
    from . import _params, _programs
    queue = oclla.get_queue()
    device = queue.device
    name = target(device)
    if name is None and args.store is None:
        parser.error(f"{device.name} has no store target; give --store")
    if args.entries_of:
        _use_entries_of(args.entries_of, device)
    _params.reload()
    oclla.warmup(None if args.dtype == "both" else args.dtype, queue=queue)
    programs = [(source, options, prg.binaries[0])
                for (ctx, source, options), prg in _programs.programs().items()
                if ctx.devices == [device]]
    path = args.store or store_path(name)
    written, dropped = write(path, programs, driver=device.driver_version,
                             devices=[args.entries_of or device.name])
    print(f"{path}: {written} programs ({len(programs)} built now, {dropped} stale dropped)")
    return 0


def _use_entries_of(other: str, device: cl.Device) -> None:
    """Point ``OCLLA_TUNED_FILE`` at a file holding the shipped entries of the device
    ``other`` under ``device``'s name and driver."""
    from . import _params
    _, shipped = _params._stored_entries()
    entries = [{**e, "device": device.name, "driver": device.driver_version}
               for e in shipped if e.get("device") == other]
    if not entries:
        raise SystemExit(f"no shipped entries for {other!r}")
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump({"version": _params.DATA_VERSION, "entries": entries}, f)
    atexit.register(os.remove, path)
    os.environ["OCLLA_TUNED_FILE"] = path


if __name__ == "__main__":
    sys.exit(main())
