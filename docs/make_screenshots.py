"""Regenerate the viewer screenshots in docs/images with the headless export.

    QT_QPA_PLATFORM=offscreen python docs/make_screenshots.py [NAME.png ...]

Each image is one ``oclla-viewer ... --export`` command line (listed below,
so the README's figures can always be remade) run on the default device,
then stored as a 256-colour PNG to keep the repository small.  Names given
on the command line remake only those images.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images"

TINY_PIVOT = "1e-8 1 2 -1 0.5; 1 2 -1 0.5 1; 2 -1 1 1 -0.5; -1 0.5 1 3 1; 0.5 1 -0.5 1 2"
NOT_SPD = "4 2 2 0; 2 5 3 1; 2 3 1.5 1; 0 1 1 3"

SHOTS = {
    "viewer-window.png": ["--algorithm", "lu", "--variant", "pivot", "--n", "12", "--seed", "1",
                          "--step", "5", "--size", "1280x800"],
    "viewer-matrix.png": ["--algorithm", "lu", "--variant", "faithful", "--family", "sycl4",
                          "--step", "2", "--view", "matrix", "--size", "900x560"],
    "viewer-compare.png": ["--algorithm", "lu", "--variant", "pivot", "--pivoting", "partial",
                           "--compare-variant", "pivot", "--compare-pivoting", "none",
                           "--values", TINY_PIVOT, "--step", "2", "--view", "compare",
                           "--size", "1400x620"],
    "viewer-substeps.png": ["--algorithm", "lu", "--variant", "pivot", "--n", "6", "--seed", "1",
                            "--step", "2", "--substeps", "--sub", "1", "--view", "matrix",
                            "--size", "1100x900"],
    "viewer-cholesky-fails.png": ["--algorithm", "cholesky", "--variant", "pivot",
                                  "--values", NOT_SPD, "--view", "matrix",
                                  "--size", "900x620"],
    "viewer-pick.png": ["--pick", "complete", "--values", TINY_PIVOT, "--step", "2",
                        "--size", "1280x800"],
    "viewer-solve.png": ["--algorithm", "lu", "--variant", "pivot", "--n", "6", "--seed", "1",
                         "--solve", "--step", "12", "--view", "matrix", "--size", "1200x640"],
    "viewer-timeline.png": ["--algorithm", "lu", "--variant", "faithful", "--compare-variant",
                            "pivot", "--compare-pivoting", "none", "--n", "48", "--seed", "1",
                            "--step", "20", "--view", "timeline", "--size", "1100x700"],
    "viewer-packed.png": ["--algorithm", "rfp_cholesky", "--variant", "pivot", "--n", "9",
                          "--seed", "1", "--step", "6", "--view", "matrix",
                          "--size", "1250x560"],
    "viewer-ad2at.png": ["--algorithm", "ad2at", "--variant", "pivot", "--n", "6", "--seed", "1",
                         "--step", "5", "--view", "matrix", "--size", "1300x600"],
    "viewer-presentation.png": ["--algorithm", "lu", "--variant", "pivot", "--n", "8",
                                "--seed", "3", "--step", "3", "--presentation",
                                "--size", "1920x1080"],
    "viewer-update.png": ["--algorithm", "cholesky_update", "--variant", "pivot", "--n", "8",
                          "--rank", "3", "--seed", "1", "--step", "6", "--view", "matrix",
                          "--size", "1200x600"],
    "viewer-downdate-fails.png": ["--algorithm", "cholesky_downdate", "--variant", "pivot",
                                  "--n", "8", "--rank", "2", "--seed", "1", "--fail",
                                  "--view", "matrix", "--size", "1200x600"],
    "viewer-inverse.png": ["--algorithm", "cho_inverse", "--variant", "steps", "--n", "10",
                           "--block", "4", "--seed", "1", "--step", "10",
                           "--size", "1280x800"],
    "viewer-logdet.png": ["--algorithm", "cho_logdet", "--n", "8", "--seed", "1", "--step", "1",
                          "--view", "matrix", "--size", "900x560"],
    "viewer-hybrid.png": ["--algorithm", "hybrid", "--variant", "static", "--n", "256",
                          "--block", "32", "--seed", "1", "--step", "10", "--view", "timeline",
                          "--size", "1100x560"],
    "viewer-sparse.png": ["--algorithm", "sparse_cholesky", "--variant", "rl", "--family",
                          "laplace2d", "--n", "900", "--ordering", "metis", "--large", "5e3",
                          "--compare-variant", "rl", "--compare-ordering", "rcm",
                          "--step", "40", "--view", "compare", "--size", "1500x640"],
}


def main(names=()) -> int:
    unknown = sorted(set(names) - set(SHOTS))
    if unknown:
        print(f"no such screenshot: {', '.join(unknown)} (see SHOTS)", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    from oclla.viewer.app import main as viewer
    OUT.mkdir(parents=True, exist_ok=True)
    for name, args in SHOTS.items():
        if names and name not in names:
            continue
        path = OUT / name
        code = viewer(args + ["--export", str(path)])
        if code:
            print(f"{name}: oclla-viewer exited with {code}", file=sys.stderr)
            return code
        with Image.open(path) as img:
            small = img.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
        small.save(path, optimize=True)
        print(f"{name}: {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
