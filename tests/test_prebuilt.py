"""Programs built from the binaries shipped for a device (oclla._prebuilt): used where the
program's text and options match an entry, compiled from source otherwise, and a damaged
store or a binary the driver refuses never stops a build.

The shipped store holds NVIDIA's PTX, which the CPU device cannot load; these tests write
stores of the CPU device's own binaries (PoCL's) under a target name of their own."""

import json
import logging
import os
import subprocess
import sys
import zipfile

import numpy as np
import pyopencl as cl
import pytest

import oclla
from oclla import _prebuilt, _programs, kernels_cl
from oclla.cli import main as cli_main

UTIL = "util.cl"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """Every device's store is tmp_path/test.zip (written by the test)."""
    monkeypatch.setattr(_prebuilt, "target", lambda device: "test")
    monkeypatch.setattr(_prebuilt, "store_path", lambda name: str(tmp_path / f"{name}.zip"))
    monkeypatch.delenv("OCLLA_PREBUILT", raising=False)
    _prebuilt.forget()
    yield str(tmp_path / "test.zip")
    _prebuilt.forget()


def _options(dtype=np.float32):
    return _programs.build_options(dtype, {"INDEX64": 0})


def _fresh_queue(queue):
    """A queue on a new context of the same device: its programs are built anew."""
    return cl.CommandQueue(cl.Context([queue.device]),
                           properties=cl.command_queue_properties.PROFILING_ENABLE)


def _write_util(queue, path, data=None):
    """A store holding util.cl's float32 program (its binary, or ``data``)."""
    prg = _programs._build(queue.context, UTIL, _options())
    _prebuilt.write(path, [(UTIL, _options(), data or prg.binaries[0])], driver="d",
                    devices=["dev"])


def test_key_follows_the_text_and_the_options():
    text = kernels_cl.read_source(UTIL)
    k = _prebuilt.key(text, _options())
    assert len(k) == 64 and int(k, 16) >= 0
    assert _prebuilt.key(text, _options()) == k
    assert _prebuilt.key(text + " ", _options()) != k
    assert _prebuilt.key(text, _options(np.float64)) != k
    assert _prebuilt.key(text, _options()[1:]) != k


class _Device:
    """A stand-in device: a platform name and, optionally, a compute capability."""

    def __init__(self, platform, capability=None):
        self.platform = type("P", (), {"name": platform})()
        self._capability = capability

    @property
    def compute_capability_major_nv(self):
        if self._capability is None:
            raise cl.LogicError("clGetDeviceInfo", cl.status_code.INVALID_VALUE, "")
        return self._capability[0]

    @property
    def compute_capability_minor_nv(self):
        return self._capability[1]


def test_target_names_nvidia_compute_capabilities_only(queue):
    assert _prebuilt.target(_Device("NVIDIA CUDA", (9, 0))) == "nvidia-sm_90"
    assert _prebuilt.target(_Device("NVIDIA CUDA", (8, 6))) == "nvidia-sm_86"
    assert _prebuilt.target(_Device("NVIDIA CUDA")) is None        # no capability query
    assert _prebuilt.target(_Device("Portable Computing Language", (9, 0))) is None
    if "NVIDIA" not in queue.device.platform.name.upper():
        assert _prebuilt.target(queue.device) is None


