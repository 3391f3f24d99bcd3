"""The bar above the matrix while the student picks the pivots (:mod:`viewer.pick_pivot`)."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets


class PickBar(QtWidgets.QFrame):
    """Buttons that pick the next pivot by a rule, Undo and Stop; the growth factor so far."""

    rule_requested = QtCore.Signal(str)
    undo_requested = QtCore.Signal()
    stop_requested = QtCore.Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        self.text = QtWidgets.QLabel("")
        self.text.setMinimumWidth(1)
        layout.addWidget(self.text, 1)
        self.buttons = {}
        for rule, label in (("partial", "Partial"), ("complete", "Complete"),
                            ("diagonal", "Diagonal")):
            button = QtWidgets.QPushButton(label)
            button.setToolTip(f"pick the next pivot by {rule} pivoting")
            button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _c=False, r=rule: self.rule_requested.emit(r))
            layout.addWidget(button)
            self.buttons[rule] = button
        for name, label, signal in (("undo", "Undo", self.undo_requested),
                                    ("stop", "Stop picking", self.stop_requested)):
            button = QtWidgets.QPushButton(label)
            button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
            button.clicked.connect(signal.emit)
            layout.addWidget(button)
            self.buttons[name] = button
        self.hide()

    def show_game(self, game) -> None:
        """Say where to click and what the growth factor is."""
        if game.done:
            where = "every pivot picked"
        else:
            where = (f"step {game.k + 1}: click a nonzero entry in rows and columns "
                     f"{game.k}…{game.n - 1}, or let a rule pick")
        self.text.setText(f"<b>growth factor {game.growth:.3g}</b> · {where}")
        for rule in ("partial", "complete", "diagonal"):
            self.buttons[rule].setEnabled(not game.done)
        self.buttons["undo"].setEnabled(game.k > 0)
        self.show()
