"""Parameters that a device cannot build or run: the ladder of safer sets, one warning,
verdicts remembered per device and driver, and DeviceError with the log when all fail."""

import dataclasses
import json
import warnings

import numpy as np
import pyopencl as cl
import pytest

import oclla
from oclla import DeviceError, _checked, _device, _params, _programs, _selfcheck, accuracy


@pytest.fixture
def verdicts(tmp_path, monkeypatch):
    """A fresh verdict file and fresh parameter caches (restored afterwards)."""
    path = tmp_path / "checked.json"
    monkeypatch.setenv("OCLLA_CHECKED_FILE", str(path))
    monkeypatch.setenv("OCLLA_TUNED", "0")          # derived parameters on tuned devices too
    _params.reload()
    yield path
    monkeypatch.delenv("OCLLA_CHECKED_FILE")
    monkeypatch.delenv("OCLLA_TUNED")
    _params.reload()


def _failing_first_rung(monkeypatch, family, key):
    """Make ``family``'s self-check fail (as a build failure would) while ``key`` has the
    value of the first rung of its ladder; return that rung."""
    queue = oclla.get_queue()
    first = _params.ladder(queue, family, np.float32)[0]
    real = _selfcheck.CHECKS[family]

    def check(q, dtype):
        if _params.params(q, family, dtype)[key] == first[key]:
            raise DeviceError(f"building kernels_cl/x.cl failed:\nerror: {key} unsupported")
        real(q, dtype)

    monkeypatch.setitem(_selfcheck.CHECKS, family, check)
    return first


def test_ladder_starts_with_the_derived_set_and_ends_safer(queue):
    for family in _params.FAMILIES:
        rungs = _params.ladder(queue, family, np.float32)
        assert rungs[0] == _params.ladder(queue, family, np.float32)[0]
        assert len(rungs) == len({json.dumps(r, sort_keys=True) for r in rungs})
        for p in rungs:
            assert _params.check(family, p, oclla.device_info(queue), 4) is None, (family, p)
    pivot = _params.ladder(queue, "pivot", np.float32)
    assert pivot[-1]["VW"] == 1


def test_failed_family_falls_back_with_one_warning(queue, verdicts, monkeypatch):
    first = _failing_first_rung(monkeypatch, "window", "WG")
    with pytest.warns(RuntimeWarning, match=r"window kernels failed .* WG unsupported") as got:
        chosen = _params.params(queue, "window", np.float32)
    assert len([w for w in got if issubclass(w.category, RuntimeWarning)]) == 1
    assert chosen["WG"] != first["WG"]
    assert chosen in _params.ladder(queue, "window", np.float32)[1:]
    a = np.random.default_rng(1).standard_normal((40, 40)).astype(np.float32)
    lu, piv = oclla.lu_factor(a, method="pivot", variant="window", queue=queue)
    assert accuracy.passes(accuracy.lu_backward_error(a, lu, piv))

    # remembered: a fresh process (fresh caches) takes the same set without a warning
    stored = json.loads(verdicts.read_text())["entries"]
    assert any("|window|" in k and not ok for k, (ok, _) in stored.items())
    _params.reload()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _params.params(queue, "window", np.float32) == chosen


def test_every_rung_failing_is_a_device_error_with_the_log(queue, verdicts, monkeypatch):
    def check(q, dtype):
        raise DeviceError("building kernels_cl/lu_crout.cl failed:\nerror: the build log")

    monkeypatch.setitem(_selfcheck.CHECKS, "crout", check)
    with pytest.raises(DeviceError, match=r"every crout parameter set failed(.|\n)*the build log"):
        _params.params(queue, "crout", np.float32)
    a = np.eye(5, dtype=np.float32)
    with pytest.raises(DeviceError, match="every crout parameter set failed"):
        oclla.lu_factor(a, method="pivot", variant="crout", queue=queue)


def test_remembered_failures_of_every_rung_are_checked_again(queue, verdicts, monkeypatch):
    """A verdict file in which every rung of a family failed (a process whose checks
    could not run wrote it) does not make the family unusable for good: those rungs are
    checked again, once, the first that passes is used and the file corrected; where
    they fail again the family is given up as before."""
    info = oclla.device_info(queue)
    rungs = _params.ladder(queue, "window", np.float32)
    keys = [_checked.key(info, "float32", "window", p) for p in rungs]
    stale = {"version": _checked.VERSION,
             "entries": {k: [False, "a check cut short"] for k in keys}}
    verdicts.write_text(json.dumps(stale))
    _params.reload()
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # the derived set passes: nothing to warn of
        assert _params.params(queue, "window", np.float32) == rungs[0]
    assert json.loads(verdicts.read_text())["entries"][keys[0]][0] is True

    verdicts.write_text(json.dumps(stale))
    _params.reload()
    calls = []

    def check(q, dtype):
        calls.append(_params.params(q, "window", dtype))
        raise DeviceError("building kernels_cl/lu_window.cl failed:\nerror: still failing")

    monkeypatch.setitem(_selfcheck.CHECKS, "window", check)
    with pytest.raises(DeviceError, match=r"every window parameter set failed(.|\n)*still"):
        _params.params(queue, "window", np.float32)
    assert calls == rungs                   # each rung checked once more, in order


