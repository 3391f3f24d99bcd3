"""Tables of ``oclla bench --json`` output (files of JSON documents, one per call).

    python benchmarks/table.py FILE.json [...]         # every document of the files
    python benchmarks/table.py --current               # the current table (Markdown)
    python benchmarks/table.py --current --write README.md

``--current`` reads every ``benchmarks/results/*.json`` and keeps, for each device,
routine and dtype, the documents of the newest file that has them (newest by the commit
that added the file, then by date): one row per implementation, each time a range over
those documents (the best of each call's repetitions), the reference beside it.  The
blocked LU is listed once, under ``getrf`` (``oclla bench lu`` also times it, in a
different call); the solves (``getrs``, ``potrs``) once per number of right-hand
sides.  Each row names its run (a results file); below the table each run
gives its date, driver, which PoCL (for PoCL devices), the commit (the one recorded by
``oclla bench``, else the last commit that wrote the file) and the commands (recorded,
else the one its records imply).  ``--write FILE``
replaces the text between ``<!-- current table -->`` and ``<!-- end of current table
-->`` in FILE with the table (the README's table is made this way, and a test checks
that it is up to date).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
BEGIN, END = "<!-- current table -->", "<!-- end of current table -->"
ROUTINES = ("getrf", "potrf", "lu", "gemm", "syrk", "getrs", "potrs")
SOLVES = ("getrs", "potrs")            # a row per number of right-hand sides


def _rhs(doc: dict) -> int:
    """The right-hand sides of a solve's call (every record of a call has the call's
    --nrhs); 0 for the other routines."""
    if doc["routine"] not in SOLVES:
        return 0
    return max(r.get("nrhs", 1) for r in doc["records"])


def routine_of(doc: dict) -> str:
    """The table's routine column for ``doc``: its routine, with the right-hand sides of
    a solve ("potrs, 16 rhs")."""
    rhs = _rhs(doc)
    return f"{doc['routine']}, {rhs} rhs" if rhs else doc["routine"]


def documents(text):
    """Every JSON document in ``text`` (documents written one after another)."""
    decoder, i = json.JSONDecoder(), 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return
        doc, i = decoder.raw_decode(text, i)
        yield doc


def print_documents(paths) -> None:
    """Every document of the files as its own table (the measured history)."""
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for doc in documents(f.read()):
                print(f"\n{doc['routine']} on {doc['device']} (driver {doc['driver']}), "
                      f"reference {doc['reference']}, {doc['date']}")
                print("| n | dtype | implementation | ms | GFLOP/s | % peak | vs reference |")
                print("|---:|---|---|---:|---:|---:|---:|")
                for r in doc["records"]:
                    pk = "" if r["percent_of_peak"] is None else f"{r['percent_of_peak']:.1f}"
                    print(f"| {r['n']} | {r['dtype']} | {r['impl']} | {1e3 * r['seconds']:.2f} "
                          f"| {r['gflops']:.1f} | {pk} | {r['ratio_to_reference']:.2f} |")
                for note in doc.get("notes", []):
                    print(f"note: {note}")


def _committed(path: str) -> tuple:
    """(commit time, short hash) of the last commit that wrote ``path`` ((0, None) outside
    git or before it is committed)."""
    try:
        out = subprocess.run(["git", "-C", os.path.dirname(path), "log", "-1",
                              "--format=%ct %h", "--", os.path.basename(path)],
                             capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        out = []
    return (int(out[0]), out[1]) if len(out) >= 2 else (0, None)


def pocl_source(doc: dict) -> str:
    """Which PoCL measured ``doc`` (empty for other platforms)."""
    if "Portable Computing Language" not in doc.get("platform", "") \
            and not doc["device"].startswith("pthread"):
        return ""
    driver = doc.get("driver", "")
    if "debian" in driver.lower() or "ubuntu" in driver.lower():
        return "the distribution's PoCL (Debian package pocl-opencl-icd)"
    return "PoCL " + driver + " (the pocl extra's wheel unless noted)"


def _command(doc: dict) -> str:
    """The command stored in ``doc``, else the one its records imply."""
    if doc.get("command"):
        return doc["command"]
    sizes = ",".join(str(n) for n in sorted({r["n"] for r in doc["records"]}))
    dtypes = ",".join(sorted({r["dtype"] for r in doc["records"]}))
    return f"oclla bench {doc['routine']} --sizes {sizes} --dtype {dtypes}"


def current(results: str = RESULTS) -> tuple:
    """(rows, runs) of the current table; see the module docstring."""
    found = {}                                   # (device, routine, dtype) -> (key, path, docs)
    for path in sorted(glob.glob(os.path.join(results, "*.json"))):
        added = _committed(path)
        with open(path, encoding="utf-8") as f:
            docs = [d for d in documents(f.read())
                    if "records" in d and d.get("routine") in ROUTINES]
        for doc in docs:
            for dtype in sorted({r["dtype"] for r in doc["records"]}):
                key = (doc["device"], doc["routine"], _rhs(doc), dtype)
                rank = (added[0], doc["date"], path)
                if key not in found or rank > found[key][0]:
                    found[key] = (rank, path, added[1], [])
                if found[key][1] == path:
                    found[key][3].append(doc)
    rows, runs = [], {}
    order = {routine: i for i, routine in enumerate(ROUTINES)}
    for (device, _, _, dtype), (_, path, commit, docs) in sorted(
            found.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9)) + kv[0][2:]):
        first = docs[0]
        routine = routine_of(first)
        run = os.path.basename(path)
        if run not in runs:
            runs[run] = dict(label=str(len(runs) + 1), file=run, date=first["date"],
                             driver=first["driver"], pocl=pocl_source(first),
                             commit=first.get("commit") or commit, commands={},
                             reference=first["reference"], seen=set())
        for d in docs:
            if id(d) not in runs[run]["seen"]:
                runs[run]["seen"].add(id(d))
                command = _command(d)
                runs[run]["commands"][command] = runs[run]["commands"].get(command, 0) + 1
        impls = dict.fromkeys(r["impl"] for d in docs for r in d["records"]
                              if r["dtype"] == dtype)
        reference = [i for i in impls if not i.startswith("oclla ")]
        for impl in impls:
            if impl in reference or (routine == "lu" and impl == "oclla blocked"):
                continue
            sizes = sorted({r["n"] for d in docs for r in d["records"]
                            if r["impl"] == impl and r["dtype"] == dtype})
            cells = {n: _ranges(docs, impl, reference, dtype, n) for n in sizes}
            rows.append(dict(device=device, routine=routine, dtype=dtype,
                             impl=impl.removeprefix("oclla "), sizes=sizes, cells=cells,
                             run=runs[run]["label"]))
    return rows, list(runs.values())


def _ranges(docs, impl, reference, dtype, n) -> tuple:
    """(oclla ms, reference ms, oclla speed / reference speed) over the documents, each a
    (low, high) range."""
    ours, refs, ratios = [], [], []
    for d in docs:
        by_impl = {r["impl"]: r for r in d["records"] if r["dtype"] == dtype and r["n"] == n}
        if impl in by_impl:
            ours.append(1e3 * by_impl[impl]["seconds"])
            ratios.append(by_impl[impl]["ratio_to_reference"])
            refs += [1e3 * by_impl[name]["seconds"] for name in reference if name in by_impl]
    span = (lambda v: (min(v), max(v)) if v else None)
    return span(ours), span(refs), span(ratios)


def _fmt(span, scale: float = 1.0, percent: bool = False) -> str:
    if span is None:
        return "–"
    low, high = (scale * v for v in span)
    digits = 0 if percent or low >= 100 else (1 if low >= 10 else 2)
    text = f"{low:.{digits}f}" if round(low, digits) == round(high, digits) \
        else f"{low:.{digits}f}–{high:.{digits}f}"
    return text + ("%" if percent else "")


def markdown(rows, runs) -> str:
    """The current table and its runs as Markdown."""
    lines = ["| device | routine | dtype | oclla | n | oclla ms | reference ms "
             "| oclla speed / reference | run |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        join = (lambda k, **kw: " / ".join(_fmt(r["cells"][n][k], **kw) for n in r["sizes"]))
        lines.append(f"| {r['device']} | {r['routine']} | {r['dtype']} | {r['impl']} "
                     f"| {' / '.join(str(n) for n in r['sizes'])} | {join(0)} | {join(1)} "
                     f"| {join(2, scale=100.0, percent=True)} | {r['run']} |")
    lines.append("")
    lines.append("Runs (ranges are over the calls of the run, each call the best of its "
                 "repetitions):")
    lines.append("")
    for run in runs:
        pocl = f"; {run['pocl']}" if run["pocl"] else ""
        commands = "; ".join(f"`{c}`" + (f" ({k} calls)" if k > 1 else "")
                             for c, k in run["commands"].items())
        lines.append(f"{run['label']}. {run['date']}, driver {run['driver']}{pocl}; "
                     f"reference {run['reference']}; results committed in "
                     f"{run['commit'] or '(not committed)'}; {commands} "
                     f"(`benchmarks/results/{run['file']}`)")
    return "\n".join(lines)


def write_between_markers(path: str, text: str) -> None:
    """Replace the text between :data:`BEGIN` and :data:`END` in the file."""
    with open(path, encoding="utf-8") as f:
        old = f.read()
    start, stop = old.index(BEGIN) + len(BEGIN), old.index(END)
    with open(path, "w", encoding="utf-8") as f:
        f.write(old[:start] + "\n" + text + "\n" + old[stop:])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks/table.py",
                                 description="Tables of oclla bench --json output.")
    ap.add_argument("files", nargs="*", help="files of oclla bench --json documents")
    ap.add_argument("--current", action="store_true",
                    help="the current table from benchmarks/results (Markdown)")
    ap.add_argument("--write", metavar="FILE",
                    help="with --current: put the table between the markers in FILE")
    args = ap.parse_args(argv)
    if not args.current:
        if not args.files:
            ap.error("give files, or --current")
        print_documents(args.files)
        return 0
    text = markdown(*current())
    if args.write:
        write_between_markers(args.write, text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
