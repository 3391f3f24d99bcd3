"""Saving what the viewer shows: images, animations, timings, traces.

* :func:`save_image` — a widget as PNG (pixels) or SVG (vectors).
* :func:`save_animation` — one frame per position as an animated GIF
  (Pillow), or MP4 where an encoder is installed (PyAV or imageio-ffmpeg;
  :func:`mp4_encoder` says which, :class:`ExportError` when there is none).
* :func:`save_csv` — one row per kernel (:data:`viewer.analysis.CSV_HEADER`).
* Chrome/Perfetto trace JSON and recordings are written by
  :meth:`oclla.Recording.to_chrome_trace` and :meth:`oclla.Recording.save`.
"""

from __future__ import annotations

import csv
import importlib.util
import os

import numpy as np
from PySide6 import QtCore, QtGui

from . import analysis

IMAGE_TYPES = (".png", ".svg")
ANIMATION_TYPES = (".gif", ".mp4")


class ExportError(RuntimeError):
    """An export that cannot be written, with a message for the user."""


def _ext(path) -> str:
    return os.path.splitext(os.fspath(path))[1].lower()


def save_image(widget, path) -> None:
    """``widget`` as it looks now: PNG from its pixels, SVG by painting it into vectors."""
    ext = _ext(path)
    path = os.fspath(path)
    if ext == ".png":
        if not widget.grab().save(path, "PNG"):
            raise ExportError(f"could not write {path}")
        return
    if ext == ".svg":
        from PySide6 import QtSvg
        gen = QtSvg.QSvgGenerator()
        gen.setFileName(path)
        gen.setSize(widget.size())
        gen.setViewBox(QtCore.QRect(QtCore.QPoint(0, 0), widget.size()))
        gen.setTitle("oclla viewer")
        painter = QtGui.QPainter(gen)
        try:
            widget.render(painter, QtCore.QPoint())
        finally:
            painter.end()
        if not os.path.exists(path):
            raise ExportError(f"could not write {path}")
        return
    raise ExportError(f"cannot export an image as {ext or 'a file without extension'}; "
                      f"use {' or '.join(IMAGE_TYPES)}")


def qimage_to_rgb(image: QtGui.QImage) -> np.ndarray:
    """(h, w, 3) uint8 copy of a QImage."""
    img = image.convertToFormat(QtGui.QImage.Format.Format_RGB888)
    w, h, stride = img.width(), img.height(), img.bytesPerLine()
    buf = np.frombuffer(img.constBits(), dtype=np.uint8, count=h * stride)
    return buf.reshape(h, stride)[:, :w * 3].reshape(h, w, 3).copy()


def mp4_encoder() -> str | None:
    """The imageio plugin that can write MP4 here ("pyav" or "FFMPEG"), or None."""
    if importlib.util.find_spec("av") is not None:
        return "pyav"
    if importlib.util.find_spec("imageio_ffmpeg") is not None:
        return "FFMPEG"
    return None


LAST_FRAME_HOLD = 3.0
"""An animation rests on its last frame this many seconds before it loops."""


def gif_frames(frames, keep_colors=()) -> list:
    """RGB frames as palette images sharing one palette that holds ``keep_colors`` exactly
    (so an outline keeps its colour: a per-frame palette merges similar oranges)."""
    from PIL import Image
    keep = [QtGui.QColor(c).getRgb()[:3] for c in dict.fromkeys(keep_colors)]
    sample = np.concatenate([f[::2, ::2] for f in frames], axis=0)
    base = Image.fromarray(sample).quantize(colors=256 - len(keep),
                                            method=Image.Quantize.MEDIANCUT)
    palette = base.getpalette()[:3 * (256 - len(keep))]
    for rgb in keep:
        palette += list(rgb)
    ref = Image.new("P", (1, 1))
    ref.putpalette(palette + [0] * (768 - len(palette)))
    return [Image.fromarray(f).quantize(palette=ref, dither=Image.Dither.NONE)
            for f in frames]


def save_animation(render, positions, path, fps: float = 4.0, keep_colors=()) -> int:
    """Render each position with ``render(position) -> QImage`` and write an animation.

    Returns the number of frames written (one per position).  A GIF shares one
    palette that holds ``keep_colors`` exactly and rests :data:`LAST_FRAME_HOLD`
    seconds on its last frame.
    """
    ext = _ext(path)
    path = os.fspath(path)
    if ext not in ANIMATION_TYPES:
        raise ExportError(f"cannot export an animation as {ext or 'a file without extension'};"
                          f" use {' or '.join(ANIMATION_TYPES)}")
    encoder = mp4_encoder() if ext == ".mp4" else None
    if ext == ".mp4" and encoder is None:
        raise ExportError("MP4 export needs an encoder: pip install av (or imageio-ffmpeg); "
                          "GIF export works without one")
    frames = [qimage_to_rgb(render(p)) for p in positions]
    if not frames:
        raise ExportError("no steps to export")
    if ext == ".gif":
        images = gif_frames(frames, keep_colors)
        durations = [int(round(1000 / fps))] * len(images)
        durations[-1] = max(durations[-1], int(LAST_FRAME_HOLD * 1000))
        images[0].save(path, save_all=True, append_images=images[1:], loop=0,
                       duration=durations, optimize=False, disposal=1)
        return len(frames)
    import imageio.v3 as iio
    h, w = (frames[0].shape[0] // 2) * 2, (frames[0].shape[1] // 2) * 2   # yuv420 wants even
    stack = np.stack([f[:h, :w] for f in frames])
    if encoder == "pyav":
        iio.imwrite(path, stack, plugin="pyav", codec="libx264", fps=fps)
    else:
        import imageio.v2
        imageio.v2.mimwrite(path, list(stack), format="FFMPEG", fps=fps, macro_block_size=1)
    return len(frames)


def save_csv(recording, path) -> int:
    """Kernel timings as CSV; returns the number of rows."""
    rows = analysis.timing_rows(recording)
    with open(os.fspath(path), "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(analysis.CSV_HEADER)
        writer.writerows(rows)
    return len(rows)