def test_a_routine_builds_every_program_from_the_store(queue, store):
    """lu_factor and cholesky on a new context take every program from a store of the
    programs the first context built, and give the same factors bit for bit."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 300)).astype(np.float32)
    spd = a @ a.T + 300 * np.eye(300, dtype=np.float32)
    first = _fresh_queue(queue)          # a context of these two calls' programs alone
    lu, piv = oclla.lu_factor(a, queue=first)
    c = oclla.cholesky(spd, queue=first)
    mine = [(s, o, prg.binaries[0]) for (ctx, s, o), prg in _programs.programs().items()
            if ctx == first.context]
    _prebuilt.write(store, mine, driver="d", devices=["dev"])
    other = _fresh_queue(queue)
    start = _programs.build_count()
    lu2, piv2 = oclla.lu_factor(a, queue=other)
    c2 = oclla.cholesky(spd, queue=other)
    built = _programs.builds()[start:]
    assert built and all(b.prebuilt for b in built)
    assert np.array_equal(lu, lu2) and np.array_equal(piv, piv2) and np.array_equal(c, c2)


def test_no_entry_compiles_the_source(queue, store):
    _write_util(queue, store)
    other = _fresh_queue(queue)
    assert _programs._build(other.context, UTIL, _options()).binaries   # has an entry
    assert _programs.builds()[-1].prebuilt
    _programs._build(other.context, UTIL, _options(np.float64))        # has none
    assert not _programs.builds()[-1].prebuilt


def test_a_changed_source_is_compiled_and_its_entry_dropped(queue, store, monkeypatch):
    _write_util(queue, store)
    assert _prebuilt.status(queue.device) == (1, 1)
    read = kernels_cl.read_source
    monkeypatch.setattr(kernels_cl, "read_source",
                        lambda name: read(name) + ("\n/* changed */\n" if name == UTIL else ""))
    _programs._build(_fresh_queue(queue).context, UTIL, _options())
    assert not _programs.builds()[-1].prebuilt
    assert _prebuilt.status(queue.device) == (1, 0)
    assert _prebuilt.write(store, [], driver="d", devices=["dev"]) == (0, 1)


def test_switched_off_by_the_environment(queue, store, monkeypatch):
    _write_util(queue, store)
    monkeypatch.setenv("OCLLA_PREBUILT", "0")
    assert _prebuilt.binary(queue.device, kernels_cl.read_source(UTIL), _options()) is None
    _programs._build(_fresh_queue(queue).context, UTIL, _options())
    assert not _programs.builds()[-1].prebuilt


def test_a_binary_the_driver_refuses_is_compiled_from_source(queue, store, caplog):
    _write_util(queue, store, data=b"not a program binary" * 50)
    with caplog.at_level(logging.DEBUG, logger="oclla"):
        prg = _programs._build(_fresh_queue(queue).context, UTIL, _options())
    assert not _programs.builds()[-1].prebuilt
    assert "set_identity" in prg.get_info(cl.program_info.KERNEL_NAMES)
    assert "did not build" in caplog.text


def _rewrite(path, index=None, member=None, method=zipfile.ZIP_STORED):
    """The store at ``path`` again, with ``index`` (a dict or bytes) and ``member`` (bytes
    for its one binary) in place of its own."""
    with zipfile.ZipFile(path) as archive:
        old_index = json.loads(archive.read("index.json"))
        (name,) = [n for n in archive.namelist() if n.endswith(".ptx")]
        data = archive.read(name)
    index = old_index if index is None else index
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr("index.json", index if isinstance(index, bytes) else json.dumps(index))
        archive.writestr(name, data if member is None else member)
    return old_index


def _overwrite(path, name, first, last, byte=None):
    """Change bytes first..last-1 of member ``name``'s data as stored in the file (its
    compressed data where it is compressed): each becomes ``byte``, or flips where None."""
    with zipfile.ZipFile(path) as archive:
        (info,) = [i for i in archive.infolist() if i.filename.endswith(name)]
    raw = bytearray(open(path, "rb").read())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + first, start + last):
        raw[i] = raw[i] ^ 0xFF if byte is None else byte
    open(path, "wb").write(bytes(raw))


def _damage_crc(path, monkeypatch):
    """Flip one byte of the stored (uncompressed) binary: its CRC no longer matches."""
    _rewrite(path)
    with zipfile.ZipFile(path) as archive:
        size = [i for i in archive.infolist() if i.filename.endswith(".ptx")][0].file_size
    _overwrite(path, ".ptx", size // 2, size // 2 + 1)


def _garble(path, name):
    """Overwrite the middle third of member ``name``'s compressed data (the store is
    LZMA, as written): decompressing it fails or its CRC does not match."""
    with zipfile.ZipFile(path) as archive:
        (size,) = [i.compress_size for i in archive.infolist() if i.filename.endswith(name)]
    _overwrite(path, name, size // 3, 2 * size // 3, 0xA5)


def _garbled_binary(path, monkeypatch):
    _garble(path, ".ptx")


def _garbled_index(path, monkeypatch):
    _garble(path, "index.json")


def _wrong_size(path, monkeypatch):
    index = _rewrite(path)
    (k,) = index["entries"]
    index["entries"][k]["size"] += 1
    _rewrite(path, index=index)


def _huge_index(path, monkeypatch):
    monkeypatch.setattr(_prebuilt, "MAX_INDEX_BYTES", 10)


def _huge_entry(path, monkeypatch):
    monkeypatch.setattr(_prebuilt, "MAX_BINARY_BYTES", 10)


def _bad_json(path, monkeypatch):
    _rewrite(path, index=b"{not json")


def _index_a_list(path, monkeypatch):
    _rewrite(path, index=b"[1, 2]")


def _other_format(path, monkeypatch):
    index = _rewrite(path)
    _rewrite(path, index={**index, "format": 2})


def _not_a_zip(path, monkeypatch):
    open(path, "wb").write(b"PK\x03\x04 but nothing after")


DAMAGE = {"crc": _damage_crc, "garbled binary": _garbled_binary,
          "garbled index": _garbled_index, "member size": _wrong_size, "index size": _huge_index,
          "index text": _bad_json, "index a list": _index_a_list, "format": _other_format,
          "entry size": _huge_entry, "not a zip": _not_a_zip}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_store_is_ignored(queue, store, monkeypatch, damage, caplog):
    _write_util(queue, store)
    DAMAGE[damage](store, monkeypatch)
    _prebuilt.forget()
    with caplog.at_level(logging.DEBUG, logger="oclla"):
        prg = _programs._build(_fresh_queue(queue).context, UTIL, _options())
    assert not _programs.builds()[-1].prebuilt
    assert "set_identity" in prg.get_info(cl.program_info.KERNEL_NAMES)
    assert "ignoring" in caplog.text


def test_writing_keeps_current_entries_and_adds_new_ones(queue, store):
    _write_util(queue, store)
    prg = _programs._build(queue.context, UTIL, _options(np.float64))
    assert _prebuilt.write(store, [(UTIL, _options(np.float64), prg.binaries[0])],
                           driver="d2", devices=["dev2"]) == (2, 0)
    with zipfile.ZipFile(store) as archive:
        index = json.loads(archive.read("index.json"))
    assert index["devices"] == ["dev", "dev2"] and index["driver"] == "d2"
    assert sorted(tuple(e["options"]) for e in index["entries"].values()) == sorted(
        [_options(), _options(np.float64)])


#: A child process that runs the store's writer with a one-call warm-up (its programs
#: alone: a CPU device compiles a program's every kernel to hand its binary out).
WRITER = """
import sys, numpy as np, oclla
from oclla import _prebuilt
_prebuilt.target = lambda device: "test"
_prebuilt.store_path = lambda name: sys.argv[sys.argv.index("--store") + 1]
oclla.warmup = lambda dtype=None, queue=None: oclla.lu_factor(
    np.eye(40, dtype=np.float32) + 1, queue=queue)
