"""The notebooks and the HTML report, end to end.

Sample output is generated here: `rocescope synth ghost-drop` and `incast`
(small), `analyze --out` and `--dataset` (two hosts, one with rotation),
`report --html`. The binary is $ROCESCOPE_BIN, else built with cargo
(tests/conftest.py). The dataset itself is checked in tests/test_dataset.py.

Run: python3 -m pytest tests/test_notebooks.py
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import polars as pl
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
GHOST_FRAMES = 8000


@pytest.fixture(scope="session")
def sample(rocescope):
    """Captures, an --out directory and a two-host dataset."""
    run = rocescope
    tmp = Path(tempfile.mkdtemp(prefix="rocescope-nb-"))
    ghost, incast = tmp / "ghost.pcapng", tmp / "incast.pcapng"
    # Enough of the ghost-drop fabric for its first receiver stalls to fire
    # NIC timeouts (the first few thousand frames are the healthy start).
    run("synth", "ghost-drop", "--out", ghost, "--packets", GHOST_FRAMES, "--snaplen", 128)
    run("synth", "incast", "--out", incast, "--packets", 3000)
    out, ds = tmp / "out", tmp / "dataset"
    run("analyze", ghost, "--out", out, "--dataset", ds, "--host", "tap-a")
    # The second host rotates files every 200 µs of capture time.
    run("analyze", incast, "--dataset", ds, "--host", "tap-b", "--rotate", "200us")
    yield {"tmp": tmp, "ghost": ghost, "incast": incast, "out": out, "dataset": ds}
    shutil.rmtree(tmp, ignore_errors=True)


def execute(name: str, env: dict) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits the environment
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def outputs_by_tag(nb):
    tagged = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            assert out.output_type != "error", f"cell raised: {out.get('ename')}: {out.get('evalue')}"
            assert not (out.output_type == "stream" and out.name == "stderr"
                        and "Traceback" in out.text), out.text
        for tag in cell.metadata.get("tags", []):
            tagged[tag] = cell.outputs
    return tagged


def mimetypes(outputs):
    return {m for o in outputs for m in o.get("data", {})}


def test_notebooks_have_a_parameters_cell():
    for name in ("ghost_drops.ipynb", "fabric.ipynb", "counters.ipynb"):
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(nb)
        params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, name
        # Committed clean: no outputs to review in diffs.
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), name


def test_ghost_drops_notebook_draws_every_figure(sample):
    nb = execute("ghost_drops.ipynb", {"ROCESCOPE_OUT": str(sample["out"])})
    tagged = outputs_by_tag(nb)
    for fig in ("fig-psn", "fig-timeline", "fig-pause"):
        assert "image/png" in mimetypes(tagged[fig]), f"{fig}: no figure"
    assert "text/html" in mimetypes(tagged["findings"])
    findings = "".join(o["data"]["text/plain"] for o in tagged["findings"] if "data" in o)
    assert "ghost-retransmissions" in findings
    # The table keeps summary.json's ranking (severity, then impact).
    summary = json.loads((sample["out"] / "summary.json").read_text())
    at = [findings.index(f["id"]) for f in summary["findings"]]
    assert at == sorted(at) and "impact" in findings, findings
    assert "text/html" in mimetypes(tagged["flows"])


def test_ghost_drops_notebook_shows_the_transport_of_flows_and_frames(sample, tmp_path, rocescope):
    """The flows table's transport column, and UET frames counted beside
    RoCE's when a run has them (the ghost sample with the uet-incast one)."""
    out = tmp_path / "mixed"
    rocescope("analyze", sample["ghost"], ROOT / "pcaps" / "uet-incast.pcapng", "--out", out)
    frames = json.loads((out / "summary.json").read_text())["frames"]
    assert frames["uet"] > 0
    nb = execute("ghost_drops.ipynb", {"ROCESCOPE_OUT": str(out)})
    tagged = outputs_by_tag(nb)
    html = "".join(o["data"]["text/html"] for o in tagged["flows"] if "data" in o)
    rows = [re.findall(r"<t[hd]>(.*?)</t[hd]>", r) for r in re.findall(r"<tr>(.*?)</tr>", html)]
    at = rows[0].index("transport")
    assert rows[0][:2] == ["flow_id", "transport"], rows[0]
    # polars elides the middle of a long table with a row of ellipses.
    shown = {r[at] for r in rows[2:]} - {"&hellip;", "…"}
    assert shown and shown <= {'&quot;roce&quot;', '&quot;uet&quot;', "roce", "uet"}, rows[2:]
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"{frames['roce']} RoCE frames, {frames['uet']} UET frames" in printed, printed
    # RoCE alone: no UET count.
    nb = execute("ghost_drops.ipynb", {"ROCESCOPE_OUT": str(sample["out"])})
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "RoCE frames" in printed and "UET" not in printed, printed


