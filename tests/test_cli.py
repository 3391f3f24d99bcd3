"""The oclla command: devices and the demo (the README's main job)."""

import subprocess
import sys

import numpy as np
import pytest

import oclla
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
    n = max(lu_params["NB"], lu_params["SMALL_N"]) + 6   # blocked: two panels, a GEMM update
    assert main(["demo", "--n", str(n), "--seed", "3", "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    for word in ("faithful", "inplace", "crout", "window", "blocked", "GFLOP/s", "eliminate", "gemm",
                 "recording written"):
        assert word in out
    rec = oclla.load_recording(out_file)
    assert [r.variant for r in rec.runs] == ["faithful", "inplace", "crout", "window", "blocked"]
    assert all(r.metrics["backward_error"] < 30 for r in rec.runs[1:])
    assert rec.runs[1].snapshots == []                  # too large to keep snapshots
    assert main(["demo", "--n", "9", "--out", str(out_file)]) == 0
    assert len(oclla.load_recording(out_file).runs[1].snapshots) == 8


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
