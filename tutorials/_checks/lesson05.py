"""Checkers for Lesson 5 (BLAS-3, arithmetic intensity, roofline, blocked LU)."""

from __future__ import annotations

from . import callable_, close, exercise


@exercise(1, correct="2n³ flops over 3·4n² bytes = n/6 ≈ 85 flop/byte.")
def check_exercise_1(answer):
    """2n³ / (12 n²) for n = 512."""
    n = 512
    close(answer, 2 * n ** 3 / (3 * 4 * n ** 2), rtol=1e-3, what="the intensity",
          hint="Flops: 2n³ (a multiply and an add per term). Bytes: three n x n float32 "
               "matrices.")


@exercise(2, correct="2 flops for 8 bytes: a quarter flop per byte, whatever n.")
def check_exercise_2(answer):
    """2 / 8."""
    close(answer, 2 / 8, rtol=1e-6, what="the intensity",
          hint="A multiply and a subtract per entry; a 4-byte read and a 4-byte write.")


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