def test_ghost_drops_notebook_honours_the_runs_dscp_map(sample, tmp_path, rocescope):
    # The sample's flows are untagged DSCP 26: priority 3 by default, 5 here.
    out = tmp_path / "mapped"
    rocescope("analyze", sample["ghost"], "--out", out, "--dscp-map", "26=5")
    assert json.loads((out / "summary.json").read_text())["dscp_to_priority"][26] == 5
    nb = execute("ghost_drops.ipynb", {"ROCESCOPE_OUT": str(out)})
    tagged = outputs_by_tag(nb)
    html = "".join(o["data"]["text/html"] for o in tagged["flows"] if "data" in o)
    assert pl.read_parquet(out / "flows.parquet")["dscp"].drop_nulls().unique().to_list() == [26]
    # The flows table's priority column (header row, dtype row, then data rows).
    rows = [re.findall(r"<t[hd]>(.*?)</t[hd]>", r) for r in re.findall(r"<tr>(.*?)</tr>", html)]
    at = rows[0].index("priority")
    assert {r[at] for r in rows[2:]} == {"5"}, rows
    # Without a map, summary.json says so (null) and DSCP / 8 applies.
    assert json.loads((sample["out"] / "summary.json").read_text())["dscp_to_priority"] is None


def test_counters_notebook_draws_counters_on_the_capture_timeline(sample, tmp_path, rocescope):
    run = rocescope
    # The sample's ghost-drop run again (synth is deterministic), with the
    # counters its NICs would have shown, analysed against them.
    cap, counters, out = tmp_path / "g.pcapng", tmp_path / "counters.parquet", tmp_path / "out"
    run("synth", "ghost-drop", "--out", cap, "--packets", GHOST_FRAMES, "--snaplen", 128,
        "--counters", counters)
    run("analyze", cap, "--out", out, "--counters", counters)
    nb = execute("counters.ipynb", {"ROCESCOPE_OUT": str(out), "ROCESCOPE_COUNTERS": str(counters)})
    tagged = outputs_by_tag(nb)
    assert "image/png" in mimetypes(tagged["fig-counters"]), "fig-counters: no figure"
    table = "".join(o["data"]["text/plain"] for o in tagged["counters-table"] if "data" in o)
    assert "local_ack_timeout_err" in table and "rx_prio3_pause_duration" in table
    rec = "".join(o["data"]["text/plain"] for o in tagged["reconciliation"] if "data" in o)
    assert "pfc_paused_us" in rec and "agree" in rec


def test_fabric_notebook_queries_the_dataset(sample):
    nb = execute("fabric.ipynb", {"ROCESCOPE_DATASET": str(sample["dataset"])})
    tagged = outputs_by_tag(nb)
    for fig in ("fig-ports", "fig-victims", "fig-qps"):
        assert "image/png" in mimetypes(tagged[fig]), f"{fig}: no figure"
        assert "text/html" in mimetypes(tagged[fig]), f"{fig}: no table"
    hosts = "".join(o["data"]["text/plain"] for o in tagged["hosts"] if "data" in o)
    assert "tap-a" in hosts and "tap-b" in hosts
    assert "roce_packets" in hosts and "uet_packets" in hosts, hosts
    qps = "".join(o["data"]["text/plain"] for o in tagged["fig-qps"] if "data" in o)
    assert "transport" in qps and "roce" in qps, qps


