/* arrival.h -- "am I the last work-group?": the handshake that lets one
 * launch finish work that needs the results of all its work-groups.
 *
 * Each work-group writes its results, then calls last_to_arrive; the one
 * that arrives last of `total` gets 1 (in every item) and sees the others'
 * global writes: on the hardware's word, as grid.h says (OpenCL 1.2 orders
 * nothing between work-groups; see publish.h for what that cost trsm.cl).
 * Every work-group calls it, so no barrier sits in a branch (PoCL loses
 * work-item values across a barrier in a branch); one with arrive = 0 passes
 * the barriers without counting.
 */
#ifndef OCLLA_ARRIVAL_H
#define OCLLA_ARRIVAL_H

/* lid: the item's flat index in its work-group; *count is reset to 0 by the
 * last (alone of total = 1, it is not touched); *flag is scratch. */
int last_to_arrive(__global int *count, const int total, const int arrive, const int lid,
                   __local int *flag)
{
    mem_fence(CLK_GLOBAL_MEM_FENCE);                 /* every item's writes, then the signal */
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) {
        *flag = arrive && (total == 1 || atomic_inc(count) == total - 1);
        if (*flag && total > 1)
            *count = 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int last = *flag;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_LOCAL_MEM_FENCE);
    return last;
}

#endif
