"""The README works as written: every code block runs, in order, in one fresh folder (each
example makes what it uses), every inline command parses, every link resolves, and the
performance table is the one ``benchmarks/table.py --current`` makes."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from recording_files import CHILD_PYTHONPATH

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: Commands a test must not run, with the reason: they install into or delete environments.
NOT_RUN = {
    ("python3", "-m", "venv"): "creates a virtual environment and installs into it",
}
#: The order a README command runs at here, where it would otherwise take its default.
SMALL = {("oclla", "demo"): ("--n", "32")}


def blocks(language: str) -> list:
    """The README's fenced code blocks of ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


def _argv(words: list) -> list:
    """The words of a README command, run from this checkout with this interpreter."""
    program, rest = words[0], words[1:]
    if program == "oclla":
        return [sys.executable, "-m", "oclla", *rest]
    if program == "oclla-viewer":
        return [sys.executable, "-m", "oclla.viewer", *rest]
    if program == "python":
        return [sys.executable, *rest]
    raise AssertionError(f"the README runs {program!r}, which this test does not know")


def commands() -> list:
    """(environment, words) of every command line of the README's bash blocks."""
    found = []
    for block in blocks("bash"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            env = {}
            while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
                key, value = words.pop(0).split("=", 1)
                env[key] = value
            if words:
                found.append((env, words))
    return found


WRITES = ("--export", "--out", "--json")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


def _env(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCLLA_")}
    return dict(env, PYTHONPATH=CHILD_PYTHONPATH, QT_QPA_PLATFORM="offscreen", **extra)


@pytest.fixture(scope="module")
def python_results(folder):
    """The README's Python blocks, each run as a script in the folder, in order."""
    results = []
    for i, block in enumerate(blocks("python")):
        script = folder / f"block{i}.py"
        script.write_text(block, encoding="utf-8")
        results.append((block, subprocess.run([sys.executable, str(script)], cwd=folder,
                                              env=_env({}), capture_output=True, text=True,
                                              timeout=600)))
    return results


def test_the_readme_has_examples_to_run():
    assert blocks("python") and len(commands()) >= 10


def test_the_python_blocks_run(python_results):
    for block, result in python_results:
        assert result.returncode == 0, f"{block}\n{result.stderr[-3000:]}"
        assert float(result.stdout.split()[-1]) < 30          # the backward error it prints


def test_the_commands_run_in_order(folder, python_results):
    """Every bash line, in order, in the folder the Python blocks wrote into (the viewer
    replays the recording the API example saved); each file a command is told to write is
    there afterwards."""
    ran = 0
    for env, words in commands():
        if any(tuple(words[:len(key)]) == key for key in NOT_RUN):
            continue
        for key, option in SMALL.items():
            if tuple(words[:len(key)]) == key and option[0] not in words:
                words = words + list(option)
        result = subprocess.run(_argv(words), cwd=folder, env=_env(env), capture_output=True,
                                text=True, timeout=600)
        assert result.returncode == 0, f"{' '.join(words)}:\n{result.stderr[-3000:]}"
        for option, value in zip(words, words[1:]):
            if option in WRITES:
                assert (folder / value).is_file(), f"{' '.join(words)} wrote no {value}"
        ran += 1
    assert ran >= 10


def _inline_commands() -> list:
    spans = re.findall(r"`((?:[A-Z_]+=\S+ )*oclla(?:-viewer)? [^`]*)`", README)
    return [s for s in spans if not re.search(r"[|…\[\]]|\.\.\.", s)]


def _parse(words: list) -> None:
    """Parse a command's arguments as the command would (SystemExit for a bad one)."""
    from oclla import bench, bench_sparse, bench_update, bench_wls, cli, tune
    from oclla.viewer.app import build_parser
    program, rest = words[0], words[1:]
    if program == "oclla-viewer":
        build_parser().parse_args(rest)
    elif rest[:2] == ["bench", "wls"]:
        bench_wls.parser().parse_args(rest[2:])
    elif rest[:2] == ["bench", "update"]:
        bench_update.parser().parse_args(rest[2:])
    elif rest[:2] == ["bench", "sparse"]:
        bench_sparse.parse_args(rest[2:])
    elif rest[:1] == ["bench"]:
        bench.parse_args(rest[1:])
    elif rest[:1] == ["tune"]:
        tune.parser().parse_args(rest[1:])
    else:
        cli._parser().parse_args(rest)


def test_inline_commands_parse():
    spans = _inline_commands()
    assert len(spans) >= 8
    for span in spans:
        words = [w for w in shlex.split(span) if not re.fullmatch(r"[A-Z_]+=.*", w)]
        if "--help" in words:
            continue
        try:
            _parse(words)
        except SystemExit as exc:
            pytest.fail(f"`{span}` in the README does not parse (exit {exc.code})")


def test_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), f"README links to missing {target}"
    for anchor in re.findall(r"\]\(#([^)]+)\)", README):
        headings = {re.sub(r"[^\w -]", "", h).strip().lower().replace(" ", "-")
                    for h in re.findall(r"^#+ (.*)$", README, flags=re.M)}
        assert anchor in headings, f"README links to missing section #{anchor}"


def test_the_performance_table_is_current():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import table
    finally:
        sys.path.pop(0)
    inside = README.split(table.BEGIN)[1].split(table.END)[0].strip()
    assert inside == table.markdown(*table.current()).strip(), \
        "run: python benchmarks/table.py --current --write README.md"


def test_the_table_gives_a_solve_a_row_per_count_of_right_hand_sides(tmp_path):
    """getrs/potrs calls of 1 and 16 right-hand sides become two rows (labelled by
    their count, fewer first), each with its own times; other routines keep their name."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import table
    finally:
        sys.path.pop(0)

    def doc(routine, nrhs, seconds):
        record = dict(routine=routine, n=512, dtype="float32", nrhs=nrhs,
                      impl="oclla cho_solve", seconds=seconds, gflops=1.0,
                      percent_of_peak=None, ratio_to_reference=0.5)
        reference = dict(record, impl="numpy/scipy (CPU)", ratio_to_reference=1.0)
        return dict(device="dev", driver="1", platform="p", reference="numpy/scipy (CPU)",
                    date="2026-11-29", routine=routine, records=[record, reference])

    (tmp_path / "run.json").write_text("".join(
        json.dumps(d) for d in (doc("potrs", 16, 0.004), doc("potrs", 1, 0.001))))
    rows, _ = table.current(str(tmp_path))
    assert [(r["routine"], r["cells"][512][0]) for r in rows] == [
        ("potrs, 1 rhs", (1.0, 1.0)), ("potrs, 16 rhs", (4.0, 4.0))]
    assert table.routine_of(dict(routine="getrf", records=[])) == "getrf"


def test_variant_names_are_the_apis():
    """The README names the LU variants as lu_factor does, and the viewer accepts them."""
    from oclla.viewer import registry
    from oclla.viewer.app import _variant_key
    lu = registry.algorithm("lu")
    for name in ("faithful", "inplace", "crout", "window", "blocked"):
        assert f"`{name}`" in README
        assert lu.variant(_variant_key(lu, name))
    assert "--variant pivot" not in README
