"""Checkers for Lesson 5 (BLAS-3, arithmetic intensity, roofline, blocked LU)."""

from __future__ import annotations

from . import Wrong, callable_, close, exercise, number


@exercise(1, correct="2m²n_b flops over 4(2m² + 2m·n_b) bytes = m·n_b/(4(m + n_b)) ≈ 15.1 "
                     "flop/byte: close to n_b/4 because m is much larger than n_b.")
def check_exercise_1(answer):
    """2 m² nb / (4 (2m² + 2 m nb)) for m = 1024, nb = 64."""
    m, nb = 1024, 64
    value = number(answer, "the intensity")
    expected = 2 * m * m * nb / (4 * (2 * m * m + 2 * m * nb))
    if abs(value - nb / 4) <= 1e-3 * nb / 4:
        raise Wrong("n_b/4 is the limit for m much larger than n_b; count the bytes of "
                    "L21 and U12 too.")
    close(value, expected, rtol=1e-3, what="the intensity",
          hint="Flops: 2·m·m·n_b (a multiply and an add per term). Bytes: A22 read and "
               "written (2m² floats), L21 (m x n_b) and U12 (n_b x m) read, 4 bytes each.")


@exercise(2, correct="2 flops for 16 bytes: an eighth of a flop per byte, whatever n; float64 "
                     "halves the intensity of every kernel.")
def check_exercise_2(answer):
    """2 / 16."""
    close(answer, 2 / 16, rtol=1e-6, what="the intensity",
          hint="A multiply and a subtract per entry; a read and a write of 8 bytes each.")


@exercise(3, correct="min(P, I·B): the memory slope meets the compute roof at I = P/B.")
def check_exercise_3(answer):
    """attainable_gflops(I, P, B) = min(P, I·B)."""
    callable_(answer)
    for intensity, peak, bw in ((0.25, 100.0, 50.0), (85.0, 100.0, 50.0), (2.0, 100.0, 50.0),
                                (0.1, 20_000.0, 3_000.0), (50.0, 60_000.0, 4_000.0)):
        close(answer(intensity, peak, bw), min(peak, intensity * bw), rtol=1e-9,
              what=f"attainable_gflops({intensity}, {peak}, {bw})",
              hint="Below the ridge, bandwidth times intensity; above it, the peak.")


def _gemm_share(n: int, nb: int) -> float:
    """Share of blocked LU's flops in its trailing GEMM updates (LAPACK flop counts)."""
    gemm = panel = trsm = 0.0
    for j in range(0, n, nb):
        jb = min(nb, n - j)
        rest = n - j - jb
        panel += (n - j) * jb * jb - jb ** 3 / 3
        trsm += jb * jb * rest
        gemm += 2.0 * rest * rest * jb
    return gemm / (gemm + panel + trsm)


@exercise(4, correct="Most of the work is GEMM; the share tends to 1 as n/nb grows.")
def check_exercise_4(answer):
    """gemm flops / all flops of blocked LU, n = 512, nb = 64."""
    close(answer, _gemm_share(512, 64), rtol=1e-3, what="the GEMM share",
          hint="Record with `with oclla.record() as rec:` around "
               "`oclla.lu_factor(a, block=64)`; then phase_totals()['gemm'] holds "
               "(steps, kernels, ns, flops).")
