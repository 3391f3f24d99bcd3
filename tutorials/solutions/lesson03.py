"""Solutions to Lesson 3's exercises (for teachers).

Run ``python tutorials/solutions/lesson03.py`` to see every checker accept them.
"""


# Exercise 1: rows k+1..n-1 (n-k-1 of them) times columns k..n-1 (n-k of them).
def answer_1(n, k):
    return (n - k - 1) * (n - k) / n ** 2


# Exercise 2: sum_k (n-k-1)(n-k) = (n-1)n(n+1)/3 over (n-1)n² launched: (n+1)/(3n) -> 1/3.
answer_2 = 1 / 3

# Exercise 3: n - 1 steps, each copies n² float32 values.
answer_3 = (1024 - 1) * 1024 ** 2 * 4


# Exercise 4: device time of the copies over the device time of all commands.
def answer_4(run):
    copies = sum(k.duration_ns for k in run.kernels if k.name == "copy U->A")
    return copies / sum(k.duration_ns for k in run.kernels)


if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
