"""The oclla command: devices and the demo (the README's main job)."""

import json
import logging
import re
import subprocess
import sys

import numpy as np
import pytest

import oclla
from oclla import _params
from oclla._params import params
from oclla.cli import main


def test_devices_command(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "compiles kernels" in out and "default device:" in out
    assert main(["devices", "--check"]) == 0


def test_demo_writes_a_recording(tmp_path, capsys, queue):
    out_file = tmp_path / "demo.oclrec"
    lu_params = params(queue, "lu", np.float32)
    # blocked: a panel and its GEMM update before the rest (past the one-leaf order and
    # the order factored as one flat panel, FLAT_N: 2048 on the GPUs' entries)
    n = max(lu_params["NB"], lu_params["SMALL_N"], lu_params["FLAT_N"]) + lu_params["NB"] + 6
    assert main(["demo", "--n", str(n), "--seed", "3", "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    for word in ("faithful", "inplace", "crout", "window", "blocked", "GFLOP/s", "eliminate", "gemm",
                 "recording written"):
        assert word in out
    rec = oclla.load_recording(out_file)
    first, timed = rec.runs[0], rec.runs[1:]         # a small LU to watch, then the timed runs
    assert first.variant == "inplace" and tuple(first.shape)[0] == 8
    assert len(first.snapshots) == 7
    assert [r.variant for r in timed] == ["faithful", "inplace", "crout", "window", "blocked"]
    assert all(r.metrics["backward_error"] < 30 for r in timed[1:])
    assert timed[1].snapshots == []                     # too large to keep snapshots
    assert main(["demo", "--n", "9", "--out", str(out_file)]) == 0
    assert len(oclla.load_recording(out_file).runs[2].snapshots) == 8


def test_demo_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--n", "0"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["demo", "--dtype", "int8"])
    assert main(["demo", "--device", "no-such-device-anywhere", "--n", "4"]) == 1
    assert "no OpenCL device matches" in capsys.readouterr().err


def test_python_dash_m(tmp_path):
    result = subprocess.run([sys.executable, "-m", "oclla", "devices"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "default device" in result.stdout


def test_bench_wls_dispatch(capsys):
    assert main(["bench", "wls", "--sizes", "16", "--tables", "1", "--no-cupy"]) == 0
    out = capsys.readouterr().out
    assert "16" in out


def test_bench_update_potri_logdet_print_tables(capsys):
    assert main(["bench", "update", "--sizes", "40", "--ranks", "1,3", "--dtype", "float32",
                 "--repeat", "1", "--reference", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "cholesky_update (update, blocked) on" in out[0]
    assert out[1].split() == ["dtype", "n", "k", "ms", "GFLOP/s", "GB/s", "roof", "dev", "ms",
                              "dev", "roof", "x", "scipy", "x", "oclla", "err"]
    rows = [line.split() for line in out[2:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("float32", "40", "1"), ("float32", "40", "3")]
    assert all(float(r[-1]) < 30 for r in rows)                  # the backward error
    assert all(0 < float(r[7]) < 1.5 * float(r[3]) for r in rows)   # kernels: within the wall
    assert main(["bench", "update", "--sizes", "40", "--ranks", "2", "--dtype", "float32",
                 "--sign", "-1", "--repeat", "1", "--reference", "cpu", "--err-max-n", "8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "downdate" in out[0] and out[2].split()[-1] == "-"
    assert main(["bench", "update", "--stream", "--sizes", "70", "--ranks", "2",
                 "--dtype", "float32"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "streamed" in out[0] and "bus GB/s" in out[1] and out[1].split()[:3] == [
        "float32", "70", "2"]
    assert main(["bench", "potri", "--sizes", "40", "--dtype", "float32", "--repeat", "1",
                 "--reference", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "potri lower on" in out[0]
    assert out[1].split() == ["n", "dtype", "oclla", "%peak", "scipy", "vs", "err"]
    assert out[2].split()[:2] == ["40", "float32"] and float(out[2].split()[-1]) < 30
    assert main(["bench", "logdet", "--sizes", "50", "--dtype", "float32", "--repeat", "1",
                 "--reference", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "log-det on" in out[0] and out[2].split()[:2] == ["50", "float32"]
    assert float(out[2].split()[-1]) < 1e-5                       # relative error


def test_bench_update_counts_the_bytes_no_method_avoids():
    """GB/s of ``oclla bench update``: the triangle read and written once and V read once
    (n = 4, k = 2 in float64: 2 x 10 + 8 entries), whatever route or panel size ran; the
    roof is the larger of the two fractions, where the device's figures are known."""
    from oclla import bench_update
    assert bench_update.moved_bytes(4, 2, 8) == 8.0 * (2 * 10 + 8)
    bw = bench_update.BANDWIDTH["H200"]
    assert bench_update.roof("NVIDIA H200", "float64", 1.0, bw / 2) == pytest.approx(0.5)
    assert bench_update.roof("a device of no figures", "float64", 1.0, 1.0) is None


def test_bench_update_potri_logdet_errors(capsys):
    for sub, argv, words in (("update", ["--ranks", "x"], "--ranks"),
                             ("update", ["--dtype", "float16"], "--dtype"),
                             ("update", ["--repeat", "0"], "repeat"),
                             ("potri", ["--sizes", "0"], "--sizes"),
                             ("logdet", ["--reference", "gpu"], "--reference")):
        line = _usage_error(capsys, lambda: main(["bench", sub, *argv]), f"oclla bench {sub}")
        assert words in line
    for sub in ("update", "potri", "logdet"):
        assert main(["bench", sub, "--sizes", "8", "--device", "no-such-device"]) == 1
        assert "no OpenCL device matches" in _one_line_error(capsys, f"oclla bench {sub}")
    from oclla import bench
    if not bench._cuda_available():
        assert main(["bench", "update", "--sizes", "8", "--reference", "cuda"]) == 1
        assert "needs CuPy" in _one_line_error(capsys, "oclla bench update")


# ---- errors: one line, exit status 1 for a failure and 2 for a bad argument, before any
# ---- measuring -----------------------------------------------------------------------------

def _one_line_error(capsys, prog):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{prog}: error: "), err
    return err[0]


def _usage_error(capsys, call, prog):
    with pytest.raises(SystemExit) as exc:
        call()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"{prog}: error: "), err       # argparse: usage, then one line
    return err[-1]


def test_bench_failures_are_one_line_before_measuring(capsys, tmp_path):
    assert main(["bench", "gemm", "--sizes", "8", "--device", "no-such-device"]) == 1
    assert "no OpenCL device matches" in _one_line_error(capsys, "oclla bench")
    assert main(["bench", "gemm", "--sizes", "8", "--plot", str(tmp_path / "no" / "p.png")]) == 1
    assert "no such directory" in _one_line_error(capsys, "oclla bench")
    (tmp_path / "d.json").mkdir()
    assert main(["bench", "gemm", "--sizes", "8", "--json", str(tmp_path / "d.json")]) == 1
    assert "is a directory" in _one_line_error(capsys, "oclla bench")
    from oclla import bench
    if not bench._cuda_available():
        assert main(["bench", "gemm", "--sizes", "8", "--reference", "cuda"]) == 1
        assert "needs CuPy" in _one_line_error(capsys, "oclla bench")


def test_bench_usage_errors(capsys):
    for argv, words in ((["--sizes", "0"], "positive"), (["--dtype", "float16"], "float16"),
                        (["--repeat", "0"], "repeat"), (["--plot", "p.jpg"], ".png"),
                        (["--json", "out.txt"], ".json"), (["cholesky"], "invalid choice")):
        line = _usage_error(capsys, lambda: main(["bench", *argv]), "oclla bench")
        assert words in line


def test_bench_without_matplotlib_names_the_extra(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["bench", "gemm", "--sizes", "8", "--plot", str(tmp_path / "p.png")]) == 1
    assert 'oclla[plot]' in _one_line_error(capsys, "oclla bench")


def test_bench_progress_table_and_json(capsys, tmp_path):
    assert main(["bench", "gemm", "--sizes", "8,9", "--repeat", "1"]) == 0
    captured = capsys.readouterr()
    progress = [line for line in captured.err.splitlines() if line.startswith("oclla bench:")]
    assert len(progress) == 2 and "n=8 done (1 of 2" in progress[0]
    header = captured.out.splitlines()[2]
    assert "GFLOP/s" in header and ("%peak" in header) == (bench_peak() is not None)
    out = tmp_path / "gemm.json"
    assert main(["bench", "gemm", "--sizes", "8", "--repeat", "1", "--json", str(out)]) == 0
    assert "GFLOP/s" in capsys.readouterr().out                  # the table, and the file
    doc = json.loads(out.read_text())
    assert doc["command"].startswith("oclla bench gemm") and "commit" in doc
    assert main(["bench", "gemm", "--sizes", "8", "--repeat", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"][0]["n"] == 8


@pytest.mark.parametrize("routine, label", [("potrs", "cho_solve"), ("getrs", "lu_solve")])
def test_bench_times_the_solves_with_their_factor_made_once(capsys, routine, label):
    """getrs and potrs time lu_solve and cho_solve of one right-hand side (2n² flops)
    beside the reference's, the factorization made by the untimed first call."""
    assert main(["bench", routine, "--sizes", "70", "--repeat", "2", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    mine = [r for r in records if r["impl"] == f"oclla {label}"]
    assert len(mine) == 1 and len(records) == 2
    assert mine[0]["gflops"] == pytest.approx(2.0 * 70 * 70 / mine[0]["seconds"] / 1e9)
    assert main(["bench", routine, "--sizes", "70", "--nrhs", "3", "--repeat", "1"]) == 0
    table = capsys.readouterr().out
    assert f"{routine} x3" in table and f"oclla {label}" in table


def test_bench_nrhs_is_for_the_solves(capsys):
    """--nrhs below 1, or given to a factorization, is a usage error (one line, status 2);
    the JSON records of a solve carry it, and its 2n²k flops."""
    assert "--nrhs" in _usage_error(capsys, lambda: main(["bench", "potrs", "--nrhs", "0"]),
                                    "oclla bench")
    assert "--nrhs" in _usage_error(capsys, lambda: main(["bench", "getrf", "--nrhs", "2"]),
                                    "oclla bench")
    assert main(["bench", "potrs", "--sizes", "40", "--nrhs", "5", "--repeat", "1",
                 "--json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    assert {r["nrhs"] for r in records} == {5}
    assert records[0]["gflops"] == pytest.approx(2.0 * 40 * 40 * 5 / records[0]["seconds"] / 1e9)


def bench_peak():
    from oclla import bench
    return bench.peak(oclla.device_info(oclla.get_queue()).name, "float32")


def test_bench_wls_errors_and_json_convention(capsys, tmp_path):
    line = _usage_error(capsys, lambda: main(["bench", "wls", "--tables", "3"]), "oclla bench wls")
    assert "--tables" in line
    assert main(["bench", "wls", "--sizes", "8", "--device", "no-such-device"]) == 1
    _one_line_error(capsys, "oclla bench wls")
    assert main(["bench", "wls", "--sizes", "8", "--tables", "1", "--no-cupy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["m"] == 8


def test_tune_checks_arguments_first(capsys, tmp_path):
    assert "float16" in _usage_error(capsys, lambda: main(["tune", "--dtype", "float16"]),
                                     "oclla tune")
    assert "nonsense" in _usage_error(capsys, lambda: main(["tune", "--families", "nonsense"]),
                                      "oclla tune")
    assert main(["tune", "--families", "pivot", "--device", "no-such-device",
                 "--output", str(tmp_path / "t.json")]) == 1
    _one_line_error(capsys, "oclla tune")
    assert main(["tune", "--families", "pivot", "--output",
                 str(tmp_path / "no" / "t.json")]) == 1
    assert "no such directory" in _one_line_error(capsys, "oclla tune")


def test_tune_prints_orders_as_numbers():
    from oclla import tune
    for family in tune.METRIC:
        for kind in ("GPU", "CPU"):
            assert not re.search(r"[A-Z]+_N\b", tune.metric_text(family, kind))


def test_a_partial_tune_keeps_the_shipped_families(tmp_path):
    """A run of one family stores it over the device's shipped entry, per family."""
    from types import SimpleNamespace
    from oclla import _params, tune
    with open(tune.shipped_file(), encoding="utf-8") as f:
        shipped = _params.read_entries(f.read())[0]
    info = SimpleNamespace(name=shipped["device"], driver_version=shipped["driver"])
    path = tmp_path / "tuned.json"
    tune.store(str(path), info, shipped["dtype"], {"pivot": {"WG": 64}}, {})
    params = json.loads(path.read_text())["entries"][0]["params"]
    assert params["pivot"] == {"WG": 64}
    assert {k: v for k, v in params.items() if k != "pivot"} == \
        {k: v for k, v in shipped["params"].items() if k != "pivot"}


def test_demo_out_is_checked_before_the_run(capsys, tmp_path):
    assert main(["demo", "--n", "4", "--out", str(tmp_path / "no" / "d.oclrec")]) == 1
    assert "no such directory" in _one_line_error(capsys, "oclla demo")
    assert main(["demo", "--n", "4", "--out", str(tmp_path)]) == 1
    assert "is a directory" in _one_line_error(capsys, "oclla demo")


# ---- help and versions -----------------------------------------------------------------

HELPS = (["--help"], ["demo", "--help"], ["devices", "--help"], ["bench", "--help"],
         ["bench", "wls", "--help"], ["bench", "update", "--help"], ["bench", "potri", "--help"],
         ["bench", "logdet", "--help"], ["tune", "--help"])


@pytest.mark.parametrize("argv", HELPS, ids=" ".join)
def test_help_texts_are_plain_and_give_defaults(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "``" not in out and ":func:" not in out and "= PIVOT_N" not in out
    if argv[0] != "--help":
        assert "(default" in out


def test_help_names_what_runs(capsys):
    for argv in (["--help"], ["bench", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "wls" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "faithful, inplace, crout, window, blocked" in out and "three" not in out


@pytest.mark.parametrize("argv", [["--version"], ["bench", "--version"],
                                  ["bench", "wls", "--version"], ["tune", "--version"]])
def test_version(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip().endswith(oclla.__version__)


# ---- the viewer's arguments --------------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (["--cond", "-1"], "--cond"), (["--cond", "nan"], "--cond"), (["--fps", "0"], "--fps"),
    (["--block", "0"], "--block")])
def test_viewer_bad_arguments_exit_2(argv, words, capsys):
    from oclla.viewer.app import main as viewer_main
    assert words in _usage_error(capsys, lambda: viewer_main(argv + ["--algorithm", "lu",
                                                                    "--export", "x.png"]),
                                 "oclla-viewer")


def test_viewer_reversed_steps(capsys):
    from oclla.viewer.app import CliError, _parse_range
    with pytest.raises(CliError) as exc:
        _parse_range("9-3", 20)
    assert exc.value.code == 2 and "first step is after the last" in str(exc.value)


def test_viewer_version_and_missing_qt(capsys, monkeypatch):
    from oclla.viewer.app import main as viewer_main
    with pytest.raises(SystemExit) as exc:
        viewer_main(["--version"])
    assert exc.value.code == 0 and oclla.__version__ in capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "PySide6", None)
    assert viewer_main(["--algorithm", "lu", "--export", "x.png"]) == 1
    assert 'oclla[viewer]' in _one_line_error(capsys, "oclla-viewer")


def test_viewer_takes_the_api_variant_names():
    from oclla.viewer import registry
    from oclla.viewer.app import _variant_key
    lu = registry.algorithm("lu")
    assert lu.variant(_variant_key(lu, "inplace")).kwargs["variant"] == "inplace"
    assert _variant_key(lu, "crout") == "crout"


# ---- device hints ------------------------------------------------------------------------

def test_nvidia_icd_line_keeps_the_registered_drivers(tmp_path, monkeypatch):
    from oclla import _device
    (tmp_path / "other.icd").write_text("libOtherOpenCL.so\n")
    (tmp_path / "local.icd").write_text("liblocal.so\n")
    (tmp_path / "liblocal.so").write_text("")
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    line = _device.nvidia_icd_command()
    assert "echo libOtherOpenCL.so >/tmp/icd/other.icd" in line
    assert f"echo {tmp_path / 'liblocal.so'} >/tmp/icd/local.icd" in line
    assert line.endswith("echo libnvidia-opencl.so.1 >/tmp/icd/nvidia.icd && "
                         "export OCL_ICD_VENDORS=/tmp/icd")


def test_nvidia_icd_hint_only_where_it_applies(monkeypatch):
    from oclla import _device
    monkeypatch.setattr(_device.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(_device, "_NVIDIA_LIB_GLOBS", ())
    assert _device.nvidia_icd_hint() is None                     # no NVIDIA library here
    monkeypatch.setattr(_device.ctypes.util, "find_library", lambda name: "libnvidia-opencl.so.1")
    platforms = [p.name.lower() for p in _device.cl.get_platforms()]
    hint = _device.nvidia_icd_hint()
    assert (hint is None) == any("nvidia" in p for p in platforms)
    if hint:
        assert "OCL_ICD_VENDORS" in hint


@pytest.mark.parametrize("jobs", ["0", "-3"])
def test_warmup_refuses_fewer_than_one_job(capsys, jobs):
    err = _usage_error(capsys, lambda: main(["warmup", "--jobs", jobs]), "oclla")
    assert "--jobs must be at least 1" in err


def test_demo_says_on_stderr_what_a_first_use_checks(tmp_path, capsys, monkeypatch):
    """On a device and driver that oclla has not checked yet, the demo's first uses of
    each kernel family are one stderr line each (its builds and self-check take seconds
    on a CPU runtime); with the verdicts remembered the demo says nothing of them.
    The progress lines are the command's own: the library logger keeps no handler."""
    monkeypatch.setenv("OCLLA_CHECKED_FILE", str(tmp_path / "checked.json"))
    monkeypatch.setenv("OCLLA_TUNED", "0")
    _params.reload()
    try:
        out_file = str(tmp_path / "demo.oclrec")
        assert main(["demo", "--n", "5", "--out", out_file]) == 0
        err = capsys.readouterr().err.splitlines()
        said = [line for line in err if line.startswith("oclla: building and checking the ")]
        assert said and len(said) == len(err)
        assert any(" pivot kernels (float32)" in line for line in said)
        _params.reload()                              # a later process: verdicts kept
        assert main(["demo", "--n", "5", "--out", out_file]) == 0
        assert capsys.readouterr().err == ""
        assert not logging.getLogger("oclla").handlers
    finally:
        monkeypatch.delenv("OCLLA_CHECKED_FILE")
        monkeypatch.delenv("OCLLA_TUNED")
        _params.reload()