def test_wrong_results_count_as_failures(queue, verdicts, monkeypatch):
    def check(q, dtype):
        raise _selfcheck.CheckFailed("LU n=17: error 1e+06")

    monkeypatch.setitem(_selfcheck.CHECKS, "window", check)
    with pytest.raises(DeviceError, match="LU n=17"):
        _params.params(queue, "window", np.float32)


def test_overrides_and_tuned_sets_are_not_retried(queue, verdicts, monkeypatch):
    monkeypatch.setitem(_selfcheck.CHECKS, "window", lambda q, d: pytest.fail("checked"))
    _params.override("window", {"W": 2, "WG": 4})
    assert _params.params(queue, "window", np.float32)["W"] == 2


def test_the_check_is_not_recorded(queue, verdicts):
    a = np.random.default_rng(2).standard_normal((12, 12)).astype(np.float32)
    with oclla.record() as rec:
        oclla.lu_factor(a, method="pivot", variant="window", queue=queue)
    assert [r.variant for r in rec.runs] == ["window"]


def test_verdict_file_is_untrusted(queue, verdicts):
    verdicts.write_text("{not json")
    assert _checked.get("anything") is None
    verdicts.write_text(json.dumps({"version": 1, "entries": {"k": "oops", "j": [True, 3]}}))
    _checked.forget()
    assert _checked.get("k") is None and _checked.get("j") == (True, "3")
    _params.params(queue, "window", np.float32)          # rewrites the file
    assert json.loads(verdicts.read_text())["version"] == 1


def test_abi_changing_builds_are_refused(queue):
    """A program whose build log says its vectors change the ABI (PoCL 3.0's generic x86-64
    target given float16) is a DeviceError, never a kernel that crashes when it runs."""
    info = oclla.device_info(queue)
    if info.kind != "CPU" or _device.vectors_build(queue, 4, 16):
        pytest.skip("the device compiles 16-wide float vectors natively")
    _params.override("pivot", {"VW": 16})
    a = np.random.default_rng(3).standard_normal((20, 20)).astype(np.float32)
    with pytest.raises(DeviceError, match="vectors its compile target lacks"):
        oclla.lu_factor(a, method="pivot", variant="inplace", queue=queue)


def test_vector_width_is_what_compiles(queue, monkeypatch):
    info = oclla.device_info(queue)
    width = _device.vector_width(queue, 4)
    assert width <= max(1, info.native_width_float) and width & (width - 1) == 0
    assert _device.vectors_build(queue, 4, width)
    if width < 16:
        reported = _device.DeviceInfo(**{**info.as_dict(), "native_width_float": 16})
        monkeypatch.setattr(_device, "device_info", lambda q: reported)
        widest = _device.vector_width(queue, 4)
        assert widest >= width and _device.vectors_build(queue, 4, widest)
        assert widest == 16 or not _device.vectors_build(queue, 4, 2 * widest)


def test_builds_are_quiet(queue, capfd):
    """Kernels build without compiler chatter on the terminal (logs go to logging)."""
    _programs._programs.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        oclla.lu_factor(np.eye(30, dtype=np.float32) * 2, queue=queue)
    captured = capfd.readouterr()
    assert "warning" not in captured.err.lower() and "generated" not in captured.err


def test_verdicts_under_profiles_with_other_memory_limits_are_apart(queue):
    """A profile's memory limits are part of a verdict's key: a check that fails with a tiny
    max_alloc_size is not remembered for the same profile name with room to spare."""
    info = dataclasses.replace(oclla.device_info(queue), profile="amd-gcn")
    small = dataclasses.replace(info, max_alloc_size=1 << 20, global_mem_size=2 << 20)
    assert _checked.key(info, "float32", "chol") != _checked.key(small, "float32", "chol")
    assert (_checked.key(info, "float32", "chol")
            == _checked.key(dataclasses.replace(info), "float32", "chol"))


def test_a_first_check_says_so_at_info_level(queue, verdicts, caplog):
    """A family's first check on a device (builds and a tiny run: seconds on a CPU
    runtime) is one INFO message of the "oclla" logger naming the family, dtype and
    device (the families its check uses in turn say so too, once each); the remembered
    verdicts of a later process check nothing and say nothing."""
    with caplog.at_level("INFO", logger="oclla"):
        _params.params(queue, "window", np.float32)
    said = [r.getMessage() for r in caplog.records if r.name == "oclla"]
    window = [m for m in said if "the window kernels (float32)" in m]
    assert len(window) == 1 and oclla.device_info(queue).name in window[0]
    assert len(set(said)) == len(said)
    assert all(m.startswith("building and checking the ") for m in said)
    caplog.clear()
    _params.reload()                                  # a fresh process, the verdict kept
    with caplog.at_level("INFO", logger="oclla"):
        _params.params(queue, "window", np.float32)
    assert not [r for r in caplog.records if r.name == "oclla"]
