"""Solutions to Lesson 10's exercises (for teachers).

Run ``python tutorials/solutions/lesson10.py`` to see every checker accept them.
"""

import numpy as np

import oclla

# Exercise 1: trtri n³/3 + lauum n³/3 = 2n³/3, twice the factorization's n³/3.
answer_1 = 2


# Exercise 2: det A = (Π cᵢᵢ)² for A = CᵀC, so log det A = 2 Σ log cᵢᵢ: a sum of
# moderate numbers, where the product over- or underflows. oclla sums on the device.
def answer_2(a):
    return oclla.cho_logdet((oclla.cholesky(a), False))


# Exercise 3: Cov(β̂) = σ̂²(XᵀX)⁻¹ with σ̂² = ‖y − Xβ̂‖²/(m − p); the standard errors are
# the square roots of its diagonal: the diagonal of the inverse, not 1/diag(XᵀX).
def answer_3(X, y):
    m, p = X.shape
    factor = (oclla.cholesky(X.T @ X), False)
    beta = oclla.cho_solve(factor, X.T @ y)
    s2 = np.sum((y - X @ beta) ** 2) / (m - p)
    return np.sqrt(s2 * np.diag(oclla.cho_inverse(factor)))


# Exercise 4: merge the device kernels' [start, end) intervals in order of start and add
# the gaps between them; host work (device "host") is not the device's.
def answer_4(run):
    kernels = sorted((k for k in run.kernels if k.device != "host"), key=lambda k: k.start)
    idle, reach = 0, None
    for k in kernels:
        if reach is not None and k.start > reach:
            idle += k.start - reach
        reach = k.end if reach is None else max(reach, k.end)
    return idle


if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
