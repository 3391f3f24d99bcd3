"""The Run dialog: algorithm, variant, size, dtype, device, matrix family and seed.

Algorithms come from :data:`viewer.registry.ALGORITHMS`; one this build of
oclla cannot run is listed greyed out with the reason as its tooltip.  The
device list is read when the dialog opens (never at start-up, so replaying
needs no device); a failure to list devices is shown in the dialog.
"""

from __future__ import annotations

import os

import numpy as np
from PySide6 import QtWidgets

import oclla

from . import matrices, registry
from .runner import DTYPES, MAX_SPARSE_N, RunRequest, build_matrix

MAX_N = 4096


def snapshots_fit(n: int) -> bool:
    """Keep a snapshot per step (about n³ values in all) only up to the step-view limit."""
    return n <= matrices.MAX_STEP_VIEW_N


def list_devices() -> list:
    """:func:`oclla.devices`, looked up when called: pyopencl is imported only when the
    Run dialog first lists the devices, never to open the window or replay a recording."""
    return oclla.devices()


class RunDialog(QtWidgets.QDialog):
    """Collects a :class:`RunRequest`; :meth:`request` builds it after ``accept``."""

    def __init__(self, parent=None, initial: RunRequest | None = None,
                 device_lister=list_devices, title: str = "New run", same_matrix=None):
        """``same_matrix``: the matrix of the run to compare with; a check box (on by
        default) then runs on it."""
        super().__init__(parent)
        self.setWindowTitle(title)
        self._same_matrix = None if same_matrix is None else np.asarray(same_matrix)
        self._file_matrix = None
        self._file_name = ""
        form = QtWidgets.QFormLayout()
        self.algorithm = QtWidgets.QComboBox()
        for spec in registry.ALGORITHMS:
            self.algorithm.addItem(spec.label, spec.key)
            missing = spec.missing()
            if missing:
                item = self.algorithm.model().item(self.algorithm.count() - 1)
                item.setEnabled(False)
                item.setToolTip(missing)
                item.setText(f"{spec.label} (not available)")
        self.variant = QtWidgets.QComboBox()
        self.variant.setSizeAdjustPolicy(            # variant names in full
            QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.pivoting = QtWidgets.QComboBox()
        self.sparse_family = QtWidgets.QComboBox()   # sparse: its own matrices
        self.ordering = QtWidgets.QComboBox()        # sparse: the fill-reducing ordering
        self.large = QtWidgets.QDoubleSpinBox()      # sparse: the BLAS-3 route's threshold
        self.large.setDecimals(0)
        self.large.setRange(0, 1e15)
        self.large.setSpecialValueText("device default")
        self.block = QtWidgets.QSpinBox()
        self.block.setRange(0, 1024)
        self.block.setSpecialValueText("device default")
        self.n = QtWidgets.QSpinBox()
        self.n.setRange(1, MAX_N)
        self.rank = QtWidgets.QSpinBox()           # update/downdate: columns of V
        self.rank.setRange(1, 256)
        self.rank.setValue(registry.DEFAULT_RANK)
        self.fail = QtWidgets.QCheckBox()          # the label comes from the algorithm
        self.dtype = QtWidgets.QComboBox()
        self.dtype.addItems(DTYPES)
        self.device = QtWidgets.QComboBox()
        self.device.addItem("default (OCLLA_DEVICE, then GPU, then CPU)", None)
        self.device_note = QtWidgets.QLabel("")
        self.family = QtWidgets.QComboBox()
        for key, label in matrices.FAMILIES.items():
            self.family.addItem(label, key)
        self.seed = QtWidgets.QSpinBox()
        self.seed.setRange(0, 2 ** 31 - 1)
        self.kappa = QtWidgets.QDoubleSpinBox()
        self.kappa.setDecimals(0)
        self.kappa.setRange(1, 1e16)
        self.typed = QtWidgets.QPlainTextEdit()
        self.typed.setPlaceholderText("rows on lines or separated by ';', e.g. 4 1; 1 3")
        self.typed.setMaximumHeight(90)
        self.file_button = QtWidgets.QPushButton("Choose .npy or .mtx file…")
        self.file_button.clicked.connect(self._choose_file)
        self.typed.textChanged.connect(self._typed_changed)
        self.same = QtWidgets.QCheckBox("same matrix as A")
        self.same.setChecked(self._same_matrix is not None)
        self.same.toggled.connect(self._family_changed)
        self.solve = QtWidgets.QCheckBox("then solve Ax = b (forward and back substitution)")
        self.snapshots = QtWidgets.QCheckBox("keep the matrix after every step (step views)")
        self.warmup = QtWidgets.QCheckBox("run once untimed first (kernel builds, warm-up)")
        self.error = QtWidgets.QLabel("")
        self.error.setStyleSheet("color: #D50000")
        self.error.setWordWrap(True)
        for label, widget in (("Algorithm", self.algorithm), ("Variant", self.variant),
                              ("Sparse matrix", self.sparse_family),
                              ("Ordering", self.ordering),
                              ("Large supernodes from (flops)", self.large),
                              ("Pivoting", self.pivoting), ("Block size", self.block),
                              ("Order n", self.n), ("Rank k (columns of V)", self.rank),
                              ("", self.fail), ("dtype", self.dtype),
                              ("Device", self.device), ("", self.device_note),
                              ("", self.same), ("Matrix", self.family), ("Seed", self.seed),
                              ("Condition number", self.kappa), ("Values", self.typed),
                              ("File", self.file_button), ("", self.solve),
                              ("", self.snapshots),
                              ("", self.warmup)):
            form.addRow(label, widget)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok
                                             | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Ok).setText("Run")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self._form = form
        self.algorithm.currentIndexChanged.connect(self._algorithm_changed)
        self.variant.currentIndexChanged.connect(self._variant_changed)
        self.family.currentIndexChanged.connect(self._family_changed)
        self.n.valueChanged.connect(self._size_changed)
        self._list_devices(device_lister)
        self.set_request(initial or RunRequest())
        self._family_changed()

    # ---- filling ----
    def _list_devices(self, lister) -> None:
        try:
            infos = lister()
        except Exception as exc:     # no ICD, broken driver: say so, keep the dialog usable
            self.device_note.setText(f"cannot list OpenCL devices: {exc}")
            return
        for info in infos:
            self.device.addItem(f"[{info.index}] {info.name} ({info.kind}, "
                                f"fp64 {'yes' if info.fp64 else 'no'})", str(info.index))
        if not infos:
            self.device_note.setText("no OpenCL device found: runs will fail; "
                                     "recordings still replay")

    def set_request(self, req: RunRequest) -> None:
        idx = self.algorithm.findData(req.algorithm)
        spec_ok = idx >= 0 and self.algorithm.model().item(idx).isEnabled()
        self.algorithm.setCurrentIndex(idx if spec_ok else 0)
        self._algorithm_changed()
        self._select(self.variant, req.variant)
        self._variant_changed()
        if req.pivoting:
            self._select(self.pivoting, req.pivoting)
        if req.ordering:
            self._select(self.ordering, req.ordering, by_text=True)
        self.large.setValue(float(req.large or 0))
        self.block.setValue(req.block or 0)
        self.n.setValue(int(req.n))
        self.rank.setValue(int(req.rank or registry.DEFAULT_RANK))
        self.fail.setChecked(bool(req.fail))
        self._select(self.dtype, req.dtype, by_text=True)
        if req.device is not None:
            self._select(self.device, str(req.device))
        self._select(self.family, req.family if req.family != "file" else "random")
        self._select(self.sparse_family, req.family)
        self.seed.setValue(int(req.seed))
        self.warmup.setChecked(req.warmup)
        self.solve.setChecked(req.solve)
        self.kappa.setValue(float(req.kappa))
        if req.family == "typed" and req.matrix is not None:
            self.typed.setPlainText("\n".join(" ".join(f"{v:.17g}" for v in row)
                                              for row in np.asarray(req.matrix)))
        self._family_changed()
        self._size_changed()

    @staticmethod
    def _select(combo, value, by_text=False) -> None:
        idx = combo.findText(value) if by_text else combo.findData(value)
        if idx >= 0:
            combo.setCurrentIndex(idx)

    def _spec(self):
        return registry.algorithm(self.algorithm.currentData())

    def _algorithm_changed(self) -> None:
        spec = self._spec()
        self.variant.blockSignals(True)
        self.variant.clear()
        for v in spec.variants:
            self.variant.addItem(f"{v.key}: {v.label}", v.key)
        self.variant.blockSignals(False)
        self._select(self.family, spec.family)
        self.sparse_family.clear()
        for key, label in spec.families.items():
            self.sparse_family.addItem(label, key)
        self._select(self.sparse_family, spec.family)
        self.ordering.clear()
        self.ordering.addItems(list(spec.orderings))
        for widget in (self.sparse_family, self.ordering, self.large):
            self._show_row(widget, self.is_sparse)
        for widget in (self.pivoting, self.block):
            self._show_row(widget, not self.is_sparse)
        self.n.setMaximum(MAX_SPARSE_N if self.is_sparse else MAX_N)
        tiled = spec.key in registry.TILE_ALGORITHMS     # the block size is the tile order
        self._form.labelForField(self.block).setText("Tile order" if tiled else "Block size")
        self.block.setSpecialValueText("about n/4" if tiled else "device default")
        self._show_row(self.solve, spec.key == "lu")
        self._show_row(self.rank, spec.rank)
        self.fail.setText(spec.failing)
        self._show_row(self.fail, bool(spec.failing))
        self._variant_changed()
        self._family_changed()

    def _variant_changed(self) -> None:
        if self.variant.currentData() is None:
            return
        v = self._spec().variant(self.variant.currentData())
        self.pivoting.clear()
        self.pivoting.addItems(list(v.pivoting) or ["(not applicable)"])
        self.pivoting.setEnabled(len(v.pivoting) > 1)
        self.block.setEnabled(v.blocked)

    @property
    def is_sparse(self) -> bool:
        """The algorithm makes its own (sparse) matrices: the sparse rows replace the
        dense matrix's."""
        return bool(self._spec().families)

    @property
    def same_matrix(self) -> bool:
        """The run will use the compared run's matrix."""
        return self._same_matrix is not None and self.same.isChecked() \
            and not self.is_sparse

    def _family_changed(self) -> None:
        if self.is_sparse:          # the sparse family row instead; n and seed always
            for widget in (self.family, self.kappa, self.typed, self.file_button, self.same):
                self._show_row(widget, False)
            self._show_row(self.seed, True)
            self.n.setEnabled(True)
            return
        self._show_row(self.same, self._same_matrix is not None)
        fam = self.family.currentData()
        own = not self.same_matrix
        self._show_row(self.family, own)
        self._show_row(self.seed, own and fam in ("random", "spd", "cond", "diagdom"))
        self._show_row(self.kappa, own and fam == "cond")
        self._show_row(self.typed, own and fam == "typed")
        self._show_row(self.file_button, own and fam == "file")
        self.n.setEnabled(own and fam in ("random", "spd", "cond", "diagdom"))
        if not own:
            self.n.setValue(self._same_matrix.shape[0])
        elif fam == "sycl4":
            self.n.setValue(4)
        elif fam == "typed":
            self._typed_changed()

    def _typed_changed(self) -> None:
        """"Order n" follows the typed matrix (while it parses)."""
        if self.family.currentData() != "typed" or self.same_matrix:
            return
        try:
            self.n.setValue(matrices.parse_matrix(self.typed.toPlainText()).shape[0])
        except matrices.MatrixError:
            pass

    def _show_row(self, widget, visible: bool) -> None:
        self._form.setRowVisible(widget, visible)

    def _size_changed(self) -> None:
        fits = snapshots_fit(self.n.value())
        self.snapshots.setEnabled(fits)
        self.snapshots.setChecked(fits)
        self.snapshots.setToolTip("" if fits else "too large to keep every step: timing only")

    def _choose_file(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Matrix file", "", "Matrices (*.npy *.mtx);;All files (*)")
        if path:
            self.load_file(path)

    def load_file(self, path) -> bool:
        """Read a matrix file; show the problem and return False if it is unusable."""
        try:
            self._file_matrix = matrices.load_matrix(path)
        except matrices.MatrixError as exc:
            self._file_matrix = None
            self.error.setText(str(exc))
            return False
        self._file_name = os.path.basename(os.fspath(path))
        self.file_button.setText(self._file_name)
        self.n.setValue(self._file_matrix.shape[0])
        self.error.setText("")
        return True

    # ---- result ----
    def request(self) -> RunRequest:
        """The request as filled in (MatrixError for an unusable matrix)."""
        fam = self.family.currentData()
        v = self._spec().variant(self.variant.currentData())
        matrix = None
        source = self._file_name if fam == "file" else ""
        if self.is_sparse:
            fam = self.sparse_family.currentData()
        elif self.same_matrix:
            fam, matrix, source = "typed", self._same_matrix, "same matrix as A"
        elif fam == "typed":
            matrix = matrices.parse_matrix(self.typed.toPlainText())
        elif fam == "file":
            if self._file_matrix is None:
                raise matrices.MatrixError("choose a .npy or .mtx file first")
            matrix = self._file_matrix
        req = RunRequest(
            algorithm=self._spec().key, variant=v.key,
            n=matrix.shape[0] if matrix is not None else self.n.value(),
            dtype=self.dtype.currentText(), family=fam, seed=self.seed.value(),
            kappa=self.kappa.value(),
            pivoting=self.pivoting.currentText() if v.pivoting else None,
            block=self.block.value() or None, device=self.device.currentData(),
            matrix=matrix, source_name=source,
            snapshots=self.snapshots.isChecked(), warmup=self.warmup.isChecked(),
            solve=self.solve.isChecked() and self._spec().key == "lu",
            rank=self.rank.value() if self._spec().rank else None,
            fail=self.fail.isChecked() and bool(self._spec().failing),
            ordering=self.ordering.currentText() if self.is_sparse else None,
            large=(self.large.value() or None) if self.is_sparse else None)
        build_matrix(req)          # surfaces a bad family/size before the run starts
        return req

    def accept(self) -> None:
        try:
            self.request()
        except matrices.MatrixError as exc:
            self.error.setText(str(exc))
            return
        super().accept()
