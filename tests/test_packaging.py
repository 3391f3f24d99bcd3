"""The wheel carries the kernels: build it, install it in a fresh venv, factor from elsewhere;
its viewer and kernels are oclla.viewer and oclla.kernels_cl, no top-level names of their own."""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for package in ("oclla", "kernels_cl", "viewer"):
        if (ROOT / package).exists():
            shutil.copytree(ROOT / package, src / package,
                            ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(dist), str(src)], check=True, timeout=300)
    wheel = next(dist.glob("oclla-*.whl"))
    with zipfile.ZipFile(wheel) as archive:          # nothing outside the oclla namespace
        names = set(archive.namelist())
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"oclla"}
    assert {"oclla/kernels_cl/common.h", "oclla/viewer/app.py",
            "oclla/data/prebuilt/nvidia-sm_90.zip"} <= names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    # the dependencies (numpy, pyopencl, ...) come from this environment, after the venv's own
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True).stdout
    Path(site.strip(), "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    work = tmp_path / "elsewhere"
    work.mkdir()
    script = (
        "import importlib.util, numpy as np, oclla, pathlib\n"
        "from oclla import kernels_cl\n"
        "assert pathlib.Path(oclla.__file__).is_relative_to(pathlib.Path(r'%s'))\n"
        "assert pathlib.Path(kernels_cl.__file__).parent.parent == "
        "pathlib.Path(oclla.__file__).parent\n"
        "assert importlib.util.find_spec('oclla.viewer') is not None\n"

        "a = np.random.default_rng(0).standard_normal((70, 70))\n"
        "lu, piv = oclla.lu_factor(a)\n"
        "print('error', oclla.accuracy.lu_backward_error(a, lu, piv))\n"
        "print('kernels', len(kernels_cl.list_sources()))\n" % venv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([str(python), "-c", script], cwd=work, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    error = float(result.stdout.split("error")[1].split()[0])
    assert error < 30
    assert int(result.stdout.split("kernels")[1].split()[0]) >= 6


def _project() -> dict:
    import tomllib
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]


def test_every_subpackage_is_packaged():
    """Each folder of the three source trees is a listed package: Python imports a folder
    without an __init__.py too (a namespace package, such as oclla/data holding only
    tuned.json), and setuptools warns about every importable folder not listed.  Each
    listed package's non-Python files are matched by its package-data patterns."""
    import fnmatch
    import tomllib
    with open(ROOT / "pyproject.toml", "rb") as fh:
        setuptools = tomllib.load(fh)["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found, unshipped = set(), []
    for package, folder in setuptools["package-dir"].items():
        for path in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            if not path.is_dir() or "__pycache__" in path.parts:
                continue
            relative = path.relative_to(ROOT / folder).parts
            name = ".".join((package,) + relative)
            found.add(name)
            patterns = setuptools["package-data"].get(name, [])
            unshipped += [f"{name}: {f.name}" for f in path.iterdir()
                          if f.is_file() and f.suffix != ".py" and f.name != "README.md"
                          and not any(fnmatch.fnmatch(f.name, p) for p in patterns)]
    assert found - listed == set(), f"not in [tool.setuptools] packages: {found - listed}"
    assert unshipped == [], f"files no package-data pattern ships: {unshipped}"


def test_metadata_names_license_authors_and_the_pythons_tested():
    project = _project()
    assert project["license"] == "MIT"                      # an SPDX expression
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert project["license-files"] == ["LICENSE"]
    assert project["authors"] == [{"name": "oclla developers"}]
    lowest = project["requires-python"].removeprefix(">=")
    claimed = [c.rsplit(":: ", 1)[1] for c in project["classifiers"]
               if c.startswith("Programming Language :: Python :: 3.")]
    assert claimed and claimed[0] == lowest                  # the lowest claimed is listed
    # the interpreter these tests run on is one of those claimed (CI runs each present)
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in claimed


def test_extras_named_by_messages_exist():
    """The extras that error messages tell a user to install are the ones that hold the
    package they need."""
    extras = _project()["optional-dependencies"]
    assert any(d.startswith("matplotlib") for d in extras["plot"])
    assert any(d.startswith("PySide6") for d in extras["viewer"])
    assert any(d.startswith("pyqtgraph") for d in extras["viewer"])
    assert any(d.startswith("pocl-binary-distribution") for d in extras["pocl"])
    bench_source = (ROOT / "oclla" / "bench.py").read_text()
    assert 'oclla[plot]' in bench_source and '.[plot]' in bench_source
    assert 'oclla[viewer]' in (ROOT / "viewer" / "app.py").read_text()
    assert "pip install pocl-binary-distribution" in (ROOT / "oclla" / "_device.py").read_text()
