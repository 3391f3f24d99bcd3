"""oclla bench's timing: rounds with the implementations interleaved, bursts of short calls."""

import numpy as np
import pytest

from oclla import bench


class CountingReference:
    """A reference that counts its calls (the CPU's, through numpy)."""
    name = "counting"

    def __init__(self):
        self.calls = 0

    def prepare(self, host):
        return host

    def run(self, routine, a, nrhs=1):
        self.calls += 1
        return a @ a

    def sync(self):
        pass


@pytest.mark.parametrize("below, per_round", [(float("inf"), bench.BURST_CALLS), (0.0, 1)],
                         ids=["short calls in bursts", "one call a round"])
def test_rounds_and_bursts(queue, monkeypatch, below, per_round):
    monkeypatch.setattr(bench, "BURST_BELOW", below)
    oclla_calls = []
    runs = bench._oclla_runs("gemm", 16, np.float32, queue, 4096, 1)
    monkeypatch.setattr(bench, "_oclla_runs", lambda *args: {
        label: (lambda a, fn=fn: oclla_calls.append(1) or fn(a)) for label, fn in runs.items()})
    ref = CountingReference()
    records = bench.measure("gemm", 16, np.float32, queue=queue, ref=ref, repeat=2)
    assert ref.calls == 1 + 2 * per_round                   # the warm-up, then the rounds
    assert len(oclla_calls) == 1 + 2 * per_round
    assert {r["impl"] for r in records} == {"oclla gemm", "counting"}
    assert all(r["seconds"] > 0 for r in records)
