"""Solutions to Lesson 7's exercises (for teachers).

Run ``python tutorials/solutions/lesson07.py`` to see every checker accept them.
"""

import numpy as np
import scipy.linalg

# Exercise 1: 1e-4 · 0.01^k = 1e-12  ->  k = 8 / 2.
answer_1 = 4

# Exercise 2: κ(C) = κ(DAᵀ)².
answer_2 = 1e3 ** 2


# Exercise 3: Algorithm 1 with a float32 Cholesky factor and float64 residuals.
def answer_3(C, g, tol):
    factor = scipy.linalg.cho_factor(C.astype(np.float32))

    def solve32(rhs):
        return scipy.linalg.cho_solve(factor, rhs.astype(np.float32)).astype(np.float64)

    x = solve32(g)
    for _ in range(100):
        r = g - C @ x                      # float64
        x = x + solve32(r)
        if np.linalg.norm(r) / np.linalg.norm(x) <= tol:
            break
    return x


# Exercise 4: κ ε64.
answer_4 = 1e6 * 2.0 ** -52

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
