-- Cross-tap matching and the hop table over a --dataset (docs/sql.md),
-- the definitions of docs/analysis.md "Cross-tap matching" and "Clock
-- offsets": the same rows as hops.parquet, a tap being host/iface.
--
-- Input: a view `packets` over DIR/packets (every host's partitions).
-- Output: the temporary views hop_transmissions, hop_clock_offsets, hops.
-- Statements end with ';' at the end of a line; runs unchanged on DuckDB
-- and Spark SQL. The match window (2 ms, rocescope's default) is the
-- 2000000 in hop_sessions.

-- Every RoCE frame with a BTH, mirror copies left out: its key and tap.
CREATE OR REPLACE TEMPORARY VIEW hop_sightings AS
SELECT concat(host, '/', iface) AS tap, src_ip, dst_ip, dest_qp, psn, opcode,
       coalesce(icrc, -1) AS icrc, ts_ns
FROM packets
WHERE kind = 'roce' AND dest_qp IS NOT NULL AND NOT mirror_copy;

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
SELECT src_ip, dst_ip, dest_qp, psn, opcode, icrc, session, tx, tap,
       min(ts_ns) AS ts_ns, max(ambiguous) AS ambiguous,
       min(min(ts_ns)) OVER (PARTITION BY src_ip, dst_ip, dest_qp, psn, opcode, icrc, session, tx)
         AS start_ns
FROM hop_numbered
GROUP BY src_ip, dst_ip, dest_qp, psn, opcode, icrc, session, tx, tap;

-- Each tap records from its first to its last frame.
CREATE OR REPLACE TEMPORARY VIEW hop_taps AS
SELECT tap, min(ts_ns) AS first_ns, max(ts_ns) AS last_ns FROM hop_sightings GROUP BY tap;

-- Transmissions seen at both taps a < b of a pair: signed delay t_b - t_a.
CREATE OR REPLACE TEMPORARY VIEW hop_pairs AS
SELECT a.src_ip, a.dst_ip, a.dest_qp, a.tap AS tap_a, b.tap AS tap_b,
       a.ts_ns AS ts_a, b.ts_ns AS ts_b, b.ts_ns - a.ts_ns AS d, a.ambiguous
FROM hop_transmissions a
JOIN hop_transmissions b
  ON a.src_ip = b.src_ip AND a.dst_ip = b.dst_ip AND a.dest_qp = b.dest_qp AND a.psn = b.psn
 AND a.opcode = b.opcode AND a.icrc = b.icrc AND a.session = b.session AND a.tx = b.tx
 AND a.tap < b.tap;

-- The symmetric-delay estimate per tap pair: flows from the lower to the
-- higher address one way, the others the other way.
CREATE OR REPLACE TEMPORARY VIEW hop_clock_offsets AS
SELECT tap_a, tap_b,
       CASE WHEN lo_min >= hi_min THEN lo_min ELSE hi_min END AS d_ab,
       -CASE WHEN lo_min >= hi_min THEN hi_max ELSE lo_max END AS d_ba,
       CAST(floor(((CASE WHEN lo_min >= hi_min THEN lo_min ELSE hi_min END)
                 + (CASE WHEN lo_min >= hi_min THEN hi_max ELSE lo_max END)) / 2.0) AS BIGINT)
         AS estimate_ns,
       CAST(floor(((CASE WHEN lo_min >= hi_min THEN lo_min ELSE hi_min END)
                 - (CASE WHEN lo_min >= hi_min THEN hi_max ELSE lo_max END)) / 2.0) AS BIGINT)
         AS uncertainty_ns
FROM (
  SELECT tap_a, tap_b,
         min(CASE WHEN src_ip < dst_ip THEN d END) AS lo_min,
         max(CASE WHEN src_ip < dst_ip THEN d END) AS lo_max,
         min(CASE WHEN src_ip > dst_ip THEN d END) AS hi_min,
         max(CASE WHEN src_ip > dst_ip THEN d END) AS hi_max
  FROM hop_pairs WHERE NOT ambiguous
  GROUP BY tap_a, tap_b
) o
WHERE lo_min IS NOT NULL AND hi_min IS NOT NULL;

-- Applied only when a raw delay is below 0 (else the clocks agree).
CREATE OR REPLACE TEMPORARY VIEW hop_offsets AS
SELECT p.tap_a, p.tap_b,
       coalesce(CASE WHEN c.d_ab < 0 OR c.d_ba < 0 THEN c.estimate_ns END, 0) AS offset_ns
FROM (SELECT DISTINCT tap_a, tap_b FROM hop_pairs) p
LEFT JOIN hop_clock_offsets c ON c.tap_a = p.tap_a AND c.tap_b = p.tap_b;

-- Per flow and pair: the way its frames went (the median corrected delay
-- at least 0: a upstream; by raw order when nothing was timed).
CREATE OR REPLACE TEMPORARY VIEW hop_ways AS
SELECT p.src_ip, p.dst_ip, p.dest_qp, p.tap_a, p.tap_b, o.offset_ns,
       CASE WHEN count(CASE WHEN NOT p.ambiguous THEN 1 END) > 0
            THEN percentile_disc(0.5) WITHIN GROUP (ORDER BY CASE WHEN NOT p.ambiguous THEN p.d END)
                 - o.offset_ns >= 0
            ELSE 2 * sum(CASE WHEN p.ts_a <= p.ts_b THEN 1 ELSE 0 END) >= count(*) END AS forward
FROM hop_pairs p JOIN hop_offsets o ON o.tap_a = p.tap_a AND o.tap_b = p.tap_b
GROUP BY p.src_ip, p.dst_ip, p.dest_qp, p.tap_a, p.tap_b, o.offset_ns;

CREATE OR REPLACE TEMPORARY VIEW hop_oriented AS
SELECT src_ip, dst_ip, dest_qp,
       CASE WHEN forward THEN tap_a ELSE tap_b END AS up_tap,
       CASE WHEN forward THEN tap_b ELSE tap_a END AS down_tap,
       CASE WHEN forward THEN offset_ns ELSE -offset_ns END AS clock_offset_ns
FROM hop_ways;

-- The hops: counts over the transmissions while both taps recorded, delays
-- over the unambiguous matched ones.
CREATE OR REPLACE TEMPORARY VIEW hops AS
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
