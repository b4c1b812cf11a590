"""The `analyze --dataset` layout read back by the engines people use, with
no options: DuckDB, polars, pyarrow/pandas and Spark (docs/tables.md,
"Dataset layout").

Two synthetic captures that start at the same instant go into one host's
partitions, one after the other (the second run must not replace the first),
and one of them into a second host with rotation; `counters collect` adds
NIC counters from the fake sysfs tree of tests/data/counters. The expected
row counts are the captures' frame counts, the `--out` tables of each run
read file by file, and 42 counters a snapshot (tests/counters.rs).

Run: python3 -m pytest tests/test_dataset.py (Spark needs Java 17 and
pyspark: scripts/setup.sh --test)
"""
import json
import re
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow.json as pj
import pyarrow.parquet as pq
import pytest

CAPTURE_TABLES = ("packets", "flows", "events", "pfc", "timeline", "hops", "nics", "telemetry", "uet_paths")
TABLES = CAPTURE_TABLES + ("counters",)
# Each table's TIMESTAMP(MICROS, UTC) columns and the *_ns column each mirrors.
TIMESTAMPS = {
    "packets": {"ts": "ts_ns"},
    "flows": {"first_ts": "first_ts_ns", "last_ts": "last_ts_ns"},
    "events": {"ts": "ts_ns"},
    "pfc": {"start_ts": "start_ns", "end_ts": "end_ns"},
    "timeline": {"bin_start": "bin_start_ns"},
    "hops": {"first_ts": "first_ts_ns", "last_ts": "last_ts_ns"},
    "nics": {},
    "telemetry": {"ts": "ts_ns"},
    "uet_paths": {"first_ts": "first_ts_ns", "last_ts": "last_ts_ns"},
    "counters": {"ts": "ts_ns"},
}
SYSFS = Path(__file__).resolve().parent / "data" / "counters" / "sysfs"
SNAPSHOTS, COUNTERS_PER_SNAPSHOT = 3, 42
GHOST, INCAST = 3000, 2000
RUN = r"\d{8}T\d{6}Z-[0-9a-f]{12}"
START = r"\d{8}T\d{6}\.\d{9}Z"
TABLE_FILE = re.compile(
    rf"(?P<table>{'|'.join(TABLES)})/host=(?P<host>tap-[ab])/date=(?P<date>\d{{4}}-\d\d-\d\d)/"
    rf"hour=(?P<hour>\d|1\d|2[0-3])/part-(?P<run>{RUN})-{START}(?:-\d+)?\.parquet"
)
SUMMARY_FILE = re.compile(rf"summaries/host=(?P<host>tap-[ab])/date=2026-01-01/hour=0/summary-(?P<run>{RUN})\.json")


@pytest.fixture(scope="module")
def ds(rocescope, tmp_path_factory):
    """The dataset, and what each table must hold per host."""
    tmp = tmp_path_factory.mktemp("dataset")
    ghost, incast = tmp / "ghost.pcapng", tmp / "incast.pcapng"
    # The synthetic fabric starts every capture at 2026-01-01T00:00:00Z.
    rocescope("synth", "ghost-drop", "--out", ghost, "--packets", GHOST, "--snaplen", 128)
    rocescope("synth", "incast", "--out", incast, "--packets", INCAST)
    root = tmp / "ds"
    rocescope("analyze", ghost, "--out", tmp / "ghost", "--dataset", root, "--host", "tap-a")
    rocescope("analyze", incast, "--out", tmp / "incast", "--dataset", root, "--host", "tap-a")
    # The second host rotates its files every 200 µs of capture time.
    rocescope("analyze", incast, "--dataset", root, "--host", "tap-b", "--rotate", "200us")
    # NIC counters of tap-a, sampled now (their date and hour are today's).
    rocescope("counters", "collect", "--iface", "eth2", "--rdma-dev", "mlx5_0", "--no-ethtool",
              "--sysfs-root", SYSFS, "--dataset", root, "--host", "tap-a", "--interval", "20ms",
              "--count", SNAPSHOTS)

    def rows(run, table):
        return pq.ParquetFile(tmp / run / f"{table}.parquet").metadata.num_rows

    # A host with no row of a table (telemetry: these samples have none) is
    # in no GROUP BY.
    want = {t: {h: n for h, n in {"tap-a": rows("ghost", t) + rows("incast", t),
                                  "tap-b": rows("incast", t)}.items() if n}
            for t in CAPTURE_TABLES}
    want["counters"] = {"tap-a": SNAPSHOTS * COUNTERS_PER_SNAPSHOT}
    assert want["packets"] == {"tap-a": GHOST + INCAST, "tap-b": INCAST}
    for t in ("flows", "events", "pfc", "timeline"):
        assert want[t]["tap-b"] > 0, f"the incast sample has {t} rows"
    # `retrans_packets - packets` over every flow: negative, exactly.
    flows = [pl.read_parquet(tmp / run / "flows.parquet") for run in ("ghost", "incast")]
    diff = min(min(r - p for r, p in zip(f["retrans_packets"], f["packets"])) for f in flows)
    assert diff < 0
    return {"root": root, "want": want, "min_diff": diff, "out": tmp / "ghost"}


