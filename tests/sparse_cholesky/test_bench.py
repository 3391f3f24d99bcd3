"""oclla bench sparse: one small problem end to end, the JSON it prints, bad options."""

import json

import pytest

from oclla import bench_sparse


def test_bench_sparse_json(capsys):
    assert bench_sparse.main(["--sizes", "3d:4", "--methods", "rl,rlb", "--large",
                              "default,0", "--merge", "relaxed,fill", "--repeat", "1",
                              "--no-reference", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["records"]
    assert doc["routine"] == "sparse" and len(rows) == 8
    assert {(r["method"], r["large"] == 0, r["merge"]) for r in rows} == {
        (m, big, rule) for m in ("rl", "rlb") for big in (False, True)
        for rule in ("relaxed", "fill")}
    for r in rows:
        assert r["factor_s"] > 0 and r["err"] < 30
        assert 0 <= r["large_share"] <= 1
        if r["large"] == 0:
            assert r["large_supernodes"] == r["supernodes"] and r["large_share"] > 0


@pytest.mark.parametrize("check_max,probes,kind", [(1000, 4, "exact"), (10, 2, "probe"),
                                                   (10, 0, None)])
def test_bench_sparse_check_exact_probe_or_none(capsys, check_max, probes, kind):
    """The exact backward error up to --check-max, the probe above it, none with
    --probes 0; the table names the check."""
    assert bench_sparse.main(["--sizes", "2d:5", "--methods", "rl", "--repeat", "1",
                              "--no-reference", "--check-max", str(check_max),
                              "--probes", str(probes), "--json"]) == 0
    row, = json.loads(capsys.readouterr().out)["records"]
    assert row.get("check") == kind and (kind is None) == ("err" not in row)
    if kind:
        assert row["err"] < 30
        assert kind in bench_sparse.table([row]).splitlines()[1]


def test_bench_sparse_refuses_unknown_problems():
    with pytest.raises(SystemExit):
        bench_sparse.parse_args(["--sizes", "4d:3"])
    with pytest.raises(SystemExit):
        bench_sparse.parse_args(["--merge", "greedy"])
