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
 * (GPUs and CPU thread pools schedule them so), so participants that wait
 * for each other cannot deadlock.
 *
 * OpenCL 1.2 orders nothing between work-groups, so what participants hand
 * each other rests on what the hardware does, not on the standard: a barrier
 * across work-groups (an atomic counter between mem_fence calls) did not
 * order another item's plain store before the counter's atomic on an H200
 * (NVIDIA compiles mem_fence(CLK_GLOBAL_MEM_FENCE) to a work-group-scope
 * membar.cta), and a participant past it now and then read an old value.
 * lu_grid.cl therefore hands values over as tagged words that the reader
 * waits for (tagged.h), with no barrier across work-groups; trsm.cl's
 * one-launch solve stores by atomic exchanges before raising a flag
 * (publish.h).  benchmarks/cross_group_stress.py and threshold_sweep.py repeat
 * them.  Only a tuned entry chooses the LU's "grid" panel (oclla/_knobs.py,
 * lu PANEL), on devices where it was measured; others take a launch per column.
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

#endif
