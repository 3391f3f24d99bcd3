"""The transport bar: play/step buttons, a scrub bar with markers, speed and position.

Buttons are the window's own QActions (so a button, its menu entry and its
key are one thing).  The scrub bar marks row swaps, slow kernels and a
failed pivot; clicking or dragging on it jumps there.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from . import theme as themes

MARKER_LABELS = {"swap": "row swap", "slow": "slow kernel", "fail": "failed pivot"}


class ScrubBar(QtWidgets.QWidget):
    """A track with one tick per marker and a handle at the current position."""

    position_requested = QtCore.Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.setMinimumHeight(28)
        self.setMouseTracking(True)
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding,
                           QtWidgets.QSizePolicy.Policy.Fixed)
        self.n_positions = 0
        self.position = 0
        self.markers: list = []
        self.accent = QtGui.QColor(themes.OVERLAYS["active"])
        self.track = QtGui.QColor("#909090")

    def set_run(self, n_positions: int, markers: list) -> None:
        self.n_positions, self.markers = n_positions, list(markers)
        self.update()

    def set_position(self, position: int) -> None:
        self.position = position
        self.update()

    def _x(self, position: int) -> float:
        margin = 8
        span = max(self.n_positions - 1, 1)
        return margin + (self.width() - 2 * margin) * position / span

    def position_at(self, x: float) -> int:
        margin = 8
        span = max(self.n_positions - 1, 1)
        frac = (x - margin) / max(self.width() - 2 * margin, 1)
        return int(min(max(round(frac * span), 0), span))

    def paintEvent(self, event) -> None:
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        h = self.height()
        mid = h / 2
        p.setPen(QtGui.QPen(self.track, 3))
        p.drawLine(QtCore.QPointF(self._x(0), mid),
                   QtCore.QPointF(self._x(max(self.n_positions - 1, 0)), mid))
        spans = {"swap": (2, mid), "slow": (mid, h - 2), "fail": (2, h - 2)}
        for kind in ("slow", "swap", "fail"):          # a failed pivot drawn last, on top
            p.setPen(QtGui.QPen(QtGui.QColor(themes.MARKERS[kind]), 3 if kind == "fail" else 2))
            top, bottom = spans[kind]
            for pos in (q for q, k in self.markers if k == kind):
                p.drawLine(QtCore.QPointF(self._x(pos), top),
                           QtCore.QPointF(self._x(pos), bottom))
        if self.n_positions:
            p.setPen(QtCore.Qt.PenStyle.NoPen)
            p.setBrush(self.accent)
            p.drawEllipse(QtCore.QPointF(self._x(self.position), mid), 7, 7)
        p.end()

    def mousePressEvent(self, event) -> None:
        if self.n_positions:
            self.position_requested.emit(self.position_at(event.position().x()))

    def mouseMoveEvent(self, event) -> None:
        if event.buttons() & QtCore.Qt.MouseButton.LeftButton and self.n_positions:
            self.position_requested.emit(self.position_at(event.position().x()))
            return
        pos = self.position_at(event.position().x())
        kinds = sorted({MARKER_LABELS[k] for p, k in self.markers if p == pos})
        self.setToolTip(f"step {pos}" + (": " + ", ".join(kinds) if kinds else ""))


class TransportBar(QtWidgets.QWidget):
    """Buttons bound to actions, the scrub bar, the speed and the step counter."""

    def __init__(self, actions: list, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        self.buttons = []
        for action in actions:
            button = QtWidgets.QToolButton()
            button.setDefaultAction(action)
            button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
            button.setAutoRaise(True)
            layout.addWidget(button)
            self.buttons.append(button)
        self.scrub = ScrubBar()
        layout.addWidget(self.scrub, 1)
        self.legend = QtWidgets.QLabel("")
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.legend.setMinimumWidth(1)          # gives way first in a narrow window
        layout.addWidget(self.legend)
        self.counter = QtWidgets.QLabel("–")
        self.counter.setMinimumWidth(90)
        self.speed = QtWidgets.QLabel("")
        layout.addWidget(self.counter)
        layout.addWidget(self.speed)

    def set_markers(self, n_positions: int, markers: list) -> None:
        """Ticks on the scrub bar, and a legend of the kinds present."""
        self.scrub.set_run(n_positions, markers)
        kinds = [k for k in MARKER_LABELS if any(m[1] == k for m in markers)]
        self.legend.setText(" ".join(f"<span style='color:{themes.MARKERS[k]}'>▮</span>"
                                     f"&nbsp;{MARKER_LABELS[k]}" for k in kinds))

    def apply_theme(self, theme) -> None:
        """High-contrast buttons in presentation mode (light buttons on black)."""
        if theme.name == "presentation":
            self.setStyleSheet("QToolButton { background: #FFFFFF; color: #000000; "
                               "border: 2px solid #FFFFFF; border-radius: 4px; "
                               "min-width: 44px; min-height: 44px; } "
                               f"QLabel {{ color: {theme.foreground}; }}")
        else:
            self.setStyleSheet("")

    def update_state(self, position: int, n_positions: int, speed: float) -> None:
        self.scrub.set_position(position)
        last = max(n_positions - 1, 0)
        self.counter.setText(f"step {position}/{last}" if n_positions else "–")
        self.speed.setText(f"{speed:g} steps/s")
