"""Solutions to Lesson 2's exercises (for teachers).

Run ``python tutorials/solutions/lesson02.py`` to see every checker accept them.
"""

import numpy as np

# Exercise 1: multipliers -2, 3, 2; row r <- row r - l_r0 * row 0.
answer_1 = [[2, 4, 3, 5],
            [0, 1, 1, 18],
            [0, -4, -7, -6],
            [0, 1, -8, 4]]

# Exercise 2: det(A) = det(L) * det(U) = 1 * (2 * 1 * (-3) * (-212)).
answer_2 = 1272


# Exercise 3: forward substitution with the unit lower L, back substitution with U.
def answer_3(L, U, b):
    n = len(b)
    y = np.zeros(n)
    for i in range(n):
        y[i] = b[i] - L[i, :i] @ y[:i]
    x = np.zeros(n)
    for i in reversed(range(n)):
        x[i] = (y[i] - U[i, i + 1:] @ x[i + 1:]) / U[i, i]
    return x


# Exercise 4: after column 0, row 1 becomes [0, 1-1, 2-1] = [0, 0, 1]: pivot u_11 = 0.
# det = 1*(3-4) - 1*(3-2) + 1*(2-1) = -1, so the matrix is invertible.
answer_4 = [[1, 1, 1],
            [1, 1, 2],
            [1, 2, 3]]

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