def test_one_root_per_table_and_nothing_else_in_it(ds):
    root = ds["root"]
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    assert not [f for f in files if f.startswith(".partial/")], "files left half-written"
    assert {p.name for p in root.iterdir()} <= set(TABLES) | {"summaries", ".partial"}
    runs = {}
    for f in files:
        m = TABLE_FILE.fullmatch(f) or SUMMARY_FILE.fullmatch(f)
        assert m, f"unexpected file {f}"
        if not f.startswith("counters/"):
            assert m.group(0).count("date=2026-01-01/hour=0/") == 1, f
            runs.setdefault(m["host"], set()).add(m["run"])
    # tap-a: two runs that start in the same second (and 100 µs bin) stay apart.
    assert {h: len(r) for h, r in runs.items()} == {"tap-a": 2, "tap-b": 1}
    summaries = [f for f in files if f.startswith("summaries/")]
    assert len(summaries) == 3
    for f in summaries:
        text = (root / f).read_text()
        assert text.count("\n") == 1, "one JSON object per line"
        s = json.loads(text)
        assert all((root / p).is_file() for p in s["dataset"]["files"])
        assert s["dataset"]["run"] in f
    # tap-b rotated: several packets files.
    assert len([f for f in files if f.startswith("packets/host=tap-b/")]) >= 3


def test_duckdb_reads_each_table_with_no_options(ds):
    root, con = ds["root"], duckdb.connect()
    for t in TABLES:
        glob = f"{root}/{t}/**/*.parquet"
        by_host = dict(con.sql(f"SELECT host, count(*) FROM '{glob}' GROUP BY host").fetchall())
        assert by_host == ds["want"][t], t
        types = {c: ty for c, ty, *_ in con.sql(f"DESCRIBE SELECT * FROM read_parquet('{glob}')").fetchall()}
        assert (types["host"], types["date"], types["hour"]) == ("VARCHAR", "DATE", "BIGINT"), (t, types)
        for ts, ns in TIMESTAMPS[t].items():
            assert types[ts] == "TIMESTAMP WITH TIME ZONE", (t, ts, types[ts])
            off = con.sql(f"SELECT count(*) FROM '{glob}' WHERE epoch_us({ts}) <> {ns} // 1000").fetchall()
            assert off == [(0,)], (t, ts)
        assert not [c for c, ty in types.items() if ty.startswith(("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"))]
    flows = f"{root}/flows/**/*.parquet"
    assert con.sql(f"SELECT min(retrans_packets - packets) FROM '{flows}'").fetchall() == [(ds["min_diff"],)]
    summaries = con.sql(f"SELECT host, dataset.run FROM read_json('{root}/summaries/**/*.json')").fetchall()
    assert sorted(h for h, _ in summaries) == ["tap-a", "tap-a", "tap-b"] and len({r for _, r in summaries}) == 3


def test_polars_reads_each_table_directory_with_no_options(ds):
    root = ds["root"]
    for t in TABLES:
        lazy = pl.scan_parquet(root / t)
        schema = lazy.collect_schema()
        assert (schema["host"], schema["date"], schema["hour"]) == (pl.String, pl.Date, pl.Int64), t
        for ts in TIMESTAMPS[t]:
            assert schema[ts] == pl.Datetime("us", "UTC"), (t, ts)
        assert not [c for c, ty in schema.items() if ty.is_unsigned_integer()], t
        by_host = dict(lazy.group_by("host").agg(pl.len()).collect().iter_rows())
        assert by_host == ds["want"][t], t
    diff = pl.scan_parquet(root / "flows").select((pl.col("retrans_packets") - pl.col("packets")).min()).collect()
    assert diff.item() == ds["min_diff"]
    summaries = pl.scan_ndjson(root / "summaries" / "**" / "*.json").select(pl.col("dataset")).collect()
    assert summaries.height == 3


