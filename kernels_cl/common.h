/* common.h -- shared definitions for every oclla kernel family.
 *
 * PRECISION (32 or 64) selects the scalar type `real`.  Matrices are stored
 * row-major with a leading dimension `ld`: element (r, c) of a matrix that
 * starts at element offset `off` is  a[off + r*ld + c].
 *
 * Index width: orders, rows, columns and leading dimensions are ints (each
 * is below 2^31), but an element index r*ld + c is not: at n = 46341 an n x n
 * matrix has more than 2^31 entries.  So AT() forms its product in size_t
 * (64 bits wherever the device can address that much), element offsets and
 * element counts that kernels take as arguments are longs (the host passes
 * numpy int64 scalars), and any other product of two sizes that indexes
 * memory goes through AT() or a size_t cast.  Loop counters stay ints: a
 * 64-bit counter costs two registers on a GPU.
 */
#ifndef OCLLA_COMMON_H
#define OCLLA_COMMON_H

#ifndef PRECISION
#define PRECISION 32            /* 32: float, 64: double */
#endif

#if PRECISION == 64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
typedef double2 real2;
typedef double4 real4;
typedef double8 real8;
typedef double16 real16;
#define ZERO 0.0
#define ONE 1.0
#define REAL_MIN DBL_MIN      /* smallest normal number (LAPACK's sfmin) */
#define REAL_MIN_EXP DBL_MIN_EXP  /* REAL_MIN = 2^(REAL_MIN_EXP - 1) */
#else
typedef float real;
typedef float2 real2;
typedef float4 real4;
typedef float8 real8;
typedef float16 real16;
#define ZERO 0.0f
#define ONE 1.0f
#define REAL_MIN FLT_MIN
#define REAL_MIN_EXP FLT_MIN_EXP
#endif

/* a * b + c for the kernels' inner products.  Not fma(): OpenCL's fma() must round
 * once, so on a target without fused multiply-add (PoCL's generic x86-64 build)
 * it is a library call some twenty times slower than a multiply and an add,
 * while a * b + c is contracted to one fused multiply-add wherever the hardware
 * has it (FP_CONTRACT is on by default in OpenCL C). */
#define MUL_ADD(a, b, c) ((a) * (b) + (c))

/* Vector of W reals (W = 1, 2, 4, 8, 16) and its unaligned load/store;
 * REALV(1) is real itself. */
#define real1 real
#define vload1(i, p) ((p)[i])
#define vstore1(x, i, p) ((p)[i] = (x))
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define REALV_(w) real##w      /* pasted directly: some runtimes define vloadN as macros */
#define VLOAD_(w) vload##w
#define VSTORE_(w) vstore##w
#define REALV(w) REALV_(w)
#define VLOAD(w) VLOAD_(w)
#define VSTORE(w) VSTORE_(w)

/* A W-wide vector and its lanes as an array: a vector built from scalars (.s[u] = ...,
 * then .v) or taken apart (.v = ..., then .s[u]).  Not vloadn/vstoren on a private
 * array: PoCL 3.0 compiles each of those to a call into its library, which in a
 * CPU's inner loop costs as much as the arithmetic around it. */
#define LANES(w) union { REALV(w) v; real s[w]; }

/* Row-major element index, in size_t: r * ld may exceed 2^31 (above).
 * Never negative where it is used.  INDEX64 = 0, which the host passes only
 * where every operand has fewer than 2^31 elements (oclla/_programs.py
 * index_width), keeps the product in int: cheaper on GPUs. */
#ifndef INDEX64
#define INDEX64 1
#endif
#if INDEX64
#define AT(r, c, ld) ((size_t)(r) * (ld) + (c))
#else
#define AT(r, c, ld) ((r) * (ld) + (c))
#endif

#endif
