"""Solutions to Lesson 2's exercises (for teachers).

Run ``python tutorials/solutions/lesson02.py`` to see every checker accept them.
"""

import numpy as np

# Exercise 1: partial pivoting picks row 2 (|6| is the largest in column 0) and swaps it
# with row 0; the multipliers are -4/6, 2/6, 4/6 and row r <- row r - l_r0 * row 0.
answer_1 = [[6, 8, 2, 9],
            [0, -7 + 16 / 3, -5 + 4 / 3, 8 + 6],
            [0, 4 - 8 / 3, 3 - 2 / 3, 5 - 3],
            [0, 9 - 16 / 3, -2 - 4 / 3, 14 - 6]]

# Exercise 2: det(P A) = det(L) det(U) = prod(diag(U)), and det(P) = (-1)^(interchanges):
# piv[k] != k means row k was interchanged with a later row. For the post's A
# (no interchanges): 2 * 1 * (-3) * (-212) = 1272.
def answer_2(lu, piv):
    swaps = sum(int(p) != k for k, p in enumerate(piv))
    return (-1) ** swaps * np.prod(np.diag(lu).astype(np.float64))



# Exercise 3: forward substitution with the unit lower L, back substitution with U,
# reading only L's strict lower triangle and U's upper triangle (the rest is junk).
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
