/* grid.h -- work-groups of one launch that wait for each other.
 *
 * OpenCL 1.2 promises nothing about which work-groups of a launch run at
 * the same time: a barrier across work-groups deadlocks if it waits for one
 * that has not started and cannot start until the waiters finish.  grid_join
 * first finds work-groups that do run at the same time (the discovery
 * protocol of Sorensen, Donaldson, Batty, Gopalakrishnan and Rakamaric,
 * "Portable inter-workgroup barrier synchronisation for GPUs", OOPSLA 2016):
 * a work-group joins while the poll is open; the first to join keeps it open
 * until every launched work-group has joined or GRID_WAIT polls have passed,
 * then closes it; those that come later take no part.  Every participant was
 * running when the poll closed and, once started, a work-group keeps running
 * (GPUs and CPU thread pools schedule them so), so grid_sync among the
 * participants cannot deadlock.
 *
 * Memory written before grid_sync by one participant is read after it by
 * another through volatile pointers, with mem_fence around the atomic counter.
 * OpenCL 1.2 orders nothing between work-groups, so this rests on what the
 * hardware does, not on the standard: volatile and atomic global accesses go
 * to the level of memory that all compute units share (L2 on NVIDIA, where
 * mem_fence(CLK_GLOBAL_MEM_FENCE) compiles to a work-group-scope membar.cta;
 * the cache-coherent memory of a CPU), and the fence keeps each work-item's
 * own accesses in order.  It does not order another item's store before the
 * counter's atomic: trsm.cl's one-launch solve and lu_grid.cl, built the same
 * way, read old values on an H200 until their stores became atomic exchanges
 * that each item waits for before the barrier (publish.h; benchmarks/
 * cross_group_stress.py and threshold_sweep.py repeat them).  So only a tuned
 * entry chooses the LU's "grid" panel (oclla/_knobs.py, lu PANEL), on devices
 * where it was measured; others take a launch per column.
 */
#ifndef OCLLA_GRID_H
#define OCLLA_GRID_H

#ifndef GRID_WAIT
#define GRID_WAIT 4096      /* polls the first participant waits for the others */
#endif
#define GRID_CLOSED 0x40000000

/* Called by every item of every work-group; state[0] is 0 before the launch.
 * Returns this work-group's participant index (0, 1, ...) or -1, and the
 * number of participants in *count (0 for a work-group that takes no part).
 * state[0] ends as GRID_CLOSED | participants; shared: two local ints. */
int grid_join(volatile __global int *state, const int launched, const int lid,
              __local int *shared, int *count)
{
    if (lid == 0) {
        int id = -1, seen = *state;
        while (!(seen & GRID_CLOSED)) {
            const int was = atomic_cmpxchg(state, seen, seen + 1);
            if (was == seen) {
                id = seen;
                break;
            }
            seen = was;
        }
        if (id == 0)
            for (int i = 0; i < GRID_WAIT && (*state & ~GRID_CLOSED) < launched; i++)
                ;
        if (id == 0)
            atomic_or(state, GRID_CLOSED);
        int total = 0;
        if (id >= 0)
            while (!((total = *state) & GRID_CLOSED))
                ;
        shared[0] = id;
        shared[1] = id >= 0 ? total & ~GRID_CLOSED : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int id = shared[0];
    *count = shared[1];
    barrier(CLK_LOCAL_MEM_FENCE);
    return id;
}

/* Barrier over the participants: the k-th call (k = 1, 2, ...) of each waits
 * until all `count` have made their k-th call (`target` = k * count; *counter
 * is 0 before the launch).  Every item of every work-group calls it (act = 0:
 * a non-participant passes the local barriers only). */
void grid_sync(volatile __global int *counter, const int target, const int act,
               const int lid)
{
    barrier(CLK_GLOBAL_MEM_FENCE);                   /* the work-group's writes, then */
    if (act && lid == 0) {
        mem_fence(CLK_GLOBAL_MEM_FENCE);             /* this item's writes, then the signal */
        atomic_inc(counter);
        while (*counter < target)
            ;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
}

#endif