def test_html_report_is_self_contained_and_renders(sample, tmp_path, rocescope):
    html = tmp_path / "report.html"
    rocescope("report", sample["ghost"], "--html", html)
    text = html.read_text()
    assert text.count("<svg") >= 4, "PSN, throughput and pause-fraction plots"
    assert "http" not in text.lower(), "the page must not reference any URL"
    for fetch in ("<script", "<link", "<img", "<iframe", "@import", "url("):
        assert fetch not in text.lower(), fetch
    assert "ghost-retransmissions" in text and "<table" in text

    shot = tmp_path / "shot.png"
    screenshot(html, shot, "1200,3200")
    from PIL import Image  # Pillow comes with matplotlib

    img = Image.open(shot).convert("RGB")
    w, h = img.size
    px = img.load()

    def near(c, ref, tol=40):
        return all(abs(a - b) <= tol for a, b in zip(c, ref))

    counts = {"blue": 0, "red": 0, "pause": 0, "ink": 0}
    rows_with_plot = set()
    for y in range(0, h, 2):
        for x in range(0, w, 2):
            c = px[x, y]
            if near(c, (0x1f, 0x77, 0xb4)):
                counts["blue"] += 1
                rows_with_plot.add(y // 100)
            elif near(c, (0xd6, 0x27, 0x28), 30):
                counts["red"] += 1
                rows_with_plot.add(y // 100)
            elif near(c, (0xff, 0xe9, 0xbf), 12):  # the pause shading (orange at 25 %)
                counts["pause"] += 1
                rows_with_plot.add(y // 100)
            if sum(c) < 600:
                counts["ink"] += 1
    # Sampled every other pixel both ways: a quarter of the real counts.
    assert counts["blue"] > 200, counts   # first transmissions, throughput lines
    assert counts["red"] > 50, counts     # retransmissions
    assert counts["pause"] > 5000, counts  # shaded pauses
    assert counts["ink"] > 0.02 * (w // 2) * (h // 2), counts  # not a blank page
    assert len(rows_with_plot) >= 10, sorted(rows_with_plot)  # plots down the page, not one blob


def screenshot(html: Path, shot: Path, size: str = "1200,4000"):
    """Headless Chromium's picture of the page (nothing fetched: no network)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is installed by scripts/setup.sh --test"
    profile = tempfile.mkdtemp(prefix="rocescope-chromium-")
    try:
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", f"--screenshot={shot}", f"--window-size={size}",
             html.as_uri()],
            check=True, capture_output=True, timeout=120,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.parametrize("name,duration_ms", [("ghost-drop", 1.0), ("pfc-storm", 250.0)])
def test_html_report_reads_well_at_two_capture_lengths(name, duration_ms, tmp_path, rocescope):
    """The bundled 1 ms and 250 ms samples (docs/report.md): legible axes,
    one section per finding with its plot, PSN plots over the flow's whole
    life, throughput bins chosen from the capture's length, the flow table
    scrolling inside the page; and the page renders."""
    run = rocescope
    cap = ROOT / "pcaps" / f"{name}.pcapng"
    html, out = tmp_path / "report.html", tmp_path / "out"
    run("report", cap, "--link-speed", "400G", "--html", html)
    run("analyze", cap, "--link-speed", "400G", "--out", out)
    text = html.read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert abs(summary["duration_ns"] / 1e6 - duration_ms) < 0.01 * duration_ms

    # Legible axes: every label of every plot at least 15 px.
    sizes = [float(s) for s in re.findall(r'<text[^>]*font-size="([0-9.]+)"', text)]
    assert len(sizes) > 20, sizes
    assert min(sizes) >= 15, sorted(set(sizes))
    for label in ("ms since capture start", "PSN − 0"):
        assert label in text, label

    # One section per finding (the first five of an id; the rest counted),
    # each with a plot.
    shown, per_id = [], {}
    for f in summary["findings"]:
        per_id[f["id"]] = per_id.get(f["id"], 0) + 1
        if per_id[f["id"]] <= 5:
            shown.append(f)
    sections = re.findall(r'<section class="finding (\w+)" id="finding-\d+">(.*?)</section>', text, re.S)
    assert [s for s, _ in sections] == [f["severity"] for f in shown]
    for id, n in per_id.items():
        if n > 5:
            assert f"and {n - 5} more {id} findings" in text, id
    for (_, body), f in zip(sections, shown):
        drawn = "<figure" in body and "<svg" in body
        assert f["id"] in body and (drawn or "is drawn above" in body), f["id"]

    # PSN plots span the flow's whole life, as flows.parquet has it.
    flows = {r["flow_id"]: r for r in pl.read_parquet(out / "flows.parquet").to_dicts()}
    psn = re.findall(r'<figure class="plot psn" data-flow="(\d+)" data-from-ns="(\d+)" data-to-ns="(\d+)">', text)
    assert psn, "a PSN plot"
    for flow, lo, hi in psn:
        f = flows[int(flow)]
        assert int(lo) <= f["first_ts_ns"] and int(hi) >= f["last_ts_ns"], (f, lo, hi)
        assert f["last_ts_ns"] > f["first_ts_ns"]

    # Throughput bins from the capture's length: about 200 of them, never
    # finer than the 100 µs timeline.
    bins = [int(b) for b in re.findall(r'<figure class="plot throughput" data-bin-ns="(\d+)"', text)]
    assert bins
    for b in bins:
        assert b >= 100_000
        assert summary["duration_ns"] / b <= 400
        if duration_ms > 100:
            assert summary["duration_ns"] / b >= 100, b

    # The flow table scrolls inside its box instead of widening the page.
    assert re.search(r"\.scroll\{overflow:auto;", text)
    assert re.search(r'<div class=scroll id=flow-table><table class=flows>', text)

    # The page renders: not blank, plots down the page, pauses shaded.
    shot = tmp_path / "shot.png"
    screenshot(html, shot)
    from PIL import Image  # Pillow comes with matplotlib

    img = Image.open(shot).convert("RGB")
    w, h = img.size
    px = img.load()
    ink = rows = shaded = 0
    for y in range(0, h, 4):
        row_ink = 0
        for x in range(0, w, 4):
            c = px[x, y]
            if sum(c) < 600:
                row_ink += 1
            # The pause shading: orange at 25 % (PSN plots) or 20 % (throughput).
            if any(all(abs(a - b) <= 8 for a, b in zip(c, tint))
                   for tint in ((0xff, 0xe9, 0xbf), (0xff, 0xed, 0xcc))):
                shaded += 1
        ink += row_ink
        rows += row_ink > 0
    assert ink > 0.01 * (w // 4) * (h // 4), ink
    assert rows > 0.15 * (h // 4), rows  # text and plots down the page
    assert shaded > 200, shaded
