"""A stand-in widget that builds the real one the first time it is shown or asked for.

Most of the window's views (the comparison's second heat map, the sparse and
tile-task views, a heat map's RFP buffer, the L, U and P panel) sit hidden
until a run needs them, and each costs a few pyqtgraph plots to build.  A
:class:`LazyPage` takes their place in the layout, splitter or stack: it is
hidden and shown like the view would be, and holds the view, once built, as
its only child with no margins, so that the view fills it.

The view is built by :meth:`LazyPage.widget` (the owner's code asks for it
before drawing into it) or, failing that, when the page is first shown: in
:meth:`LazyPage.setVisible`, before the page shows (so that a splitter or
layout sizes the page by the view's size hint, as if the view had been
there from the start), or in :meth:`LazyPage.showEvent` when the page shows
with an ancestor; both come before any paint, never during one.  The
factory gives the view its look (theme, colour map, numbers); drawing the
current state into it is the owner's job, done right after the page is
shown.
"""

from __future__ import annotations

from PySide6 import QtWidgets


class LazyPage(QtWidgets.QWidget):
    """Holds the widget ``factory()`` returns, built once, on first show or first ask."""

    def __init__(self, factory, parent=None):
        super().__init__(parent)
        self._factory = factory
        self._widget: QtWidgets.QWidget | None = None
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)

    @property
    def is_built(self) -> bool:
        return self._widget is not None

    def built_widget(self) -> QtWidgets.QWidget | None:
        """The widget if it has been built, else None (builds nothing)."""
        return self._widget

    def widget(self) -> QtWidgets.QWidget:
        """The widget, built now if it was not yet."""
        if self._widget is None:
            widget = self._factory()
            self._widget, self._factory = widget, None
            self.setSizePolicy(widget.sizePolicy())     # the layout treats the page as the view
            self.layout().addWidget(widget)
            widget.show()      # now, not when the page next shows: the layouts count it
        return self._widget

    def setVisible(self, visible: bool) -> None:
        if visible:
            self.widget()         # built first: the layout around sizes the view, not a blank
        super().setVisible(visible)

    def showEvent(self, event) -> None:
        self.widget()             # shown with a parent that was hidden
        super().showEvent(event)
