"""Solutions to Lesson 6's exercises (for teachers).

Run ``python tutorials/solutions/lesson06.py`` to see every checker accept them.
"""

import numpy as np

# Exercise 1: the trailing triangle of pivot k has order t = m - k - 1 = 6.
answer_1 = 6 * 7 // 2

# Exercise 2: odd n = 7: n rows, (n + 1) / 2 columns (7 x 4 = 28 = n(n+1)/2).
answer_2 = (7, 4)


# Exercise 3: Algorithm 4 of the paper, on a copy of the lower triangle; after `steps`
# pivots the columns done hold L and the trailing triangle the Schur complement.
def answer_3(a, steps=None):
    L = np.tril(np.array(a, dtype=np.float64))
    n = L.shape[0]
    for k in range(n if steps is None else steps):
        L[k, k] = np.sqrt(L[k, k])
        L[k + 1:, k] /= L[k, k]
        for j in range(k + 1, n):
            L[j:, j] -= L[j:, k] * L[j, k]
    return L


# Exercise 4: n² − n(n+1)/2 = n(n−1)/2 floats of 4 bytes.
answer_4 = 4 * 4096 * 4095 // 2

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
