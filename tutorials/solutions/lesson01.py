"""Solutions to Lesson 1's exercises (for teachers).

Run ``python tutorials/solutions/lesson01.py`` to see every checker accept them.
"""

# Exercise 1: (12 / 4) * (8 / 4) = 3 * 2.
answer_1 = 6

# Exercise 2: the work-items with r > 1 (rows 2, 3) and c >= 1 (columns 1, 2, 3).
answer_2 = 6

# Exercise 3: one work-item per entry, guarded against the rounded-up NDRange.
answer_3 = """
__kernel void axpy(const float alpha, __global const float *x,
                   __global float *y, const int n)
{
    const int i = get_global_id(0);
    if (i < n)
        y[i] = alpha * x[i] + y[i];
}
"""


# Exercise 4: the device ran the command from `start` to `end` (nanoseconds).
def answer_4(event):
    return (event.profile.end - event.profile.start) / 1e3


if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
