"""Print the tables of ``oclla bench --json`` output (one or more JSON documents).

    python benchmarks/table.py bench.json [more.json ...]
"""

import json
import sys


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


def main(paths):
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


if __name__ == "__main__":
    main(sys.argv[1:])
