/* publish.h -- stores that other work-groups read once a flag says so (the
 * one-launch solve of trsm.cl, trsm_chain).
 *
 * OpenCL 1.2 has no fence beyond the work-group (NVIDIA compiles
 * mem_fence(CLK_GLOBAL_MEM_FENCE) to a fence of the compute unit): after a
 * barrier, the flag one item raises may reach memory before another item's
 * plain store, and a reader that saw the flag reads the old value.  An atomic
 * exchange is performed where every compute unit reads; an item that uses its
 * result waits for it before the next barrier.  So each item publishes its
 * values, branches on PUBLISHED (which almost never holds, and whose body only
 * stores the same value again), the work-group meets a barrier, and then one
 * item raises the flag.
 */
#ifndef OCLLA_PUBLISH_H
#define OCLLA_PUBLISH_H

#if PRECISION == 64 && defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

/* *p = v as an atomic exchange (in float64 one of 64 bits where the device has
 * cl_khr_int64_base_atomics, else two of 32); bits of what it returns */
int publish(volatile __global real *p, const real v)
{
#if PRECISION == 64 && defined(cl_khr_int64_base_atomics)
    return (int)atom_xchg((volatile __global long *)p, as_long(v));
#elif PRECISION == 64
    volatile __global int *w = (volatile __global int *)p;
    const int2 bits = as_int2(v);
    return atomic_xchg(w, bits.x) ^ atomic_xchg(w + 1, bits.y);
#else
    return atomic_xchg((volatile __global int *)p, as_int(v));
#endif
}

/* A condition on publish's results that makes the item wait for them */
#define PUBLISHED(seen) ((seen) == 0x7fc00001)

#endif
