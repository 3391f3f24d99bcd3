"""Every command of the window as a QAction, its menu place and its keys.

One table (:data:`ACTIONS`) gives the name, the menu, the text and the keys
of each command; :func:`build` turns it into QActions wired to the window's
methods, and :func:`shortcut_sheet` lists them, so the menus, the keys and
the ``?`` sheet cannot disagree.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

# name, menu, text, keys, checkable
ACTIONS = (
    ("open", "File", "&Open recording…", ("Ctrl+O",), False),
    ("save", "File", "&Save recording as…", ("Ctrl+S",), False),
    ("export_image", "File", "Export view as PNG/SVG…", ("Ctrl+E",), False),
    ("export_animation", "File", "Export steps as GIF/MP4…", ("Ctrl+Shift+E",), False),
    ("export_csv", "File", "Export timings as CSV…", (), False),
    ("export_trace", "File", "Export Chrome/Perfetto trace…", (), False),
    ("quit", "File", "&Quit", ("Ctrl+Q",), False),
    ("new_run", "Run", "&New run…", ("Ctrl+N",), False),
    ("cancel_run", "Run", "&Cancel run", ("Esc",), False),
    ("compare_run", "Run", "Compare with a new run…", ("Ctrl+Shift+N",), False),
    ("compare_file", "Run", "Compare with a recording…", (), False),
    ("compare_other", "Run", "Compare with the next run of this recording", (), False),
    ("pick_pivots", "Run", "Pick the pivots yourself (LU)", ("Ctrl+P",), False),
    ("compare_stop", "Run", "Stop comparing", (), False),
    ("sync_step", "Run", "Sync comparison by step number (not finished columns)", (), True),
    ("play", "Playback", "Play / pause", ("Space",), False),
    ("back", "Playback", "Step back", ("Left",), False),
    ("forward", "Playback", "Step forward", ("Right",), False),
    ("back10", "Playback", "Back 10 steps", ("PgUp",), False),
    ("forward10", "Playback", "Forward 10 steps", ("PgDown",), False),
    ("first", "Playback", "First step", ("Home",), False),
    ("last", "Playback", "Last step", ("End",), False),
    ("faster", "Playback", "Faster", ("+", "="), False),
    ("slower", "Playback", "Slower", ("-",), False),
    ("restart", "Playback", "Restart", ("R",), False),
    ("goto", "Playback", "Go to step…", ("Ctrl+G",), False),
    ("presentation", "View", "Presentation mode", ("P",), True),
    ("fullscreen", "View", "Full screen", ("F11",), True),
    ("numbers", "View", "Numbers in cells (small matrices)", ("N",), True),
    ("more_decimals", "View", "More decimals in cells", (".",), False),
    ("fewer_decimals", "View", "Fewer decimals in cells", (",",), False),
    ("substeps", "View", "LU sub-steps with L, U and P", ("S",), True),
    ("font_bigger", "View", "Bigger fonts", ("Ctrl++", "Ctrl+="), False),
    ("font_smaller", "View", "Smaller fonts", ("Ctrl+-",), False),
    ("shortcuts", "Help", "Keyboard shortcuts", ("?",), False),
    ("about", "Help", "About", (), False),
)

MENUS = ("File", "Run", "Playback", "View", "Help")


def build(window) -> dict:
    """QActions for :data:`ACTIONS`, triggering ``window.do_<name>``, in the window's menus."""
    menus = {name: window.menuBar().addMenu(f"&{name}") for name in MENUS}
    actions = {}
    for name, menu, text, keys, checkable in ACTIONS:
        action = QtGui.QAction(text, window)
        action.setObjectName(name)
        action.setShortcuts([QtGui.QKeySequence(k) for k in keys])
        action.setShortcutContext(QtCore.Qt.ShortcutContext.WindowShortcut)
        action.setCheckable(checkable)
        handler = getattr(window, f"do_{name}")
        if checkable:
            action.toggled.connect(handler)
        else:
            action.triggered.connect(lambda _checked=False, h=handler: h())
        menus[menu].addAction(action)
        window.addAction(action)      # keys work even when the menu bar is hidden
        actions[name] = action
        if name in ("quit", "cancel_run", "sync_step", "goto"):
            menus[menu].addSeparator()
    window.menus = menus
    return actions


def shortcut_sheet(actions: dict, parent=None) -> QtWidgets.QDialog:
    """A dialog listing every command with its keys."""
    dialog = QtWidgets.QDialog(parent)
    dialog.setWindowTitle("Keyboard shortcuts")
    table = QtWidgets.QTableWidget(0, 3)
    table.setHorizontalHeaderLabels(("keys", "command", "menu"))
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
    rows = [(name, menu, text) for name, menu, text, _k, _c in ACTIONS if actions[name].shortcuts()]
    table.setRowCount(len(rows))
    for row, (name, menu, text) in enumerate(rows):
        keys = ", ".join(k.toString(QtGui.QKeySequence.SequenceFormat.NativeText)
                         for k in actions[name].shortcuts())
        for col, value in enumerate((keys, text.replace("&", "").rstrip("…"), menu)):
            table.setItem(row, col, QtWidgets.QTableWidgetItem(value))
    table.resizeColumnsToContents()
    table.horizontalHeader().setStretchLastSection(True)
    layout = QtWidgets.QVBoxLayout(dialog)
    layout.addWidget(table)
    close = QtWidgets.QPushButton("Close")
    close.clicked.connect(dialog.accept)
    layout.addWidget(close)
    dialog.resize(460, 560)
    dialog.table = table
    return dialog