def test_pyarrow_and_pandas_read_each_table_directory_with_no_options(ds):
    root = ds["root"]
    for t in TABLES:
        table = pq.read_table(root / t)
        assert table.num_rows == sum(ds["want"][t].values()), t
        df = pd.read_parquet(root / t)
        assert df.groupby("host", observed=True).size().to_dict() == ds["want"][t], t
        for ts in TIMESTAMPS[t]:
            assert str(df[ts].dtype) == "datetime64[us, UTC]", (t, ts, df[ts].dtype)
        if t == "counters":
            continue
        # --out and the dataset: one schema (the dataset adds `run`).
        out = pq.read_schema(ds["out"] / f"{t}.parquet")
        part = pq.read_schema(next((root / t).rglob("*.parquet")))
        assert [(f.name, f.type) for f in part][:-1] == [(f.name, f.type) for f in out], t
        assert part.names[-1] == "run"
    flows = pd.read_parquet(root / "flows")
    assert int((flows["retrans_packets"] - flows["packets"]).min()) == ds["min_diff"]
    for path in (root / "summaries").rglob("*.json"):
        assert pj.read_json(path).num_rows == 1


def spark_session(name):
    """A local Spark, one core, UTC, no UI."""
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[1]").appName(name)
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
            .config("spark.driver.host", "127.0.0.1").config("spark.sql.session.timeZone", "UTC")
            .getOrCreate())


def test_spark_reads_each_table_directory_with_no_options(ds):
    from pyspark.sql import functions as F, types as T

    spark = spark_session("rocescope-dataset")
    try:
        root = ds["root"]
        for t in TABLES:
            df = spark.read.parquet(str(root / t))
            types = {f.name: f.dataType for f in df.schema.fields}
            assert isinstance(types["date"], T.DateType) and isinstance(types["hour"], T.IntegerType), (t, types)
            for ts, ns in TIMESTAMPS[t].items():
                assert isinstance(types[ts], T.TimestampType), (t, ts, types[ts])
                assert df.filter(f"unix_micros({ts}) != {ns} div 1000").count() == 0, (t, ts)
            assert not [c for c, ty in types.items() if isinstance(ty, T.DecimalType)], t
            by_host = {r["host"]: r["count"] for r in df.groupBy("host").count().collect()}
            assert by_host == ds["want"][t], t
        flows = spark.read.parquet(str(root / "flows"))
        assert flows.select(F.min(F.col("retrans_packets") - F.col("packets"))).first()[0] == ds["min_diff"]
        assert isinstance(flows.schema["udp_sport"].dataType, T.IntegerType)
        summaries = spark.read.json(str(root / "summaries"))
        assert sorted(r["host"] for r in summaries.select("host").collect()) == ["tap-a", "tap-a", "tap-b"]
        assert summaries.select("dataset.run").distinct().count() == 3
    finally:
        spark.stop()


def test_a_rerun_replaces_its_files_and_other_options_add_a_run(rocescope, tmp_path):
    cap, root = tmp_path / "ghost.pcapng", tmp_path / "ds"
    rocescope("synth", "ghost-drop", "--out", cap, "--packets", GHOST, "--snaplen", 128)

    def packets():
        return duckdb.sql(f"SELECT count(*), count(DISTINCT run) FROM '{root}/packets/**/*.parquet'").fetchall()[0]

    rocescope("analyze", cap, "--dataset", root, "--host", "tap-a")
    # The same capture and options again, rotating differently: the same run, replaced.
    rocescope("analyze", cap, "--dataset", root, "--host", "tap-a", "--rotate", "100us")
    assert packets() == (GHOST, 1)
    assert len(list((root / "packets").rglob("*.parquet"))) > 1
    # Other analysis options: another run beside it, nothing lost.
    rocescope("analyze", cap, "--dataset", root, "--host", "tap-a", "--bin", "1ms")
    assert packets() == (2 * GHOST, 2)
    assert len(list((root / "summaries").rglob("*.json"))) == 2


