"""Checkers for Lesson 12 (when the matrix does not fit: tiles, streaming, tasks)."""

from __future__ import annotations

from . import Wrong, close, equal, exercise, number

REQUIRES = ("oclla.distributed:cholesky", "oclla.distributed:task_graph",
            "oclla.out_of_core:factor_streamed", "dask", "distributed")

T = 8                                   # tiles per side in Exercises 1 and 2


@exercise(1, correct="t potrf, t(t−1)/2 trsm, t(t−1)/2 syrk and t(t−1)(t−2)/6 gemm: "
                     "8 + 28 + 28 + 56 = 120 tasks, t³/6 of them gemm as t grows.")
def check_exercise_1(answer):
    """120 tasks for 8 x 8 tiles."""
    got = number(answer, "the number of tasks")
    if got == T * T:
        raise Wrong("that is the number of tiles; a tile is written by several tasks "
                    "(once per step k that updates it).")
    if got == T * (T + 1) // 2:
        raise Wrong("that is the number of tiles in the lower triangle; count the "
                    "updates too (a tile (i, j) is updated at every step k < j).")
    if got == T * (T - 1) * (T - 2) // 6:
        raise Wrong("that counts the gemm tasks only.")
    equal(got, T + T * (T - 1) + T * (T - 1) * (T - 2) // 6, what="the number of tasks",
          hint="count per step k: one potrf, a trsm and a syrk per tile below the "
               "diagonal, a gemm per tile strictly below the diagonal of the trailing part.")


@exercise(2, correct="Each step's potrf needs the previous step's syrk, which needs its "
                     "trsm, which needs its potrf: 3 tasks per step, then the last potrf: "
                     "3t − 2 = 22. With enough devices the run takes 22 task times, not 120.")
def check_exercise_2(answer):
    """Critical path of 3t − 2 = 22 tasks."""
    got = number(answer, "the length of the longest chain")
    if got == 3 * T:
        raise Wrong("the last step has a potrf only: no trsm or syrk after it.")
    if got == T:
        raise Wrong("a step's potrf cannot start before the previous step's trsm and "
                    "syrk of that tile: more than one task per step lies on the chain.")
    if got == 2 * T - 1:
        raise Wrong("the syrk of step k that feeds potrf k+1 needs trsm k first.")
    equal(got, 3 * T - 2, what="the length of the longest chain",
          hint="follow potrf 0 → trsm (1, 0) → syrk (1, 1) → potrf 1 → ...")


@exercise(3, correct="Panel j's update reads L[j0:n, 0:j0], (n − j0)·j0 entries, for "
                     "2·b·(n − j0)·j0 flops: 2b flops per entry streamed, 2b/8 = b/4 per "
                     "byte in float64, whatever n: 512 for b = 2048.")
def check_exercise_3(answer):
    """2b / itemsize = 512 flop per byte for float64, b = 2048."""
    got = number(answer, "the arithmetic intensity")
    if got == 4096:
        raise Wrong("that is per entry; divide by the bytes of a float64 entry.")
    if got == 256:
        raise Wrong("a GEMM does a multiply and an add per entry of the panel and per "
                    "column of the streamed block: 2 flops.")
    if abs(got - 2048 / 3) < 1:
        raise Wrong("n/3 is the intensity of the whole factorization in core (each "
                    "entry moved once); here the panels are streamed again for every "
                    "later panel.")
    close(got, 2 * 2048 / 8, rtol=1e-6, what="the arithmetic intensity",
          hint="flops of panel j's update over the bytes of the earlier panels it reads.")


@exercise(4, correct="The transfers hide when 2b/s ≥ F/B, i.e. b ≥ s·F/(2B) = "
                     "8 · 18.7e12 / (2 · 50e9) ≈ 1500: a panel of 2048 columns suffices "
                     "over pinned PCIe; over pageable memory (8 GB/s) it takes about 9400.")
def check_exercise_4(answer):
    """b ≥ s·F/(2B) ≈ 1496 for float64, F = 18.7 TFLOP/s, B = 50 GB/s."""
    got = number(answer, "the panel width")
    expected = 8 * 18.7e12 / (2 * 50e9)
    if abs(got - 2 * expected) <= 0.02 * expected:
        raise Wrong("an entry streamed feeds 2·b flops, not b.")
    if abs(got - expected / 2) <= 0.02 * expected:
        raise Wrong("a float64 entry is 8 bytes, not 4.")
    if abs(got - 18.7e12 / 50e9) <= 0.02 * expected:
        raise Wrong("that is F/B in flops per byte; turn it into a panel width with "
                    "the intensity 2b/s.")
    close(got, expected, rtol=0.02, what="the smallest panel width",
          hint="set the intensity 2b/s (flops per byte) equal to F/B.")
