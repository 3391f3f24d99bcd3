/* common.h -- shared definitions for every oclla kernel family.
 *
 * PRECISION (32 or 64) selects the scalar type `real`.  Matrices are stored
 * row-major with a leading dimension `ld`: element (r, c) of a matrix that
 * starts at element offset `off` is  a[off + r*ld + c].
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
#else
typedef float real;
typedef float2 real2;
typedef float4 real4;
typedef float8 real8;
typedef float16 real16;
#define ZERO 0.0f
#define ONE 1.0f
#define REAL_MIN FLT_MIN
#endif

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

/* Row-major element index. */
#define AT(r, c, ld) ((r) * (ld) + (c))

#endif
