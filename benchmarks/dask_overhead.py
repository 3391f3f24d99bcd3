"""Tile Cholesky on Dask against the same tiles in one process: the overhead of the tasks.

    python benchmarks/dask_overhead.py                                  # PoCL, n = 512..2048
    python benchmarks/dask_overhead.py --n 16384 32768 --tile 4096 --workers 2 --device NVIDIA

Three factorizations of a seeded SPD matrix (float64 unless --dtype), each the best of
--repeat runs after a warm-up of the same tile on every worker:

``in-process``   :func:`oclla.tiled.factor_host` with tiles of --tile (panels stay
                 on the device; host matrix in, factor out);
``dask-local``   :func:`oclla.distributed.cholesky` without a client: the same task
                 graph on Dask's synchronous scheduler in this process;
``dask-N``       the same on a ``LocalCluster`` of --workers processes, one thread
                 each, every worker on --device (or its OCLLA_DEVICE).

Prints one JSON line per order with the times, the backward errors and whether the
two Dask runs gave the same factor bit for bit.
"""

import argparse
import json
import time

import numpy as np

import oclla
from oclla import accuracy, tiled
from oclla import distributed as dd


def spd(n, dtype):
    x = np.random.default_rng(n).standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--tile", type=int, default=256)
    parser.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from distributed import Client, LocalCluster
    queue = oclla.get_queue(args.device)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.register_plugin(dd.OpenCLDevice(args.device))
        warm = spd(2 * args.tile + 1, args.dtype)
        dd.cholesky(warm, tile=args.tile, client=client)
        dd.cholesky(warm, tile=args.tile)
        for n in args.n:
            a = spd(n, args.dtype)
            t_in, l_in = best(lambda: tiled.factor_host(
                a, lower=True, overwrite_a=False, check_finite=True, clean=True, block=None,
                queue=queue, tile=args.tile), args.repeat)
            t_local, l_local = best(lambda: dd.cholesky(a, lower=True, tile=args.tile),
                                    args.repeat)
            t_dask, l_dask = best(lambda: dd.cholesky(a, lower=True, tile=args.tile,
                                                      client=client), args.repeat)
            print(json.dumps({
                "n": n, "tile": args.tile, "dtype": args.dtype, "device": queue.device.name,
                "in_process_s": t_in, "dask_local_s": t_local,
                f"dask_{args.workers}_workers_s": t_dask,
                "backward_error": [accuracy.cholesky_backward_error(a, l, True)
                                   for l in (l_in, l_local, l_dask)],
                "same_factor": bool(np.array_equal(l_local, l_dask))}), flush=True)


if __name__ == "__main__":
    main()