NCCL = Path(__file__).resolve().parent / "data"
SAMPLES = Path(__file__).resolve().parent.parent / "pcaps"
SQL = Path(__file__).resolve().parent.parent / "sql"
ENGINES = ("duckdb", "spark")


def sql_statements(script, imposed=None):
    """sql/SCRIPT's statements (each ends with ';' at the end of a line);
    `imposed` ({tap: ns}) fills hops.sql's imposed_clock_offsets as
    docs/sql.md says: its rows in place of ('', 0)."""
    text = (SQL / script).read_text()
    if imposed and script == "hops.sql":
        assert text.count("(VALUES ('', 0))") == 1
        rows = ", ".join(f"('{tap}', {ns})" for tap, ns in imposed.items())
        text = text.replace("(VALUES ('', 0))", f"(VALUES {rows})")
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("--"))
    return [st.strip() for st in text.split(";\n") if st.strip().rstrip(";")]


@pytest.fixture(scope="module")
def sql():
    """Runs scripts of sql/ on a dataset in DuckDB or Spark (one session
    for the module): sql(engine, dataset, scripts, queries, imposed) → the
    rows of each query, as dicts."""
    spark = None

    def run(engine, ds, scripts, queries, imposed=None):
        nonlocal spark
        statements = [st for s in scripts for st in sql_statements(s, imposed)]
        if engine == "duckdb":
            con = duckdb.connect()
            for t in ("packets", "pfc"):
                con.execute(f"CREATE VIEW {t} AS SELECT * FROM '{ds}/{t}/**/*.parquet'")
            for st in statements:
                con.execute(st)
            out = {}
            for name, q in queries.items():
                cur = con.execute(q)
                cols = [d[0] for d in cur.description]
                out[name] = [dict(zip(cols, r)) for r in cur.fetchall()]
            return out
        if spark is None:
            spark = spark_session("rocescope-sql")
        for t in ("packets", "pfc"):
            spark.read.parquet(str(ds / t)).createOrReplaceTempView(t)
        for st in statements:
            spark.sql(st)
        return {name: [r.asDict() for r in spark.sql(q).collect()] for name, q in queries.items()}

    yield run
    if spark is not None:
        spark.stop()


def tshark_keys(path):
    """(src, dst, dest QP, PSN, opcode, ICRC) of every BTH frame, by tshark."""
    import subprocess
    out = subprocess.run(
        ["tshark", "-r", str(path), "-Y", "infiniband.bth", "-T", "fields", "-e", "ip.src", "-e",
         "ip.dst", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn", "-e",
         "infiniband.bth.opcode", "-e", "infiniband.invariant.crc"],
        check=True, capture_output=True, text=True).stdout
    return [tuple(line.split("\t")) for line in out.splitlines() if line]


def reference(out, tap_of):
    """What the Rust side wrote to --out `out`: its hops, clock offsets,
    trees and flows, with its interface names turned into the dataset's
    taps by `tap_of`."""
    summary = json.loads((out / "summary.json").read_text())
    return {
        "hops": [{**h, "up_tap": tap_of(h["up_iface"]), "down_tap": tap_of(h["down_iface"])}
                 for h in pl.read_parquet(out / "hops.parquet").iter_rows(named=True)],
        "clocks": [{**c, "tap_a": tap_of(c["tap_a"]), "tap_b": tap_of(c["tap_b"])}
                   for c in summary["clock_offsets"]],
        "trees": summary["pfc_trees"],
        "flows": {f["flow_id"]: {**f, "tap": tap_of(f["iface"])}
                  for f in pl.read_parquet(out / "flows.parquet").iter_rows(named=True)},
    }


def dataset_flows(ds):
    """The dataset's flows by (host, run, flow_id), each with its tap."""
    rows = pl.read_parquet(ds / "flows" / "**" / "*.parquet", hive_partitioning=True).iter_rows(named=True)
    return {(f["host"], f["run"], f["flow_id"]): {**f, "tap": f"{f['host']}/{f['iface']}"} for f in rows}


