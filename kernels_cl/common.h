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
#define ZERO 0.0
#define ONE 1.0
#define REAL_MIN DBL_MIN      /* smallest normal number (LAPACK's sfmin) */
#else
typedef float real;
#define ZERO 0.0f
#define ONE 1.0f
#define REAL_MIN FLT_MIN
#endif

/* Row-major element index. */
#define AT(r, c, ld) ((r) * (ld) + (c))

#endif
