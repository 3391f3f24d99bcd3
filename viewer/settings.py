"""What the viewer remembers between sessions (QSettings, organisation "oclla").

Window layout, theme, font scale, colour map, numbers in cells and their decimals, the last
run's choices (device included) and the recent recordings.  Values are read
back with their type and a default, so a damaged or foreign settings file
never stops the viewer.
"""

from __future__ import annotations

import os

from PySide6 import QtCore

from . import theme as themes
from .runner import RunRequest

ORGANIZATION = "oclla"
APPLICATION = "oclla-viewer"
MAX_RECENT = 8
THEMES = ("system", "light", "dark")
DECIMALS = 2
MAX_DECIMALS = 6


class Settings:
    """Typed access to the viewer's QSettings."""

    def __init__(self, qsettings: QtCore.QSettings | None = None):
        self.q = qsettings or QtCore.QSettings(ORGANIZATION, APPLICATION)

    def _get(self, key: str, default, kind):
        value = self.q.value(key, default)
        try:
            if kind is bool and isinstance(value, str):
                return value.lower() in ("1", "true", "yes")
            return kind(value)
        except (TypeError, ValueError):
            return default

    # ---- look ----
    @property
    def theme(self) -> str:
        value = self._get("view/theme", "system", str)
        return value if value in THEMES else "system"

    @theme.setter
    def theme(self, value: str) -> None:
        self.q.setValue("view/theme", value)

    @property
    def font_scale(self) -> float:
        return min(max(self._get("view/font_scale", 1.0, float), 0.5), 3.0)

    @font_scale.setter
    def font_scale(self, value: float) -> None:
        self.q.setValue("view/font_scale", float(value))

    @property
    def colormap(self) -> str:
        value = self._get("view/colormap", themes.COLORMAPS[0], str)
        return value if value in themes.COLORMAPS else themes.COLORMAPS[0]

    @colormap.setter
    def colormap(self, value: str) -> None:
        self.q.setValue("view/colormap", value)

    @property
    def numbers(self) -> bool:
        return self._get("view/numbers", True, bool)

    @numbers.setter
    def numbers(self, value: bool) -> None:
        self.q.setValue("view/numbers", bool(value))

    @property
    def decimals(self) -> int:
        """Digits after the point of the numbers in cells (0 to :data:`MAX_DECIMALS`)."""
        return min(max(self._get("view/decimals", DECIMALS, int), 0), MAX_DECIMALS)

    @decimals.setter
    def decimals(self, value: int) -> None:
        self.q.setValue("view/decimals", min(max(int(value), 0), MAX_DECIMALS))

    # ---- window ----
    def save_window(self, geometry: QtCore.QByteArray, state: QtCore.QByteArray) -> None:
        self.q.setValue("window/geometry", geometry)
        self.q.setValue("window/state", state)

    def window(self):
        """(geometry, state) as saved, or (None, None)."""
        g, s = self.q.value("window/geometry"), self.q.value("window/state")
        ok = isinstance(g, QtCore.QByteArray) and isinstance(s, QtCore.QByteArray)
        return (g, s) if ok else (None, None)

    # ---- runs ----
    def last_request(self) -> RunRequest:
        d = RunRequest()
        return RunRequest(
            algorithm=self._get("run/algorithm", d.algorithm, str),
            variant=self._get("run/variant", d.variant, str),
            n=self._get("run/n", d.n, int), dtype=self._get("run/dtype", d.dtype, str),
            family=self._get("run/family", d.family, str),
            seed=self._get("run/seed", d.seed, int),
            kappa=self._get("run/kappa", d.kappa, float),
            device=self._get("run/device", "", str) or None)

    def remember_request(self, req: RunRequest) -> None:
        for key in ("algorithm", "variant", "n", "dtype", "family", "seed", "kappa"):
            self.q.setValue(f"run/{key}", getattr(req, key))
        self.q.setValue("run/device", req.device or "")

    # ---- recent files ----
    @property
    def recent(self) -> list:
        value = self.q.value("files/recent", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or []) if isinstance(v, str)][:MAX_RECENT]

    def add_recent(self, path) -> None:
        path = os.path.abspath(os.fspath(path))
        items = [path] + [p for p in self.recent if p != path]
        self.q.setValue("files/recent", items[:MAX_RECENT])

    def sync(self) -> None:
        self.q.sync()