def split_by_tap(rocescope, cap, tmp):
    """A capture of several taps as several tap hosts: each tap's frames
    (tshark, by interface) a capture of its own, analysed as --host tapK of
    one dataset (K its interface index in rocescope's run, so that taps
    sort as rocescope numbers them), and the same files analysed in one
    run, merged by time (the reference; its interfaces are tapK/NAME; not
    the unsplit capture, where a pause still running at the end is clipped
    at the last frame of any tap: docs/analysis.md, "PFC")."""
    import subprocess
    rocescope("analyze", cap, "--out", tmp / "whole")
    ifaces = json.loads((tmp / "whole" / "summary.json").read_text())["ifaces"]
    names = [ifaces[k] for k in sorted(ifaces, key=int)]
    ids = dict(tuple(line.split("\t"))[::-1] for line in subprocess.run(
        ["tshark", "-r", str(cap), "-T", "fields", "-e", "frame.interface_id", "-e",
         "frame.interface_name"], check=True, capture_output=True, text=True).stdout.splitlines())
    # An interface that recorded nothing (summary.json lists it, tshark
    # names no frame of it) has nothing to split, and the reference run of
    # the split files does not have it either.
    names = [name for name in names if name in ids]
    files = []
    for k, name in enumerate(names):
        f = tmp / f"tap{k}.pcapng"
        subprocess.run(["tshark", "-r", str(cap), "-Y", f"frame.interface_id == {ids[name]}", "-w",
                        str(f)], check=True, capture_output=True)
        rocescope("analyze", f, "--dataset", tmp / "ds", "--host", f"tap{k}")
        files.append(f)
    rocescope("analyze", *files, "--out", tmp / "ref")
    return {"ds": tmp / "ds", "want": reference(tmp / "ref", lambda iface: iface),
            "flows": dataset_flows(tmp / "ds")}


@pytest.fixture(scope="module")
def fabrics(rocescope, tmp_path_factory):
    """Every sample of pcaps/ with several taps, and a 4-tap ghost-drop
    fabric whose pauses spread over three hops twice (synth, 20000 frames),
    each split into tap hosts."""
    tmp = tmp_path_factory.mktemp("fabrics")
    ghost = tmp / "ghost-drop-4taps.pcapng"
    rocescope("synth", "ghost-drop", "--out", ghost, "--packets", 20_000, "--snaplen", 128)
    out = {}
    # The UET samples: their PDCs are flows now, but cross-tap matching
    # (hops.parquet, and the hops and tree SQL this fixture feeds) is RoCE's.
    roce = [c for c in sorted(SAMPLES.glob("*.pcapng")) if not c.stem.startswith("uet-")]
    for cap in [*roce, ghost]:
        rocescope("analyze", cap, "--out", tmp / cap.stem)
        # Taps that recorded RoCE: a collector interface of telemetry
        # reports alone is not one.
        taps = json.loads((tmp / cap.stem / "summary.json").read_text())["taps"]
        if sum(t["records"] > 0 for t in taps) > 1:
            out[cap.stem] = split_by_tap(rocescope, cap, tmp / f"{cap.stem}-taps")
    assert len(out) >= 10, sorted(out)
    return out


@pytest.fixture(scope="module")
def nccl(rocescope, tmp_path_factory):
    """The three NCCL hosts' captures: a dataset of three --hosts, and the
    same captures merged by time (mergecap -I none) analysed in one run, and
    again with imposed clock offsets."""
    import subprocess
    tmp = tmp_path_factory.mktemp("nccl")
    files = [NCCL / f"softroce-nccl_node{n}.pcap" for n in range(3)]
    for n, f in enumerate(files):
        rocescope("analyze", f, "--dataset", tmp / "ds", "--host", f"node{n}")
    merged = tmp / "nccl.pcapng"
    subprocess.run(["mergecap", "-I", "none", "-w", str(merged), *map(str, files)], check=True)
    rocescope("analyze", merged, "--out", tmp / "merged")
    rocescope("analyze", merged, "--out", tmp / "imposed", "--clock-offset", "nccl#1=+49.5us",
              "--clock-offset", "nccl#2=-9000ns")
    # mergecap -I none keeps the files' interfaces in order: nccl, nccl#1,
    # nccl#2; each host's run names its one interface after its file.
    tap = {"nccl": "node0/softroce-nccl_node0", "nccl#1": "node1/softroce-nccl_node1",
           "nccl#2": "node2/softroce-nccl_node2"}
    return {"ds": tmp / "ds", "files": files, "flows": dataset_flows(tmp / "ds"),
            "want": reference(tmp / "merged", tap.__getitem__),
            "imposed": reference(tmp / "imposed", tap.__getitem__),
            "offsets": {tap["nccl#1"]: 49_500, tap["nccl#2"]: -9_000}}


