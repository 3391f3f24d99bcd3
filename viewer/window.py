"""The main window: views, docks and menus around one :class:`~viewer.model.ViewerModel`.

Layout: the run view (and, when comparing, a second one beside it) above the
transport bar; the timeline dock below; the step details dock on the right;
the status bar with the numbers of the current step.  Every command is a
QAction (:mod:`viewer.actions`); each ``do_<name>`` method below is one.

Nothing here touches an OpenCL device except a run, which happens in a
:class:`~viewer.worker.RunThread`; a recording replays with no device.
"""

from __future__ import annotations

import dataclasses
import os

from PySide6 import QtCore, QtGui, QtWidgets

import oclla

from . import actions as actions_mod
from . import analysis, export, first_runs, registry, sparse, tiles, model as model_mod
from . import theme as themes
from .details import DetailsPanel, status_text
from .lazy import LazyPage
from .pick_bar import PickBar
from .pick_pivot import PickError, PivotGame
from .matrix_view import NUMBERS_MAX_N
from .run_dialog import RunDialog, list_devices
from .run_view import RunView, position_title
from .runner import RunRequest
from .settings import Settings
from .sparse_view import SparseView
from .tiles_view import TilesView
from .timeline import TimelineView
from .transport import TransportBar
from .welcome import WelcomePage
from .worker import RunThread

RECORDING_FILTER = "oclla recordings (*.oclrec *.npz);;All files (*)"
VIEWS = ("window", "matrix", "compare", "timeline", "steps", "details")
"""What the headless export can render (see :meth:`MainWindow.view_widget`)."""


