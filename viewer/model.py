"""The viewer's state, without Qt: what is shown, where playback is, what is selected.

Widgets read from :class:`ViewerModel` and call its methods; the model tells
its listeners what changed (a set of names, see :data:`CHANGES`).  Tests
drive the window with keys and assert on this state.

Positions follow :mod:`viewer.analysis`: 0 is the matrix before the first
step, p the matrix after step p − 1, ``n_positions - 1`` the end.
"""

from __future__ import annotations

import numpy as np

from . import analysis, lu_steps

CHANGES = ("recording", "position", "kernel", "playback", "compare", "presentation",
           "substeps")

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
"""Playback speeds in steps per second."""

SYNC_MODES = ("column", "step")
"""Comparison sync: the same number of finished columns (default; per-pivot against
blocked, the blocked run waits at a panel boundary; a run with a set-up step stays
aligned), or the same step number.  Runs without pivots (no finished columns) sync
by step."""


class ViewerModel:
    """State of one viewer window (see the module docstring)."""

    def __init__(self):
        self._listeners: list = []
        self.recording = None
        self.path = None                 # file the recording came from, if any
        self.runs: list = []             # the viewable runs of the recording
        self.run_index = 0
        self.position = 0
        self.selected_kernel: int | None = None   # index into run.kernels
        self.playing = False
        self.speed_index = SPEEDS.index(4.0)
        self.compare_run = None
        self.compare_position = 0
        self.sync = "column"
        self.presentation = False
        self.substeps = False            # step through LU sub-steps (search, swap, ...)
        self.sub: int | None = None      # index into frames(position); None: the recorded one
        self._cache: dict = {}
        self._finished_cache: dict = {}

    # ---- listeners ----
    def subscribe(self, callback) -> None:
        """``callback(changes: set[str])`` after every change."""
        self._listeners.append(callback)

    def _emit(self, *changes) -> None:
        changed = set(changes)
        for cb in list(self._listeners):
            cb(changed)

    # ---- the recording ----
    @property
    def run(self):
        return self.runs[self.run_index] if self.runs else None

    @property
    def n_positions(self) -> int:
        return analysis.n_positions(self.run) if self.run is not None else 0

    @property
    def last_position(self) -> int:
        return max(self.n_positions - 1, 0)

    @property
    def step(self):
        """The step just performed (None at position 0 or with nothing loaded)."""
        return analysis.step_at(self.run, self.position) if self.run is not None else None

    def set_recording(self, recording, path=None, position: int | None = None,
                      with_start: bool = False) -> None:
        """Show ``recording``; ValueError (state unchanged) if it has nothing to show.

        Without ``position`` a failed run opens where it failed, others at the start.
        ``with_start`` also shows a run with no step yet (its starting matrix).
        """
        runs = analysis.viewable_runs(recording, with_start)
        if not runs:
            raise ValueError("the recording has no algorithm steps to show")
        self.recording, self.path, self.runs = recording, path, runs
        self.run_index = analysis.default_run(runs)
        self._cache, self._finished_cache = {}, {}
        self.playing = False
        self.selected_kernel = None
        self.compare_run = None
        self.sub = None
        if position is None:
            position = analysis.failed_position(self.run) or 0
        self.position = self._clamp(position)
        self._sync_compare()
        self._emit("recording", "position", "kernel", "playback", "compare")

    def set_run(self, index: int) -> None:
        """Show another run of the same recording."""
        if not 0 <= index < len(self.runs):
            raise IndexError(f"run {index} out of range (the recording has {len(self.runs)})")
        self.run_index = index
        self.selected_kernel = None
        self.sub = None
        self.position = self._clamp(self.position)
        self._sync_compare()
        self._emit("recording", "position", "kernel", "compare")

    def cached(self, key, compute):
        """Per-recording memo for derived data (value range, growth, ...)."""
        full = (self.run_index, key)
        if full not in self._cache:
            self._cache[full] = compute()
        return self._cache[full]

    # ---- transport ----
    def _clamp(self, position: int) -> int:
        return min(max(int(position), 0), self.last_position)

    def go_to(self, position: int, *, keep_kernel: bool = False, sub: int | None = None) -> None:
        """Show ``position`` (its sub-step ``sub`` when given, else the recorded matrix)."""
        position = self._clamp(position)
        changes = []
        if sub is not None and not 0 <= sub < len(self.frames(position)) - 1:
            sub = None
        if sub != self.sub:
            self.sub = sub
            changes.append("position")
        if position != self.position:
            self.position = position
            self._sync_compare()
            changes += ["position", "compare"]
        if not keep_kernel and self.selected_kernel is not None:
            self.selected_kernel = None
            changes.append("kernel")
        if self.playing and self.position >= self.last_position and self.sub is None:
            self.playing = False
            changes.append("playback")
        if changes:
            self._emit(*changes)

    def step_by(self, delta: int) -> None:
        """Move ``delta`` steps; one step at a time walks through sub-steps when they are on."""
        if self.substeps and abs(delta) == 1:
            self._fine_step(delta)
        else:
            self.go_to(self.position + delta)

    def _fine_step(self, delta: int) -> None:
        p, sub = self.position, self.sub
        if delta > 0:
            if sub is not None:
                self.go_to(p, keep_kernel=True, sub=sub + 1)     # the last sub: recorded
            elif self.frames(p + 1) and p + 1 <= self.last_position:
                self.go_to(p + 1, sub=0)
            else:
                self.go_to(p + 1)
        elif sub is not None:
            self.go_to(p - 1 if sub == 0 else p, sub=None if sub == 0 else sub - 1)
        elif len(self.frames(p)) > 1:
            self.go_to(p, sub=len(self.frames(p)) - 2)
        else:
            self.go_to(p - 1)

    # ---- sub-steps ----
    def frames(self, position: int) -> list:
        """The sub-steps of ``position`` (:func:`viewer.lu_steps.substeps`; [] for none)."""
        if self.run is None or not 0 < position <= self.last_position:
            return []
        return self.cached(("frames", position), lambda: lu_steps.substeps(self.run, position))

    @property
    def frame(self):
        """The sub-step shown (None: the recorded matrix of the position)."""
        return self.frames(self.position)[self.sub] if self.sub is not None else None

    def set_substeps(self, on: bool) -> None:
        """Step through sub-steps (LU: search, swap, multipliers, update) or whole steps."""
        self.substeps = bool(on)
        self.sub = None
        self._emit("position", "substeps")

    def first(self) -> None:
        self.go_to(0)

    def last(self) -> None:
        self.go_to(self.last_position)

    def play(self) -> None:
        if self.run is None or self.playing:
            return
        if self.position >= self.last_position:
            self.go_to(0)
        self.playing = True
        self._emit("playback")

    def pause(self) -> None:
        if self.playing:
            self.playing = False
            self._emit("playback")

    def toggle_play(self) -> None:
        self.pause() if self.playing else self.play()

    def restart(self) -> None:
        """Back to the start and play."""
        self.pause()
        self.go_to(0)
        self.play()

    def tick(self) -> None:
        """One playback step (the window's timer calls this)."""
        if self.playing:
            self.step_by(1)

    @property
    def speed(self) -> float:
        return SPEEDS[self.speed_index]

    @property
    def interval_ms(self) -> int:
        return int(round(1000.0 / self.speed))

    def faster(self) -> None:
        self.set_speed_index(self.speed_index + 1)

    def slower(self) -> None:
        self.set_speed_index(self.speed_index - 1)

    def set_speed_index(self, index: int) -> None:
        index = min(max(index, 0), len(SPEEDS) - 1)
        if index != self.speed_index:
            self.speed_index = index
            self._emit("playback")

    # ---- selection ----
    def select_step(self, step_index: int) -> None:
        """Show the matrix after trace step ``step_index``."""
        self.go_to(step_index + 1)

    def select_kernel(self, index: int | None) -> None:
        """Select kernel ``index`` of the run; the matrix jumps to its step."""
        if index is None:
            if self.selected_kernel is not None:
                self.selected_kernel = None
                self._emit("kernel")
            return
        kernels = self.run.kernels
        if not 0 <= index < len(kernels):
            raise IndexError(f"kernel {index} out of range (the run has {len(kernels)})")
        self.go_to(kernels[index].step + 1, keep_kernel=True)
        self.selected_kernel = index
        self._emit("kernel")

    @property
    def step_kernels(self) -> list:
        """Indices into ``run.kernels`` of the current step's kernels (they light up)."""
        if self.run is None or self.step is None:
            return []
        idx = self.step.index
        return [i for i, k in enumerate(self.run.kernels) if k.step == idx]

    @property
    def highlighted_region(self):
        """(row0, row1, col0, col1) to outline: the step's active region, or None.

        The trace records one region per step, so a selected kernel shows the
        region of its step.
        """
        step = self.step
        return step.region if step is not None else None

    # ---- comparison ----
    def set_compare(self, run) -> None:
        """Show ``run`` beside the current one, synchronised (None: stop comparing)."""
        if run is not None and not run.steps:
            raise ValueError("the run to compare has no steps")
        self.compare_run = run
        self._finished_cache = {}
        self._sync_compare()
        self._emit("compare")

    def set_sync(self, mode: str) -> None:
        if mode not in SYNC_MODES:
            raise ValueError(f"sync must be one of {SYNC_MODES}, got {mode!r}")
        self.sync = mode
        self._sync_compare()
        self._emit("compare")

    def _sync_compare(self) -> None:
        other = self.compare_run
        if other is None or self.run is None:
            self.compare_position = 0
            return
        last = analysis.n_positions(other) - 1
        mine, theirs = self._finished(self.run), self._finished(other)
        if self.sync == "step" or not mine[-1] or not theirs[-1]:
            self.compare_position = min(self.position, last)
            return
        done = mine[self.position]
        self.compare_position = min(int(np.searchsorted(theirs, done)), last)

    def _finished(self, run):
        key = id(run)
        if key not in self._finished_cache:
            self._finished_cache[key] = analysis.finished_by_position(run)
        return self._finished_cache[key]

    # ---- presentation ----
    def set_presentation(self, on: bool) -> None:
        if bool(on) != self.presentation:
            self.presentation = bool(on)
            self._emit("presentation")
