"""Solutions to Lesson 12's exercises (for teachers).

Run ``python tutorials/solutions/lesson12.py`` to see every checker accept them.
"""

# Exercise 1: per step k of t = 8: one potrf, (t − 1 − k) trsm, (t − 1 − k) syrk and
# (t − 1 − k)(t − 2 − k)/2 gemm.  Summed: t + t(t − 1)/2 + t(t − 1)/2 + t(t − 1)(t − 2)/6
# = 8 + 28 + 28 + 56.
answer_1 = 120

# Exercise 2: potrf k → trsm (k + 1, k) → syrk (k + 1, k + 1) → potrf k + 1: three tasks a
# step for the first t − 1 steps, then the last potrf: 3·8 − 2.
answer_2 = 22

# Exercise 3: panel j (columns j0 .. j0 + b) is updated by A[j0:n, J] −= L[j0:n, 0:j0]·
# L[J, 0:j0]ᵀ: 2·(n − j0)·b·j0 flops for the (n − j0)·j0 entries streamed in: 2b flops per
# entry, 2b/8 per byte of float64.
answer_3 = 2 * 2048 / 8

# Exercise 4: streaming hides behind computing when 2b/s ≥ F/B: b ≥ s·F/(2B).
answer_4 = 8 * 18.7e12 / (2 * 50e9)

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
