"""Solutions to Lesson 4's exercises (for teachers).

Run ``python tutorials/solutions/lesson04.py`` to see every checker accept them.
"""

# Exercise 1: the largest |entry| is |-3|, in row 1.
answer_1 = 1

# Exercise 2: the last column of U doubles at each of the n - 1 steps: 2^(n-1), n = 60
# (the table: 512 = 2^9 for n = 10, 5.24e5 = 2^19 for n = 20, 5.5e11 = 2^39 for n = 40).
answer_2 = 2 ** 59

# Exercise 3: a tiny pivot in the corner. Without pivoting l_10 = 1e20, and row 1 becomes
# (1 - 1e20, 1 - 1e20) = (-1e20, -1e20): its own entries are lost, so L U differs from A
# by about 1 in entries of size 1. Partial pivoting swaps rows 0 and 1 first, and every
# multiplier is at most 1 in magnitude.
answer_3 = [[1e-20, 1.0, 1.0],
            [1.0, 1.0, 1.0],
            [0.0, 1.0, 2.0]]

# Exercise 4: κ ε = 1e4 * 2^-23 ≈ 1.2e-3 (an estimate: 1e-3, or 6e-4 with ε = 2^-24, are
# accepted too).
answer_4 = 1e4 * 2.0 ** -23


# Exercise 5: let complete pivoting pick (the largest entry of the trailing matrix; after
# the first step that is in the last column), read its picks step by step.
def _complete_pivoting_picks(n=8):
    import numpy as np
    from oclla.viewer.pick_pivot import PivotGame

    w = np.eye(n) - np.tril(np.ones((n, n)), -1)
    w[:, -1] = 1.0
    game, picks = PivotGame(w, "complete"), []
    while not game.done:
        picks.append(game.suggestion())
        game.pick(*picks[-1])
    return picks              # [(0, 0), (1, 7), (2, 7), ...]: growth 2


answer_5 = _complete_pivoting_picks()

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
