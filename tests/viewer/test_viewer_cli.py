"""The headless command line: exports, replays, and clear failures with the right exit status."""

import json
import os

import pytest
from PIL import Image

import oclla
from oclla.viewer import analysis, export
from oclla.viewer.app import main

from recording_files import viewer_child


def test_gif_has_one_frame_per_step(qapp, tmp_path, capsys):
    out = tmp_path / "run.gif"
    assert main(["--algorithm", "lu", "--variant", "pivot", "--n", "6", "--seed", "1",
                 "--view", "matrix", "--size", "400x300", "--export", str(out)]) == 0
    assert "6 frames (steps 0-5)" in capsys.readouterr().out
    with Image.open(out) as gif:
        assert gif.n_frames == 6          # the matrix before the first step, then 5 steps
        assert gif.size[0] > 100


def test_png_of_one_step_of_a_replay(qapp, tmp_path, recordings):
    out = tmp_path / "step.png"
    assert main(["--replay", str(recordings["lu8"]), "--step", "3", "--size", "900x600",
                 "--export", str(out)]) == 0
    with Image.open(out) as png:
        assert png.size == (900, 600)


def test_replay_export_needs_no_device(qapp, tmp_path, recordings, no_device):
    out = tmp_path / "replay.gif"
    assert main(["--replay", str(recordings["rfp7"]), "--steps", "2-4", "--view", "matrix",
                 "--size", "500x300", "--export", str(out)]) == 0
    with Image.open(out) as gif:
        assert gif.n_frames == 3


def test_timings_trace_and_recording_exports(qapp, tmp_path, recordings):
    src = str(recordings["lu8_blocked"])
    assert main(["--replay", src, "--export", str(tmp_path / "t.csv")]) == 0
    rec = oclla.load_recording(src)
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert len(lines) == 1 + len(rec.kernels)
    assert main(["--replay", src, "--export", str(tmp_path / "t.json")]) == 0
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == len(rec.kernels)
    assert main(["--replay", src, "--export", str(tmp_path / "copy.oclrec")]) == 0
    assert len(oclla.load_recording(tmp_path / "copy.oclrec").runs[0].steps) == \
        len(rec.runs[0].steps)


def test_compare_two_variants(qapp, tmp_path):
    out = tmp_path / "cmp.png"
    assert main(["--algorithm", "lu", "--variant", "faithful", "--compare-variant", "pivot",
                 "--compare-pivoting", "none", "--n", "6", "--step", "3", "--view", "compare",
                 "--size", "800x400", "--export", str(out)]) == 0
    assert out.exists()


def test_runs_of_a_recording_with_several(qapp, tmp_path, recordings, capsys):
    rec = oclla.load_recording(recordings["lu8"])
    rec.runs += oclla.load_recording(recordings["lu8_faithful"]).runs
    both = tmp_path / "both.oclrec"
    rec.save(both)
    assert main(["--replay", str(both), "--run", "1", "--compare-run", "0", "--view",
                 "compare", "--export", str(tmp_path / "c.png")]) == 0
    assert main(["--replay", str(both), "--run", "2", "--export", str(tmp_path / "x.png")]) == 2
    assert "--run 2: the recording has 2 run(s)" in capsys.readouterr().err


def test_mp4_is_written_or_refused_clearly(qapp, tmp_path, recordings, capsys):
    out = tmp_path / "run.mp4"
    code = main(["--replay", str(recordings["lu8"]), "--view", "matrix", "--size", "320x240",
                 "--export", str(out)])
    if export.mp4_encoder() is None:
        assert code == 1 and not out.exists()
        assert "MP4 export needs an encoder" in capsys.readouterr().err
    else:
        assert code == 0 and out.stat().st_size > 0


@pytest.mark.parametrize("args, code, message", [
    (["--replay", "missing.oclrec", "--export", "x.png"], 1, "no such file"),
    (["--algorithm", "lu", "--n", "0", "--export", "x.png"], 2, "--n must be at least 1"),
    (["--algorithm", "lu", "--variant", "tiled", "--export", "x.png"], 2, "has variants"),
    (["--algorithm", "lu", "--n", "4", "--step", "9", "--export", "x.png"], 2,
     "--step 9 is outside the run's steps 0-3"),
    (["--algorithm", "lu", "--n", "4", "--steps", "3-1", "--export", "x.gif"], 2,
     "--steps 3-1: the first step is after the last"),
    (["--algorithm", "lu", "--size", "10x10", "--export", "x.png"], 2, "--size wants WxH"),
])
def test_bad_arguments_fail_with_a_message(qapp, tmp_path, capsys, args, code, message):
    os.chdir(tmp_path)
    assert main(args) == code
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("args, message", [
    (["--export", "x.png"], "--export needs something to show"),
    (["--algorithm", "qr"], "invalid choice: 'qr'"),
    (["--algorithm", "lu", "--export", "x.bmp"], "unknown type .bmp"),
])
def test_usage_errors_exit_2(capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_a_bad_file_from_a_real_process(tmp_path):
    bad = tmp_path / "bad.oclrec"
    bad.write_bytes(b"not a recording at all")
    done = viewer_child("--replay", bad, "--export", tmp_path / "x.png")
    assert done.returncode == 1
    assert "oclla-viewer: error: Could not open bad.oclrec" in done.stderr
    assert "is not an oclla recording" in done.stderr and "Traceback" not in done.stderr


def test_markers_in_a_replayed_failure(qapp, tmp_path):
    """A failed run saved from the window replays with its failing step."""
    from oclla.viewer.runner import RunRequest, execute
    from viewer_testdata import zero_pivot_matrix
    out = execute(RunRequest("lu", "pivot", pivoting="none", family="typed",
                             matrix=zero_pivot_matrix(), n=5))
    path = tmp_path / "failed.oclrec"
    out.recording.save(path)
    run = analysis.viewable_runs(oclla.load_recording(path))[0]
    assert run.error and analysis.failed_position(run) == 3
    assert main(["--replay", str(path), "--export", str(tmp_path / "f.png")]) == 0