class MessageBar(QtWidgets.QFrame):
    """A dismissable line at the top of the window for errors and notices."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        self.label = QtWidgets.QLabel("")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QtWidgets.QToolButton()
        close.setText("✕")
        close.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        close.clicked.connect(self.hide)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.kind = ""
        self.hide()

    def show_text(self, text: str, kind: str = "error") -> None:
        colors = {"error": ("#FDECEA", "#8A1C12"), "info": ("#E8F4FD", "#0B4A75")}
        bg, fg = colors.get(kind, colors["info"])
        self.setStyleSheet(f"MessageBar {{ background: {bg}; }} QLabel {{ color: {fg}; }}")
        self.kind = kind
        self.label.setText(text)
        self.show()

    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


class MainWindow(QtWidgets.QMainWindow):
    """The viewer window (see the module docstring)."""

    def __init__(self, settings: Settings | None = None, device_lister=list_devices):
        super().__init__()
        self.setWindowTitle("oclla viewer")
        self.model = model_mod.ViewerModel()
        self.settings = settings or Settings()
        self.device_lister = device_lister
        self.thread: RunThread | None = None
        self._notice_text = ""          # the library's message shown while a run goes
        self.last_request: RunRequest = self.settings.last_request()
        self.shortcut_dialog = None
        self._base_palette = QtWidgets.QApplication.palette()
        self._base_font = QtWidgets.QApplication.font()

        self.message = MessageBar()
        # the sides of the view, left to right, each built when a run first needs it: the
        # heat map, a sparse run's patterns and tree, a tile run's tiles, task graph and lanes;
        # then side B of a comparison (heat map or sparse)
        self._names = {"main_view": ("", ""), "compare_view": ("B: ", "")}  # (label, name)
        self._sides = {"main_view": LazyPage(lambda: self._make_run_view("main_view")),
                       "sparse_main": LazyPage(lambda: self._make_view(SparseView)),
                       "tiles_main": LazyPage(lambda: self._make_view(TilesView)),
                       "compare_view": LazyPage(lambda: self._make_run_view("compare_view")),
                       "sparse_compare": LazyPage(lambda: self._make_view(SparseView))}
        self.views = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        for page in self._sides.values():
            page.setVisible(False)
            self.views.addWidget(page)
        self.run_choice = QtWidgets.QComboBox()
        self.run_choice.setSizeAdjustPolicy(
            QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.run_choice.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.run_choice.currentIndexChanged.connect(self._run_chosen)
        self.run_choice.setVisible(False)

        self.actions = actions_mod.build(self)
        transport = [self.actions[n] for n in ("first", "back", "play", "forward", "last")]
        self.transport = TransportBar(transport)
        self.transport.layout().insertWidget(0, self.run_choice)
        self.transport.scrub.position_requested.connect(self.model.go_to)

        self.welcome = WelcomePage(first_runs.FIRST_RUNS)
        self.welcome.chosen.connect(self.start_first_run)
        self.welcome.open_requested.connect(self.do_open)
        self.pages = QtWidgets.QStackedWidget()
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(self.views)
        self.pages.setMinimumSize(200, 150)     # the welcome page never widens the window
        central = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 4)
        self.pick_bar = PickBar()
        self.pick_bar.rule_requested.connect(self.pick_by_rule)
        self.pick_bar.undo_requested.connect(self.undo_pick)
        self.pick_bar.stop_requested.connect(self.stop_picking)
        self.game: PivotGame | None = None
        layout.addWidget(self.message)
        layout.addWidget(self.pick_bar)
        layout.addWidget(self.pages, 1)
        layout.addWidget(self.transport)
        self.setCentralWidget(central)
        self._queued: list = []            # (request, purpose) to run after the current one
        self._presenting = False           # the docks and menus put away (presentation)
        self._state_before = None          # saveState() from before presenting

        self.timeline = TimelineView()
        self.timeline.kernel_clicked.connect(self.model.select_kernel)
        self.timeline.position_clicked.connect(self.model.go_to)
        self.details = DetailsPanel()
        self.details.kernel_selected.connect(self.model.select_kernel)
        self.timeline_dock = self._dock("Timeline", self.timeline,
                                        QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
        details_scroll = QtWidgets.QScrollArea()       # larger fonts scroll, never clip
        details_scroll.setWidgetResizable(True)
        details_scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        details_scroll.setWidget(self.details)
        self.details_dock = self._dock("Step", details_scroll,
                                       QtCore.Qt.DockWidgetArea.RightDockWidgetArea)

        self.status = QtWidgets.QLabel("")
        self.statusBar().addWidget(self.status, 1)
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setFormat("step %v of %m")
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.cancel_button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.cancel_button.clicked.connect(self.do_cancel_run)
        for w in (self.progress, self.cancel_button):
            self.statusBar().addPermanentWidget(w)
            w.setVisible(False)

        self.timer = QtCore.QTimer(self)
        self.timer.timeout.connect(self.model.tick)
        self.model.subscribe(self._on_model)

        self._recent_menu = self.menus["File"].addMenu("Open &recent")
        self.menus["File"].insertMenu(self.actions["save"], self._recent_menu)
        self._theme_actions = self._choice_menu("Theme", ("system", "light", "dark"),
                                                self.settings.theme, self.set_theme)
        self._cmap_actions = self._choice_menu("Colour map", themes.COLORMAPS,
                                               self.settings.colormap, self.set_colormap)
        with QtCore.QSignalBlocker(self.actions["numbers"]):   # apply_look below shows it
            self.actions["numbers"].setChecked(self.settings.numbers)
        self.actions["cancel_run"].setEnabled(False)
        hints = QtGui.QGuiApplication.styleHints()
        hints.colorSchemeChanged.connect(self._scheme_changed)
        self._refresh_recent()
        self._set_icons()
        self.resize(1280, 820)
        self.details_dock.setMinimumWidth(340)
        self.resizeDocks([self.timeline_dock], [260], QtCore.Qt.Orientation.Vertical)
        self.resizeDocks([self.details_dock], [360], QtCore.Qt.Orientation.Horizontal)
        geometry, state = self.settings.window()
        if geometry is not None:
            self.restoreGeometry(geometry)
            self.restoreState(state)
        self.apply_look()
        self._on_model(set(model_mod.CHANGES))

    # ---- the views, each built when first shown or asked for ----
    @property
    def main_view(self) -> RunView:
        """The heat map of the run (side A of a comparison)."""
        return self._sides["main_view"].widget()

    @property
    def compare_view(self) -> RunView:
        """The heat map of side B of a comparison."""
        return self._sides["compare_view"].widget()

    @property
    def sparse_main(self) -> SparseView:
        """A sparse run's patterns and elimination tree."""
        return self._sides["sparse_main"].widget()

    @property
    def sparse_compare(self) -> SparseView:
        """Side B of a comparison of sparse runs."""
        return self._sides["sparse_compare"].widget()

    @property
    def tiles_main(self) -> TilesView:
        """A tile run's tiles, task graph and lanes."""
        return self._sides["tiles_main"].widget()

    def _make_run_view(self, side: str) -> RunView:
        view = RunView()
        view.label, view.name = self._names[side]
        self._style_run_view(view, self.current_theme())
        if side == "main_view":
            view.show_factors = self.model.substeps
            view.matrix.clicked.connect(self._cell_clicked)
        return view

    def _make_view(self, cls):
        view = cls()
        view.apply_theme(self.current_theme())
        return view

    def _style_run_view(self, view: RunView, theme: themes.Theme) -> None:
        view.apply_theme(theme, self.settings.colormap, matrix_numbers(self.settings.numbers),
                         self.settings.decimals)

    def _built(self, *sides: str) -> list:
        """The views among ``sides`` (names of :attr:`_sides`) built so far."""
        return [w for w in (self._sides[s].built_widget() for s in sides) if w is not None]

    # ---- construction helpers ----
    def _set_icons(self) -> None:
        sp = QtWidgets.QStyle.StandardPixmap
        for name, pixmap in (("first", sp.SP_MediaSkipBackward), ("back", sp.SP_MediaSeekBackward),
                             ("play", sp.SP_MediaPlay), ("forward", sp.SP_MediaSeekForward),
                             ("last", sp.SP_MediaSkipForward)):
            self.actions[name].setIcon(self.style().standardIcon(pixmap))

    def _dock(self, title, widget, area) -> QtWidgets.QDockWidget:
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.lower()}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.menus["View"].addAction(dock.toggleViewAction())
        return dock

    def _choice_menu(self, title, choices, current, handler) -> dict:
        menu = self.menus["View"].addMenu(title)
        group = QtGui.QActionGroup(self)
        out = {}
        for choice in choices:
            a = menu.addAction(choice)
            a.setCheckable(True)
            a.setChecked(choice == current)
            a.triggered.connect(lambda _c=False, v=choice: handler(v))
            group.addAction(a)
            out[choice] = a
        return out

    # ---- look ----
    def current_theme(self) -> themes.Theme:
        dark = QtGui.QGuiApplication.styleHints().colorScheme() == QtCore.Qt.ColorScheme.Dark
        base = themes.pick(self.settings.theme, dark, self.model.presentation)
        return dataclasses.replace(base, font_scale=base.font_scale * self.settings.font_scale)

    def apply_look(self) -> None:
        theme = self.current_theme()
        app = QtWidgets.QApplication.instance()
        if theme.name == "light":
            app.setPalette(self._base_palette)
        else:
            pal = QtGui.QPalette()
            for role, color in ((QtGui.QPalette.ColorRole.Window, theme.background),
                                (QtGui.QPalette.ColorRole.Base, theme.background),
                                (QtGui.QPalette.ColorRole.Button, "#333333"),
                                (QtGui.QPalette.ColorRole.WindowText, theme.foreground),
                                (QtGui.QPalette.ColorRole.Text, theme.foreground),
                                (QtGui.QPalette.ColorRole.ButtonText, theme.foreground)):
                pal.setColor(role, QtGui.QColor(color))
            app.setPalette(pal)
        font = QtGui.QFont(self._base_font)
        size = self._base_font.pointSizeF() if self._base_font.pointSizeF() > 0 else 10.0
        font.setPointSizeF(size * theme.font_scale)
        self.setFont(font)
        for view in self._built("sparse_main", "sparse_compare", "tiles_main"):
            view.apply_theme(theme)
        for view in self._built("main_view", "compare_view"):
            self._style_run_view(view, theme)
        self.timeline.apply_theme(theme)
        self.transport.apply_theme(theme)
        self.welcome.apply_theme(theme)
        if self.model.run is not None:
            self.details.show_legend(self.model.run, theme)
        self._on_model({"position"})

    def _scheme_changed(self, _scheme) -> None:
        """The system switched light/dark: follow it when the theme is "system"."""
        self.apply_look()

    def set_theme(self, name: str) -> None:
        self.settings.theme = name
        self.apply_look()

    def set_colormap(self, name: str) -> None:
        self.settings.colormap = name
        self.apply_look()

    # ---- model -> widgets ----
    def _on_model(self, changes: set) -> None:
        m = self.model
        run = m.run
        if "playback" in changes:
            self.timer.setInterval(m.interval_ms)
            if m.playing and not self.timer.isActive():
                self.timer.start()
            elif not m.playing:
                self.timer.stop()
            self.actions["play"].setText("Pause" if m.playing else "Play")
            icon = (QtWidgets.QStyle.StandardPixmap.SP_MediaPause if m.playing
                    else QtWidgets.QStyle.StandardPixmap.SP_MediaPlay)
            self.actions["play"].setIcon(self.style().standardIcon(icon))
        if "presentation" in changes:
            self.actions["presentation"].setChecked(m.presentation)
            self._present(m.presentation)
            self.apply_look()
            return
        if "substeps" in changes:
            self.actions["substeps"].setChecked(m.substeps)
            for view in self._built("main_view"):
                view.show_factors = m.substeps
        if "recording" in changes:
            self._show_recording()
        if "compare" in changes and self.timeline.runs != [run, m.compare_run]:
            self._show_sides()
            self.timeline.set_runs(run, m.compare_run)
            self._name_views()
        redraw = run is not None and bool(changes & {"recording", "position", "kernel",
                                                     "compare", "substeps"})
        if redraw:
            self._show_sides()        # before the views page shows: the splitter sizes them
        self.pages.setCurrentWidget(self.views if run is not None else self.welcome)
        if redraw:
            comparing = m.compare_run is not None
            vmax = self.colour_range()
            region = m.highlighted_region if m.selected_kernel is not None else None
            if self._sides["tiles_main"].isVisibleTo(self):
                tile_run = tiles.tile_run(run)
                if self.tiles_main.run is not tile_run:
                    self.tiles_main.set_run(tile_run)
                self.tiles_main.set_time(tile_run.time_at(m.position))
            elif self._sides["sparse_main"].isVisibleTo(self):
                self.sparse_main.show_run(run, m.position, position_title(
                    run, m.position, "".join(self._names["main_view"])))
            else:
                self.main_view.show_run(run, m.position, vmax, region, m.frame,
                                        summary=comparing)
            if comparing and self._sides["sparse_compare"].isVisibleTo(self):
                self.sparse_compare.show_run(m.compare_run, m.compare_position, position_title(
                    m.compare_run, m.compare_position, "B: " + self._names["compare_view"][1]))
            elif comparing:
                self.compare_view.show_run(m.compare_run, m.compare_position, vmax,
                                           summary=True)
            self.timeline.set_position(m.position, m.step_kernels, m.selected_kernel,
                                       m.compare_position if m.compare_run is not None
                                       else None)
            self.details.show_position(run, m.position, m.step_kernels, m.selected_kernel)
        self.transport.update_state(m.position, m.n_positions, m.speed)
        self.status.setText(status_text(m))

    def _show_sides(self) -> None:
        """Each side of the view shows its run as a heat map, or a sparse run as patterns
        and its tree (:mod:`viewer.sparse_view`); the main side shows a tile run's
        tiles, task graph and lanes (:mod:`viewer.tiles_view`).  The sides shown share the
        width equally each time one comes or goes."""
        m = self.model
        pages = self._sides
        before = [p.isVisibleTo(self.views) for p in pages.values()]
        for side, run in (("main", m.run), ("compare", m.compare_run)):
            is_sparse = run is not None and sparse.structure(run) is not None
            is_tiles = side == "main" and run is not None and tiles.tile_run(run) is not None
            pages[f"{side}_view"].setVisible(run is not None and not is_sparse and not is_tiles)
            pages[f"sparse_{side}"].setVisible(is_sparse)
            if side == "main":
                pages["tiles_main"].setVisible(is_tiles)
        shown = [p.isVisibleTo(self.views) for p in pages.values()]
        if shown != before and any(shown):      # the sides share the width equally
            width = max(self.views.width(), sum(self.views.sizes()))
            self.views.setSizes([width // sum(shown) if s else 0 for s in shown])

    def colour_range(self) -> float:
        """Half-width of the colour scale: one scale for both sides of a comparison."""
        m = self.model
        vmax = m.cached("vmax", lambda: analysis.value_range(m.run))
        if m.compare_run is not None:
            vmax = max(vmax, analysis.value_range(m.compare_run))
        return vmax

    def _name_views(self) -> None:
        """A comparison's titles name what differs ("A: partial pivoting")."""
        m = self.model
        if m.compare_run is None or m.run is None:
            self._names["main_view"] = ("", "")
        else:
            a, b = registry.difference_titles(m.run, m.compare_run)
            self._names.update(main_view=("A: ", a), compare_view=("B: ", b))
        for side, (label, name) in self._names.items():
            for view in self._built(side):
                view.label, view.name = label, name

    def _present(self, on: bool) -> None:
        """Presentation: the matrix gets the screen (no menus, no side panels); leaving it
        brings back the panels that were open, and only those.  Not presenting, nothing
        is touched: the layout restored from the settings stays as it was saved."""
        if on and not self._presenting:
            self._state_before = self.saveState()
            for d in (self.timeline_dock, self.details_dock):
                d.hide()
        elif not on and self._presenting:
            self.restoreState(self._state_before)       # the docks, shown or not, and sizes
        self._presenting = on
        self.menuBar().setVisible(not on)

    def _show_recording(self) -> None:
        m = self.model
        self.run_choice.blockSignals(True)
        self.run_choice.clear()
        for r in m.runs:
            self.run_choice.addItem(f"{registry.run_title(r)} · {'×'.join(map(str, r.shape))} "
                                    f"{r.dtype}")
        self.run_choice.setCurrentIndex(m.run_index)
        self.run_choice.setVisible(len(m.runs) > 1)
        self.run_choice.blockSignals(False)
        run = m.run
        if self.game is not None and run is not self.game.run:
            self.stop_picking()          # another recording replaced the game
        self.transport.set_markers(m.n_positions, analysis.markers(run))
        self.timeline.set_runs(run, m.compare_run)
        self.details.show_legend(run, self.current_theme())
        self._name_views()
        name = os.path.basename(m.path) if m.path else "new run"
        self.setWindowTitle(f"oclla viewer · {name}")

    def _run_chosen(self, index: int) -> None:
        if 0 <= index < len(self.model.runs):
            self.model.set_run(index)

    # ---- messages ----
    def show_message(self, text: str, kind: str = "error") -> None:
        self.message.show_text(text, kind)
        self.statusBar().showMessage(text.splitlines()[0], 8000)

    # ---- recordings ----
    def open_recording(self, path) -> bool:
        """Open a recording; on failure say why and keep the current one."""
        try:
            rec = oclla.load_recording(path)
            self.model.set_recording(rec, os.fspath(path))
        except (oclla.RecordingError, ValueError) as exc:
            self.show_message(f"Could not open {os.path.basename(os.fspath(path))}: {exc}")
            return False
        self.message.hide()
        self.settings.add_recent(path)
        self._refresh_recent()
        return True

    def _refresh_recent(self) -> None:
        self._recent_menu.clear()
        for path in self.settings.recent:
            a = self._recent_menu.addAction(os.path.basename(path))
            a.setToolTip(path)
            a.triggered.connect(lambda _c=False, p=path: self.open_recording(p))
        self._recent_menu.setEnabled(bool(self.settings.recent))

    def _need_recording(self) -> bool:
        if self.model.recording is None:
            self.show_message("Nothing to save yet: make a run or open a recording.", "info")
            return False
        return True

    def _ask_path(self, title, filt, save=True):
        dialog = (QtWidgets.QFileDialog.getSaveFileName if save
                  else QtWidgets.QFileDialog.getOpenFileName)
        path, _ = dialog(self, title, "", filt)
        return path or None

    def do_open(self) -> None:
        path = self._ask_path("Open recording", RECORDING_FILTER, save=False)
        if path:
            self.open_recording(path)

    def do_save(self) -> None:
        if self._need_recording():
            path = self._ask_path("Save recording", RECORDING_FILTER)
            if path:
                self.model.recording.save(path)
                self.settings.add_recent(path)
                self._refresh_recent()

    def do_quit(self) -> None:
        self.close()

    # ---- exports ----
    def view_widget(self, name: str) -> QtWidgets.QWidget:
        """The widget behind a view name of :data:`VIEWS` (a sparse run's "matrix" is its
        sparse view)."""
        run = self.model.run
        matrix = self.sparse_main if run is not None and sparse.structure(run) is not None \
            else self.tiles_main if run is not None and tiles.tile_run(run) is not None \
            else self.main_view
        return {"window": self, "matrix": matrix, "compare": self.views,
                "timeline": self.timeline, "steps": self.timeline.steps_plot,
                "details": self.details}[name]

    def focus_view(self, view: str) -> None:
        """Give the window to one view (headless export of that view alone)."""
        if view in ("matrix", "compare"):
            self.timeline_dock.hide()
            self.details_dock.hide()
        elif view in ("timeline", "steps"):
            self.details_dock.hide()
            self.centralWidget().hide()
        QtWidgets.QApplication.processEvents()

    def render_position(self, position: int, view: str = "window") -> QtGui.QImage:
        self.model.go_to(position)
        QtWidgets.QApplication.processEvents()
        return self.view_widget(view).grab().toImage()

    def export_image(self, path, view: str = "window") -> None:
        QtWidgets.QApplication.processEvents()
        export.save_image(self.view_widget(view), path)

    def export_animation(self, path, first: int = 0, last: int | None = None,
                         view: str = "window") -> int:
        """Frames for positions first … last (default: all); returns the frame count."""
        last = self.model.last_position if last is None else last
        keep = self.model.position
        try:
            return export.save_animation(lambda p: self.render_position(p, view),
                                         range(first, last + 1), path,
                                         fps=max(self.model.speed, 1.0),
                                         keep_colors=themes.KEEP_COLORS)
        finally:
            self.model.go_to(keep)

    def do_export_image(self) -> None:
        if self._need_recording():
            path = self._ask_path("Export view", "PNG image (*.png);;SVG drawing (*.svg)")
            if path:
                self._try(lambda: self.export_image(path, "compare"))

    def do_export_animation(self) -> None:
        if not self._need_recording():
            return
        last = self.model.last_position
        text, ok = QtWidgets.QInputDialog.getText(
            self, "Export steps", f"Steps to export (first-last, 0-{last}):", text=f"0-{last}")
        if not ok:
            return
        try:
            first, end = (int(x) for x in text.split("-"))
            if not 0 <= first <= end <= last:
                raise ValueError
        except ValueError:
            self.show_message(f"'{text}' is not a step range within 0-{last}")
            return
        path = self._ask_path("Export steps", "Animated GIF (*.gif);;MP4 video (*.mp4)")
        if path:
            self._try(lambda: self.export_animation(path, first, end, "compare"))

    def do_export_csv(self) -> None:
        if self._need_recording():
            path = self._ask_path("Export timings", "CSV (*.csv)")
            if path:
                self._try(lambda: export.save_csv(self.model.recording, path))

    def do_export_trace(self) -> None:
        if self._need_recording():
            path = self._ask_path("Export trace", "Chrome/Perfetto trace (*.json)")
            if path:
                self._try(lambda: self.model.recording.to_chrome_trace(path))

    def _try(self, fn) -> None:
        try:
            fn()
        except (export.ExportError, OSError) as exc:
            self.show_message(f"Export failed: {exc}")

    # ---- runs ----
    def do_new_run(self) -> None:
        self._run_dialog("main")

    def do_compare_run(self) -> None:
        if self.model.run is None:
            self.show_message("Make or open a first run, then compare it with another.", "info")
            return
        self._run_dialog("compare")

    def run_dialog(self, purpose: str) -> RunDialog:
        """The Run dialog for a new run ("main") or for side B of a comparison ("compare",
        by default on the same matrix as A)."""
        if purpose == "compare":
            initial = self.model.run.initial
            same = initial if analysis.is_square(initial) else None
            return RunDialog(self, self.last_request, self.device_lister,
                             title="Compare with a new run (B)", same_matrix=same)
        return RunDialog(self, self.last_request, self.device_lister)

    def _run_dialog(self, purpose: str) -> None:
        dialog = self.run_dialog(purpose)
        if dialog.exec() == QtWidgets.QDialog.DialogCode.Accepted:
            self.start_run(dialog.request(), purpose)

    def start_first_run(self, index: int) -> None:
        """One of the welcome page's first runs (:data:`viewer.first_runs.FIRST_RUNS`)."""
        first = first_runs.FIRST_RUNS[index]
        self.model.set_substeps(first.substeps)
        self._queued = [(r, "compare") for r in first.requests[1:]]
        self.start_run(first.requests[0], "main")

    def start_run(self, request: RunRequest, purpose: str = "main") -> None:
        """Run ``request`` in a worker thread; the result opens (or is compared) when done."""
        if self.thread is not None:
            self.show_message("A run is already going: cancel it first.", "info")
            return
        self.last_request = request
        self.settings.remember_request(request)
        self.thread = RunThread(request, purpose, self)
        self.thread.progress.connect(self._progress)
        self.thread.notice.connect(self._notice)
        self.thread.outcome.connect(self._run_finished)
        self.thread.finished.connect(self._thread_done)
        self.progress.setRange(0, self.thread.expected)
        self.progress.setValue(0)
        for w in (self.progress, self.cancel_button):
            w.setVisible(True)
        self.actions["cancel_run"].setEnabled(True)
        for name in ("new_run", "compare_run"):
            self.actions[name].setEnabled(False)
        self.thread.start()

    def _progress(self, done: int, expected: int) -> None:
        if expected:
            self.progress.setValue(min(done, expected))

    def _notice(self, text: str) -> None:
        """A message of the library's while a run goes (a kernel family's first use on
        this device: its builds and self-check), in the status bar until the run ends."""
        self._notice_text = text[:1].upper() + text[1:] + " ..."
        self.statusBar().showMessage(self._notice_text)

    def do_cancel_run(self) -> None:
        if self.thread is not None:
            self.thread.cancel()

    def _run_finished(self, outcome) -> None:
        purpose = self.thread.purpose if self.thread is not None else "main"
        if outcome.warnings:
            self.show_message("\n".join(dict.fromkeys(outcome.warnings)), "info")
        if outcome.cancelled:
            self.show_message("Run cancelled; the previous recording is still open.", "info")
            return
        if not outcome.showable:
            self.show_message(f"{outcome.error}\nThe previous recording is still open."
                              if outcome.error else "The run recorded no steps.")
            return
        if purpose == "compare":
            self.model.set_compare(analysis.viewable_runs(outcome.recording)[0])
        else:
            self.model.set_recording(outcome.recording)
        if outcome.error:
            run = analysis.viewable_runs(outcome.recording)[0]
            failed = analysis.failed_position(run)
            if purpose == "main" and failed is not None:
                self.model.go_to(failed)
            self.show_message(outcome.error)

    def _thread_done(self) -> None:
        self.thread = None
        if self._notice_text and self.statusBar().currentMessage() == self._notice_text:
            self.statusBar().clearMessage()
        self._notice_text = ""
        for w in (self.progress, self.cancel_button):
            w.setVisible(False)
        self.actions["cancel_run"].setEnabled(False)
        for name in ("new_run", "compare_run"):
            self.actions[name].setEnabled(True)
        if self._queued and self.model.run is not None:
            request, purpose = self._queued.pop(0)
            self.start_run(request, purpose)
        else:
            self._queued = []

    def wait_for_run(self, timeout_ms: int = 120_000) -> None:
        """Block until the current run's thread has finished and its result is shown."""
        while self.thread is not None:
            self.thread.wait(timeout_ms)
            QtWidgets.QApplication.processEvents()
            QtWidgets.QApplication.processEvents()

    # ---- picking the pivots ----
    def do_pick_pivots(self) -> None:
        """Pick the pivots of an LU of the shown matrix (or the welcome page's 5 × 5)."""
        run = self.model.run
        a = run.initial if run is not None and analysis.is_square(run.initial) \
            else first_runs.TINY_PIVOT
        self.start_picking(a)

    def start_picking(self, a, rule: str = "click") -> None:
        """Start eliminating ``a`` with pivots picked by clicks or by the bar's rules."""
        try:
            self.game = PivotGame(a, rule)
        except (PickError, oclla.DeviceError, ValueError) as exc:
            self.show_message(f"Cannot pick pivots: {exc}")
            return
        self.show_game()

    def pick(self, row: int, col: int) -> None:
        """Take (row, col) of the shown matrix as the next pivot."""
        if self.game is None:
            return
        try:
            self.game.pick(row, col)
        except PickError as exc:
            self.show_message(str(exc), "info")
            return
        self.show_game()

    def pick_by_rule(self, rule: str) -> None:
        if self.game is not None and not self.game.done:
            self.pick(*self.game.suggestion(rule))

    def undo_pick(self) -> None:
        if self.game is not None:
            self.game.undo()
            self.show_game()

    def stop_picking(self) -> None:
        self.game = None
        self.pick_bar.hide()

    def show_game(self) -> None:
        """Show the game as it is now (also after picks made through :attr:`game`)."""
        self.model.set_recording(self.game.recording(), position=self.game.k, with_start=True)
        self.pick_bar.show_game(self.game)
        self.message.hide()

    def _cell_clicked(self, row: int, col: int) -> None:
        if self.game is not None:
            self.pick(row, col)

    # ---- comparison ----
    def do_compare_file(self) -> None:
        path = self._ask_path("Compare with recording", RECORDING_FILTER, save=False)
        if path:
            self.compare_recording(path)

    def compare_recording(self, path) -> bool:
        try:
            runs = analysis.viewable_runs(oclla.load_recording(path))
            if not runs:
                raise ValueError("the recording has no algorithm steps to show")
            self.model.set_compare(runs[0])
        except (oclla.RecordingError, ValueError) as exc:
            self.show_message(f"Could not compare with {os.path.basename(os.fspath(path))}: "
                              f"{exc}")
            return False
        return True

    def do_compare_other(self) -> None:
        m = self.model
        if m.run is None:
            self.show_message("Nothing to compare yet: make a run or open a recording first.",
                              "info")
            return
        if len(m.runs) < 2:
            self.show_message("This recording has one run; use Compare with a new run.", "info")
            return
        m.set_compare(m.runs[(m.run_index + 1) % len(m.runs)])

    def do_compare_stop(self) -> None:
        self.model.set_compare(None)

    def do_sync_step(self, on: bool) -> None:
        self.model.set_sync("step" if on else "column")

    # ---- playback ----
    def do_play(self) -> None:
        self.model.toggle_play()

    def do_back(self) -> None:
        self.model.step_by(-1)

    def do_forward(self) -> None:
        self.model.step_by(1)

    def do_back10(self) -> None:
        self.model.step_by(-10)

    def do_forward10(self) -> None:
        self.model.step_by(10)

    def do_first(self) -> None:
        self.model.first()

    def do_last(self) -> None:
        self.model.last()

    def do_faster(self) -> None:
        self.model.faster()

    def do_slower(self) -> None:
        self.model.slower()

    def do_restart(self) -> None:
        self.model.restart()

    def do_goto(self) -> None:
        if self.model.run is None:
            return
        value, ok = QtWidgets.QInputDialog.getInt(self, "Go to step", "Step:",
                                                  self.model.position, 0,
                                                  self.model.last_position)
        if ok:
            self.model.go_to(value)

    # ---- view ----
    def do_presentation(self, on: bool) -> None:
        self.model.set_presentation(on)

    def do_fullscreen(self, on: bool) -> None:
        self.showFullScreen() if on else self.showNormal()

    def do_numbers(self, on: bool) -> None:
        self.settings.numbers = on
        self.apply_look()

    def do_substeps(self, on: bool) -> None:
        self.model.set_substeps(on)

    def do_more_decimals(self) -> None:
        self.settings.decimals = self.settings.decimals + 1
        self.apply_look()

    def do_fewer_decimals(self) -> None:
        self.settings.decimals = self.settings.decimals - 1
        self.apply_look()

    def do_font_bigger(self) -> None:
        self.settings.font_scale = self.settings.font_scale * 1.15
        self.apply_look()

    def do_font_smaller(self) -> None:
        self.settings.font_scale = self.settings.font_scale / 1.15
        self.apply_look()

    def do_shortcuts(self) -> None:
        if self.shortcut_dialog is None:
            self.shortcut_dialog = actions_mod.shortcut_sheet(self.actions, self)
        self.shortcut_dialog.show()
        self.shortcut_dialog.raise_()

    def do_about(self) -> None:
        self.show_message(f"oclla {oclla.__version__} teaching viewer: every step and every "
                          f"kernel shown here comes from oclla's trace.", "info")

    # ---- closing ----
    def closeEvent(self, event) -> None:
        if self.thread is not None:
            self.thread.cancel()
            self.thread.wait(10_000)
        self.timer.stop()
        # closed while presenting: the layout to come back to is the one from before
        state = self._state_before if self._presenting else self.saveState()
        self.settings.save_window(self.saveGeometry(), state)
        self.settings.sync()
        super().closeEvent(event)


def matrix_numbers(enabled: bool) -> int:
    """Largest order that shows numbers in cells (0: never)."""
    return NUMBERS_MAX_N if enabled else 0
