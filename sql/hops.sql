-- Cross-tap matching and the hop table over a --dataset (docs/sql.md),
-- the definitions of docs/analysis.md "Cross-tap matching" and "Clock
-- offsets": the same rows as hops.parquet, a tap being host/iface.
--
-- Input: a view `packets` over DIR/packets (every host's partitions) and
-- the view `taps` (sql/taps.sql). Output: the temporary views
-- hop_transmissions, hop_clock_offsets, hops.
-- Statements end with ';' at the end of a line; runs unchanged on DuckDB
-- and Spark SQL. The match window (2 ms, rocescope's default) is the
-- 2000000 in hop_sessions.

-- Imposed clock offsets, as `--clock-offset TAP=±DURATION` (docs/sql.md):
-- one row per tap ('host/iface', its clock minus the others' in ns), in
-- place of ('', 0), which stands for none.
CREATE OR REPLACE TEMPORARY VIEW imposed_clock_offsets AS
SELECT CAST(tap AS STRING) AS tap, CAST(offset_ns AS BIGINT) AS offset_ns
FROM (VALUES ('', 0)) AS t(tap, offset_ns)
WHERE tap <> '';

-- Every RoCE frame with a BTH, mirror copies left out: its key and tap.
CREATE OR REPLACE TEMPORARY VIEW hop_sightings AS
SELECT p.tap, t.tap_no, p.src_ip, p.dst_ip, p.dest_qp, p.psn, p.opcode,
       coalesce(p.icrc, -1) AS icrc, p.ts_ns, p.run, p.flow_id
FROM (SELECT concat(host, '/', iface) AS tap, * FROM packets) p
JOIN taps t ON t.tap = p.tap
WHERE p.kind = 'roce' AND p.dest_qp IS NOT NULL AND NOT p.mirror_copy;

-- Sessions: a sighting more than the window after the key's previous one.
CREATE OR REPLACE TEMPORARY VIEW hop_sessions AS
SELECT *,
       sum(new_session) OVER (PARTITION BY src_ip, dst_ip, dest_qp, psn, opcode, icrc
                              ORDER BY ts_ns, tap ROWS UNBOUNDED PRECEDING) AS session
FROM (
  SELECT *,
         CASE WHEN ts_ns - lag(ts_ns) OVER (PARTITION BY src_ip, dst_ip, dest_qp, psn, opcode, icrc
                                            ORDER BY ts_ns, tap) <= 2000000
              THEN 0 ELSE 1 END AS new_session
  FROM hop_sightings
) s;

-- Transmissions: a tap's n-th sighting belongs to the highest n reached so
-- far in the session; a session where a tap saw the key twice is ambiguous.
CREATE OR REPLACE TEMPORARY VIEW hop_numbered AS
SELECT *,
       max(occ) OVER (PARTITION BY src_ip, dst_ip, dest_qp, psn, opcode, icrc, session
                      ORDER BY ts_ns, tap ROWS UNBOUNDED PRECEDING) AS tx,
       max(occ) OVER (PARTITION BY src_ip, dst_ip, dest_qp, psn, opcode, icrc, session) > 1
         AS ambiguous
FROM (
  SELECT *,
         row_number() OVER (PARTITION BY src_ip, dst_ip, dest_qp, psn, opcode, icrc, session, tap
                            ORDER BY ts_ns) AS occ
  FROM hop_sessions
) n;

-- One row per transmission and tap that saw it (its first sighting there),
-- with the transmission's start (its first sighting anywhere).
CREATE OR REPLACE TEMPORARY VIEW hop_transmissions AS
SELECT src_ip, dst_ip, dest_qp, psn, opcode, icrc, session, tx, tap, tap_no,
       min(ts_ns) AS ts_ns, max(ambiguous) AS ambiguous,
       min(min(ts_ns)) OVER (PARTITION BY src_ip, dst_ip, dest_qp, psn, opcode, icrc, session, tx)
         AS start_ns
FROM hop_numbered
GROUP BY src_ip, dst_ip, dest_qp, psn, opcode, icrc, session, tx, tap, tap_no;

-- Each tap records from its first to its last frame.
CREATE OR REPLACE TEMPORARY VIEW hop_taps AS
SELECT tap, min(ts_ns) AS first_ns, max(ts_ns) AS last_ns FROM hop_sightings GROUP BY tap;

-- Transmissions seen at both taps a, b of a pair (a numbered lower, as
-- rocescope's tap pairs): signed delay t_b - t_a.
CREATE OR REPLACE TEMPORARY VIEW hop_pairs AS
SELECT a.src_ip, a.dst_ip, a.dest_qp, a.tap AS tap_a, b.tap AS tap_b,
       a.ts_ns AS ts_a, b.ts_ns AS ts_b, b.ts_ns - a.ts_ns AS d, a.ambiguous
FROM hop_transmissions a
JOIN hop_transmissions b
  ON a.src_ip = b.src_ip AND a.dst_ip = b.dst_ip AND a.dest_qp = b.dest_qp AND a.psn = b.psn
 AND a.opcode = b.opcode AND a.icrc = b.icrc AND a.session = b.session AND a.tx = b.tx
 AND a.tap_no < b.tap_no;

-- Each flow's flow_id at each tap (a tap with several runs: the run of
-- its first frame there), as hops.parquet's up_flow_id, down_flow_id.
CREATE OR REPLACE TEMPORARY VIEW hop_flow_ids AS
SELECT tap, src_ip, dst_ip, dest_qp, run, flow_id
FROM (
  SELECT tap, src_ip, dst_ip, dest_qp, run, flow_id,
         row_number() OVER (PARTITION BY tap, src_ip, dst_ip, dest_qp ORDER BY ts_ns, run) AS r
  FROM hop_sightings
) f
WHERE r = 1;

-- Per tap pair with a timed flow (summary.json's clock_offsets): the flows
-- from the lower to the higher address one way (x), the others the other
-- way (y); d_ab the shortest raw delay of the direction recorded later at
-- b, d_ba the other's; the symmetric-delay estimate, applied when a raw
-- delay is below 0; an imposed offset instead, when either tap has one.
CREATE OR REPLACE TEMPORARY VIEW hop_clock_offsets AS
WITH timed AS (
  SELECT tap_a, tap_b, src_ip > dst_ip AS y, count(*) AS matched,
         min(CASE WHEN NOT ambiguous THEN d END) AS lo,
         max(CASE WHEN NOT ambiguous THEN d END) AS hi
  FROM hop_pairs
  GROUP BY tap_a, tap_b, src_ip, dst_ip, dest_qp
  HAVING count(CASE WHEN NOT ambiguous THEN 1 END) > 0
),
dirs AS (
  SELECT tap_a, tap_b, sum(matched) AS matched,
         min(CASE WHEN NOT y THEN lo END) AS x_min, max(CASE WHEN NOT y THEN hi END) AS x_max,
         min(CASE WHEN y THEN lo END) AS y_min, max(CASE WHEN y THEN hi END) AS y_max
  FROM timed
  GROUP BY tap_a, tap_b
),
sides AS (
  SELECT tap_a, tap_b, matched,
         CASE WHEN x_min IS NOT NULL AND y_min IS NOT NULL
              THEN CASE WHEN x_min >= y_min THEN x_min ELSE y_min END
              WHEN coalesce(x_min, y_min) >= 0 THEN coalesce(x_min, y_min) END AS d_ab,
         CASE WHEN x_min IS NOT NULL AND y_min IS NOT NULL
              THEN -CASE WHEN x_min >= y_min THEN y_max ELSE x_max END
              WHEN coalesce(x_min, y_min) < 0 THEN -coalesce(x_max, y_max) END AS d_ba
  FROM dirs
),
estimates AS (
  SELECT *,
         CAST(floor((d_ab - d_ba) / 2.0) AS BIGINT) AS estimate_ns,
         CAST(floor((d_ab + d_ba) / 2.0) AS BIGINT) AS uncertainty_ns
  FROM sides
)
SELECT e.tap_a, e.tap_b,
       CASE WHEN ia.tap IS NOT NULL OR ib.tap IS NOT NULL
            THEN coalesce(ib.offset_ns, 0) - coalesce(ia.offset_ns, 0)
            WHEN e.d_ab < 0 OR e.d_ba < 0 THEN coalesce(e.estimate_ns, 0)
            ELSE 0 END AS offset_ns,
       e.estimate_ns, e.uncertainty_ns,
       CASE WHEN ia.tap IS NOT NULL OR ib.tap IS NOT NULL THEN 'imposed'
            WHEN e.estimate_ns IS NULL THEN 'assumed'
            WHEN e.d_ab < 0 OR e.d_ba < 0 THEN 'estimated'
            ELSE 'agree' END AS source,
       e.d_ab AS min_delay_ab_ns, e.d_ba AS min_delay_ba_ns, e.matched
FROM estimates e
LEFT JOIN imposed_clock_offsets ia ON ia.tap = e.tap_a
LEFT JOIN imposed_clock_offsets ib ON ib.tap = e.tap_b;

-- Per flow and pair: the way its frames went (the median corrected delay
-- at least 0: a upstream; by raw order when nothing was timed).
CREATE OR REPLACE TEMPORARY VIEW hop_ways AS
SELECT p.src_ip, p.dst_ip, p.dest_qp, p.tap_a, p.tap_b, coalesce(o.offset_ns, 0) AS offset_ns,
       CASE WHEN count(CASE WHEN NOT p.ambiguous THEN 1 END) > 0
            THEN percentile_disc(0.5) WITHIN GROUP (ORDER BY CASE WHEN NOT p.ambiguous THEN p.d END)
                 - coalesce(o.offset_ns, 0) >= 0
            ELSE 2 * sum(CASE WHEN p.ts_a <= p.ts_b THEN 1 ELSE 0 END) >= count(*) END AS forward
FROM hop_pairs p LEFT JOIN hop_clock_offsets o ON o.tap_a = p.tap_a AND o.tap_b = p.tap_b
GROUP BY p.src_ip, p.dst_ip, p.dest_qp, p.tap_a, p.tap_b, o.offset_ns;

CREATE OR REPLACE TEMPORARY VIEW hop_oriented AS
SELECT src_ip, dst_ip, dest_qp,
       CASE WHEN forward THEN tap_a ELSE tap_b END AS up_tap,
       CASE WHEN forward THEN tap_b ELSE tap_a END AS down_tap,
       CASE WHEN forward THEN offset_ns ELSE -offset_ns END AS clock_offset_ns
FROM hop_ways;

-- The hops' counts over the transmissions while both taps recorded, delays
-- over the unambiguous matched ones.
CREATE OR REPLACE TEMPORARY VIEW hop_counts AS
WITH per_tx AS (
  SELECT h.src_ip, h.dst_ip, h.dest_qp, h.up_tap, h.down_tap, h.clock_offset_ns,
         t.psn, t.opcode, t.icrc, t.session, t.tx,
         max(CASE WHEN t.tap = h.up_tap THEN t.ts_ns END) AS up_ns,
         max(CASE WHEN t.tap = h.down_tap THEN t.ts_ns END) AS down_ns,
         max(t.start_ns) AS start_ns, max(t.ambiguous) AS ambiguous
  FROM hop_oriented h
  JOIN hop_transmissions t
    ON t.src_ip = h.src_ip AND t.dst_ip = h.dst_ip AND t.dest_qp = h.dest_qp
   AND t.tap IN (h.up_tap, h.down_tap)
  GROUP BY h.src_ip, h.dst_ip, h.dest_qp, h.up_tap, h.down_tap, h.clock_offset_ns,
           t.psn, t.opcode, t.icrc, t.session, t.tx
),
live AS (
  SELECT x.*,
         (x.up_ns IS NOT NULL AND x.down_ns IS NOT NULL)
         OR (u.first_ns <= x.start_ns AND x.start_ns <= u.last_ns
             AND d.first_ns <= x.start_ns AND x.start_ns <= d.last_ns) AS counted,
         CASE WHEN x.up_ns IS NOT NULL AND x.down_ns IS NOT NULL AND NOT x.ambiguous
              THEN x.down_ns - x.up_ns - x.clock_offset_ns END AS delay_ns
  FROM per_tx x
  JOIN hop_taps u ON u.tap = x.up_tap
  JOIN hop_taps d ON d.tap = x.down_tap
)
SELECT src_ip, dst_ip, dest_qp, up_tap, down_tap,
       min(CASE WHEN up_ns IS NOT NULL AND down_ns IS NOT NULL THEN up_ns END) AS first_ts_ns,
       max(CASE WHEN up_ns IS NOT NULL AND down_ns IS NOT NULL THEN up_ns END) AS last_ts_ns,
       sum(CASE WHEN counted AND up_ns IS NOT NULL THEN 1 ELSE 0 END) AS frames_up,
       sum(CASE WHEN up_ns IS NOT NULL AND down_ns IS NOT NULL THEN 1 ELSE 0 END) AS matched,
       sum(CASE WHEN counted AND up_ns IS NOT NULL AND down_ns IS NULL THEN 1 ELSE 0 END)
         AS missing_down,
       sum(CASE WHEN counted AND up_ns IS NULL AND down_ns IS NOT NULL THEN 1 ELSE 0 END)
         AS down_only,
       min(delay_ns) AS delay_min_ns,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY delay_ns) AS delay_p50_ns,
       percentile_disc(0.99) WITHIN GROUP (ORDER BY delay_ns) AS delay_p99_ns,
       max(delay_ns) AS delay_max_ns,
       max(clock_offset_ns) AS clock_offset_ns
FROM live
GROUP BY src_ip, dst_ip, dest_qp, up_tap, down_tap;

-- The hops: hops.parquet's columns, with each tap's flow id (and its run)
-- and `adjacent`: a tap's place on a flow's path is how many of its taps
-- come before it (the hops it is downstream of).
CREATE OR REPLACE TEMPORARY VIEW hops AS
WITH depth AS (
  SELECT src_ip, dst_ip, dest_qp, down_tap AS tap, count(*) AS before
  FROM hop_counts
  GROUP BY src_ip, dst_ip, dest_qp, down_tap
)
SELECT h.src_ip, h.dst_ip, h.dest_qp, h.up_tap, h.down_tap,
       fu.flow_id AS up_flow_id, fd.flow_id AS down_flow_id, fu.run AS up_run, fd.run AS down_run,
       h.first_ts_ns, h.last_ts_ns, h.frames_up, h.matched, h.missing_down, h.down_only,
       h.delay_min_ns, h.delay_p50_ns, h.delay_p99_ns, h.delay_max_ns, h.clock_offset_ns,
       coalesce(dd.before, 0) = coalesce(du.before, 0) + 1 AS adjacent
FROM hop_counts h
LEFT JOIN hop_flow_ids fu
  ON fu.tap = h.up_tap AND fu.src_ip = h.src_ip AND fu.dst_ip = h.dst_ip AND fu.dest_qp = h.dest_qp
LEFT JOIN hop_flow_ids fd
  ON fd.tap = h.down_tap AND fd.src_ip = h.src_ip AND fd.dst_ip = h.dst_ip AND fd.dest_qp = h.dest_qp
LEFT JOIN depth du
  ON du.tap = h.up_tap AND du.src_ip = h.src_ip AND du.dst_ip = h.dst_ip AND du.dest_qp = h.dest_qp
LEFT JOIN depth dd
  ON dd.tap = h.down_tap AND dd.src_ip = h.src_ip AND dd.dst_ip = h.dst_ip AND dd.dest_qp = h.dest_qp;
