"""Solutions to Lesson 7's exercises (for teachers).

Run ``python tutorials/solutions/lesson07.py`` to see every checker accept them.
"""

import numpy as np
import scipy.linalg

# Exercise 1: 1e-4 · 0.01^k = 1e-12  ->  k = 8 / 2.
answer_1 = 4

# Exercise 2: κ(C) = κ(DAᵀ)².
answer_2 = 1e3 ** 2


# Exercise 3: Algorithm 1 with a float32 Cholesky factor and float64 residuals. The
# stopping test compares the correction with x: it has no units, so scaling C and g
# changes nothing (‖r‖/‖x‖ would carry the units of C).
def answer_3(C, g, tol):
    factor = scipy.linalg.cho_factor(C.astype(np.float32))

    def solve32(rhs):
        return scipy.linalg.cho_solve(factor, rhs.astype(np.float32)).astype(np.float64)

    x = solve32(g)
    corrections = []
    for _ in range(100):
        dx = solve32(g - C @ x)            # residual in float64, correction from float32
        x = x + dx
        corrections.append(np.linalg.norm(dx) / np.linalg.norm(x))
        if corrections[-1] <= tol:
            break
    return x, corrections


# Exercise 4: κ ε64 ≈ 2.2e-10 (an estimate: 1e-10 is accepted too).
answer_4 = 1e6 * 2.0 ** -52

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
