"""Solutions to Lesson 9's exercises (for teachers).

Run ``python tutorials/solutions/lesson09.py`` to see every checker accept them.
"""

import oclla

# Exercise 1: 3k·n² = n³/3 + k·n²  ->  2k·n² = n³/3  ->  k = n/6.
answer_1 = 600 / 6


# Exercise 2: update with the rows that enter first, then downdate with those that
# leave: G + V₊V₊ᵀ is at least as positive definite as G, so the downdate that follows
# only fails if the final window is not positive definite itself. The other order can
# fail on the way (the checker's last case). Rows are measurements: V = rows.T.
def answer_2(r, enter, leave):
    r = oclla.cholesky_update(r, enter.T)
    return oclla.cholesky_update(r, leave.T, sign=-1)


# Exercise 3: the leading minors of 4I − vvᵀ are 4ʲ(1 − Σᵢ≤ⱼ vᵢ²/4); the running sums
# of vᵢ² are 1, 2, 4.25: order 3 is the first that is not positive.
answer_3 = 3

# Exercise 4: the backward error is ε‖A‖ = ε·10⁶‖A − VVᵀ‖: six digits.
answer_4 = 6

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