def test_the_nccl_hosts_share_92_frames_per_pair_by_tshark(nccl):
    keys = [set(tshark_keys(f)) for f in nccl["files"]]
    assert all(len(k) == 184 for k in keys), "no frame twice at one host"
    assert [len(keys[a] & keys[b]) for a, b in ((0, 1), (0, 2), (1, 2))] == [92, 92, 92]
    per_pair = {}
    for h in nccl["want"]["hops"]:
        pair = tuple(sorted((h["up_tap"], h["down_tap"])))
        per_pair[pair] = per_pair.get(pair, 0) + h["matched"]
    assert sorted(per_pair.values()) == [92, 92, 92]


HOPS_QUERIES = {"hops": "SELECT * FROM hops", "clocks": "SELECT * FROM hop_clock_offsets"}
FLOW = ("tap", "src_ip", "dst_ip", "dest_qp", "packets", "bytes", "first_ts_ns", "last_ts_ns")


def compare_hops(got, want, flows):
    """The SQL `hops` and `hop_clock_offsets` against hops.parquet and
    summary.json's clock_offsets, row for row (docs/sql.md): counts, min,
    max, clock offsets, first and last times and `adjacent` exactly, p50
    and p99 within the sketch's 0.5 % of the range (docs/analysis.md,
    "Cross-tap matching"); each flow id names the same flow (its tap,
    addresses, QP, packets, bytes, first and last packet) in the dataset's
    flows as in flows.parquet."""
    key = lambda r: (r["src_ip"], r["dst_ip"], r["dest_qp"], r["up_tap"], r["down_tap"])
    rows = {key(r): r for r in got["hops"]}
    expected = {key(r): r for r in want["hops"]}
    assert sorted(rows) == sorted(expected)
    for k, w in expected.items():
        g = rows[k]
        for c in ("frames_up", "matched", "missing_down", "down_only", "delay_min_ns",
                  "delay_max_ns", "clock_offset_ns", "first_ts_ns", "last_ts_ns", "adjacent"):
            assert g[c] == w[c], (k, c, g[c], w[c])
        if w["delay_min_ns"] is None:
            assert g["delay_p50_ns"] is None and g["delay_p99_ns"] is None, k
        else:
            tol = (w["delay_max_ns"] - w["delay_min_ns"]) / 200 + 1
            for c in ("delay_p50_ns", "delay_p99_ns"):
                assert abs(g[c] - w[c]) <= tol, (k, c, g[c], w[c])
        for side in ("up", "down"):
            host = g[f"{side}_tap"].split("/")[0]
            mine = flows[(host, g[f"{side}_run"], g[f"{side}_flow_id"])]
            theirs = want["flows"][w[f"{side}_flow_id"]]
            assert [mine[c] for c in FLOW] == [theirs[c] for c in FLOW], (k, side)
    clock = ("tap_a", "tap_b", "offset_ns", "estimate_ns", "uncertainty_ns", "source",
             "min_delay_ab_ns", "min_delay_ba_ns", "matched")
    pick = lambda rows: sorted(tuple(r[c] for c in clock) for r in rows)
    assert pick(got["clocks"]) == pick(want["clocks"])


def by_name(clocks, offset, other):
    """Tap pairs as docs/analysis.md gives them, node b − node a for a < b
    by host name (the rows go by tap number): (a, b, offset, other)."""
    rows = []
    for c in clocks:
        a, b = c["tap_a"].split("/")[0], c["tap_b"].split("/")[0]
        rows.append((a, b, c[offset], c[other]) if a < b else (b, a, -c[offset], c[other]))
    return sorted(rows)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_hops_sql_equals_hops_parquet_on_the_nccl_hosts(sql, nccl, engine):
    got = sql(engine, nccl["ds"], ["taps.sql", "hops.sql"], HOPS_QUERIES)
    assert len(got["hops"]) == 6
    compare_hops(got, nccl["want"], nccl["flows"])
    # The tap pairs' estimates of docs/analysis.md "Clock offsets".
    assert by_name(got["clocks"], "estimate_ns", "uncertainty_ns") == [
        ("node0", "node1", 49_500, 19_500), ("node0", "node2", -15_500, 22_500),
        ("node1", "node2", -58_500, 9_500)]


