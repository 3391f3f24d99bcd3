"""Solutions to Lesson 11's exercises (for teachers).

Run ``python tutorials/solutions/lesson11.py`` to see every checker accept them.
"""

# Exercise 1: natural order: column 0 is full, eliminating it joins all ten unknowns, so
# L's lower triangle is full: 10·11/2 = 55.  Reversed (full row last): column j has the
# diagonal, row j+1 and the last row, all already in A: no fill, nnz(L) = nnz(tril A) =
# 10 + 9 + 8 = 27.
answer_1 = (55, 27)

# Exercise 2: eliminate on the graph.  Column 0's neighbours {2, 4} become a clique: fill
# (4, 2).  Column 1's neighbours {3, 5}: fill (5, 3).  Column 2's now {4, 5}: fill (5, 4).
# Column 3's {4, 5}, column 4's {5}.  First row below the diagonal of each column of L:
answer_2 = [2, 3, 4, 4, 5, -1]

# Exercise 3: the tridiagonal matrix has no fill; |L_j| = 2 for j < 9 and |L_9| = 1.  The
# rule |L_j| = |L_j+1| + 1 holds only for j = 8: columns 8 and 9 form one supernode, every
# other column is alone: 9 supernodes.
answer_3 = 9

# Exercise 4: measured nnz(L) on the 150 x 3 strip: natural 45 599 (a band 150 wide),
# metis 2 363, rcm 2 086, amd 1 790.  Nested dissection's separators buy little on a
# strip whose band, numbered across, is only 3 wide; measure rather than trust a rule.
answer_4 = "amd"

if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
