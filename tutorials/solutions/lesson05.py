"""Solutions to Lesson 5's exercises (for teachers).

Run ``python tutorials/solutions/lesson05.py`` to see every checker accept them.
"""

import numpy as np

import oclla

# Exercise 1: 2 m² nb flops; A22 read and written, L21 and U12 read: 4 (2m² + 2 m nb) bytes.
# m nb / (4 (m + nb)) = 1024 * 64 / (4 * 1088), about 15.06 (n_b/4 = 16 as m grows).
answer_1 = 2 * 1024 ** 2 * 64 / (4 * (2 * 1024 ** 2 + 2 * 1024 * 64))

# Exercise 2: multiply + subtract per entry, 8 bytes read + 8 bytes written.
answer_2 = 2 / 16


# Exercise 3: the roofline.
def answer_3(intensity, peak_gflops, bandwidth_gbs):
    return min(peak_gflops, intensity * bandwidth_gbs)


# Exercise 4: measured on the trace (about 0.82).
def _gemm_share_from_trace():
    a = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    with oclla.record() as rec:
        oclla.lu_factor(a, block=64)
    run = rec.runs[-1]
    return run.phase_totals()["gemm"][3] / run.flops


answer_4 = _gemm_share_from_trace()

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