@pytest.mark.parametrize("engine", ENGINES)
def test_imposed_clock_offsets_in_the_sql_act_as_the_clock_offset_option(sql, nccl, engine):
    got = sql(engine, nccl["ds"], ["taps.sql", "hops.sql"], HOPS_QUERIES, imposed=nccl["offsets"])
    compare_hops(got, nccl["imposed"], nccl["flows"])
    # Every pair takes the difference of its taps' offsets (node0 has none).
    assert by_name(got["clocks"], "offset_ns", "source") == [
        ("node0", "node1", 49_500, "imposed"), ("node0", "node2", -9_000, "imposed"),
        ("node1", "node2", -58_500, "imposed")]
    assert nccl["imposed"]["hops"] != nccl["want"]["hops"], "the offsets change the delays"


# Spark takes most of a minute per fabric on a small machine: it runs the
# fabrics with the most hops and the trees, DuckDB every one.
SPARK_FABRICS = {"hops": ("lossy-spine", "ghost-drop-4taps"),
                 "trees": ("pfc-storm", "ghost-drop-4taps")}


def fabrics_for(engine, fabrics, what):
    return {n: f for n, f in fabrics.items() if engine == "duckdb" or n in SPARK_FABRICS[what]}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_hops_sql_equals_hops_parquet_on_the_multi_tap_samples(sql, fabrics, engine):
    hops = []
    for name, f in fabrics_for(engine, fabrics, "hops").items():
        got = sql(engine, f["ds"], ["taps.sql", "hops.sql"], HOPS_QUERIES)
        compare_hops(got, f["want"], f["flows"])
        hops += got["hops"]
    adjacent = sum(h["adjacent"] for h in hops)
    assert adjacent >= 12 and len(hops) - adjacent >= 4, "hops between neighbours and across a tap"


TREE_NODE = ("src_mac", "kind", "first_pause_ns", "paused_ns", "parent", "delay_ns")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_pfc_tree_sql_equals_summary_pfc_trees(sql, fabrics, engine):
    """sql/pfc_tree.sql's nodes against summary.json's pfc_trees: the same
    trees in the same order, each node's sender, tap, kind, first pause,
    paused time, parent and delay exactly (victims are not in the dataset's
    tables: docs/sql.md)."""
    steps = 0
    for name, f in fabrics_for(engine, fabrics, "trees").items():
        got = sql(engine, f["ds"], ["taps.sql", "pfc_tree.sql"],
                  {"nodes": "SELECT * FROM pfc_tree_nodes ORDER BY tree, node"})["nodes"]
        want = [(t, tree["priority"], n, node["iface"], *(node[c] for c in TREE_NODE))
                for t, tree in enumerate(f["want"]["trees"]) for n, node in enumerate(tree["nodes"])]
        assert [(r["tree"], r["priority"], r["node"], r["tap"], *(r[c] for c in TREE_NODE))
                for r in got] == want, name
        steps += sum(r["parent"] is not None for r in got)
    # pfc-storm: r0's NIC, then leaf0's port; ghost-drop: two trees of
    # three steps each.
    assert steps >= 7


def test_the_transport_column_counts_uet_beside_roce(rocescope, tmp_path):
    """A dataset of a UET sample and a RoCE one: packets' `transport` holds
    UET rows beside RoCE ones, as many as the runs' summaries count
    (`frames.uet`), and every flow names its transport."""
    ds = tmp_path / "ds"
    rocescope("analyze", SAMPLES / "uet-incast.pcapng", "--dataset", ds, "--host", "u")
    rocescope("analyze", SAMPLES / "healthy.pcapng", "--dataset", ds, "--host", "r")
    by = dict(duckdb.sql(
        f"SELECT transport, count(*) FROM '{ds}/packets/**/*.parquet' GROUP BY transport").fetchall())
    summaries = [json.loads(p.read_text()) for p in ds.glob("summaries/host=*/date=*/hour=*/summary-*.json")]
    assert len(summaries) == 2
    uet = sum(s["frames"].get("uet", 0) for s in summaries)
    assert uet > 0 and by.get("uet") == uet, (by, uet)
    assert by.get("roce", 0) >= sum(s["frames"]["roce"] for s in summaries) > 0, by
    flows = duckdb.sql(f"SELECT DISTINCT transport FROM '{ds}/flows/**/*.parquet'").fetchall()
    assert {t for (t,) in flows} <= {"roce", "uet"} and flows, flows