code = _prebuilt.main(sys.argv[1:])
print("builds from the store:", sum(b.prebuilt for b in oclla._programs.builds()))
sys.exit(code)
"""


def test_the_writer_stores_what_warmup_builds(queue, store):
    """python -m oclla._prebuilt: every program of the (here: one-call) warm-up joins the
    entries already there, compiled from source even where the store has it
    (OCLLA_PREBUILT=1 given: a second run finds its programs stored)."""
    prg = _programs._build(queue.context, UTIL, _options(np.float64))   # one entry to keep
    _prebuilt.write(store, [(UTIL, _options(np.float64), prg.binaries[0])], driver="d",
                    devices=["dev"])
    env = {**os.environ, "OCLLA_PREBUILT": "1"}
    for run in range(2):
        done = subprocess.run([sys.executable, "-c", WRITER, "--dtype", "float32", "--store",
                               store], capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        _prebuilt.forget()
        written, current = _prebuilt.status(queue.device)
        assert written >= 2 and current == written
        assert f"{store}: {written} programs" in done.stdout
        built = int(done.stdout.split("(")[1].split()[0])
        assert built == written - 1             # the float64 entry kept beside them
        assert "builds from the store: 0" in done.stdout


def test_the_writer_refuses_an_unknown_device_entry(store, monkeypatch):
    monkeypatch.setenv("OCLLA_PREBUILT", "1")   # restored after the writer sets it to 0
    with pytest.raises(SystemExit, match="no shipped entries"):
        _prebuilt.main(["--store", store, "--entries-of", "no such device"])


def test_devices_command_tells_of_a_store(queue, store, capsys):
    _write_util(queue, store)
    assert cli_main(["devices"]) == 0
    assert "programs shipped prebuilt for it: 1, 1 of them" in capsys.readouterr().out


def test_the_shipped_store_is_well_formed():
    """Each shipped store: a format-1 index whose every entry names a kernel source and
    has its binary, of the size the index gives, within the limits, intact."""
    folder = os.path.dirname(_prebuilt.store_path("x"))
    stores = [f for f in os.listdir(folder) if f.endswith(".zip")]
    assert "nvidia-sm_90.zip" in stores
    for name in stores:
        with zipfile.ZipFile(os.path.join(folder, name)) as archive:
            entries = _prebuilt._read_index(archive)
            assert entries
            assert archive.testzip() is None                       # every CRC
            members = {i.filename: i.file_size for i in archive.infolist()}
            assert set(members) == {"index.json"} | {f"{k}.ptx" for k in entries}
            for k, e in entries.items():
                assert members[f"{k}.ptx"] == e["size"] <= _prebuilt.MAX_BINARY_BYTES
                assert e["source"] in kernels_cl.list_sources()
                assert e["options"][0] == "-cl-std=CL1.2"
