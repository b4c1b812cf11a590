-- The PFC congestion tree over a --dataset (docs/sql.md), the definition
-- of docs/analysis.md "Congestion tree": summary.json's pfc_trees as rows,
-- a tap being host/iface.
--
-- Input: views `pfc` over DIR/pfc and `packets` over DIR/packets (every
-- host's partitions), and the view `taps` (sql/taps.sql). Output: the
-- temporary views pfc_tree_pauses and pfc_tree_nodes. Statements end with ';' at the end of a line; runs
-- unchanged on DuckDB and Spark SQL.

-- Every pause interval in onset order per priority (ties by tap number,
-- then sender), and until when it keeps an episode going: a pause counts
-- as running for as long again after it ended.
CREATE OR REPLACE TEMPORARY VIEW pfc_tree_onsets AS
SELECT p.tap, t.tap_no, p.src_mac, p.priority, p.start_ns, p.end_ns,
       CASE WHEN p.end_ns > p.start_ns THEN p.end_ns - p.start_ns ELSE 0 END AS paused_ns,
       p.end_ns + (p.end_ns - p.start_ns) AS running_until_ns,
       row_number() OVER (PARTITION BY p.priority ORDER BY p.start_ns, t.tap_no, p.src_mac) AS ord
FROM (SELECT concat(host, '/', iface) AS tap, src_mac, priority, start_ns, end_ns FROM pfc) p
JOIN taps t ON t.tap = p.tap;

-- Trees: a pause that begins while no earlier pause of its priority is
-- running starts one (its sender the root); every other pause belongs to
-- the tree of the pauses running then (one tree at a time per priority).
-- A node is one sender at one tap in a tree, numbered by its first pause.
CREATE OR REPLACE TEMPORARY VIEW pfc_tree_pauses AS
WITH flagged AS (
  SELECT *,
         CASE WHEN max(running_until_ns) OVER (PARTITION BY priority ORDER BY ord
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                   >= start_ns
              THEN 0 ELSE 1 END AS starts_tree
  FROM pfc_tree_onsets
),
episodes AS (
  SELECT *,
         sum(starts_tree) OVER (PARTITION BY priority ORDER BY ord ROWS UNBOUNDED PRECEDING)
           AS episode
  FROM flagged
),
trees AS (
  SELECT priority, episode,
         row_number() OVER (ORDER BY start_ns, tap_no, priority, src_mac) - 1 AS tree
  FROM episodes
  WHERE starts_tree = 1
),
nodes AS (
  SELECT priority, episode, tap, src_mac, min(ord) AS first_ord
  FROM episodes
  GROUP BY priority, episode, tap, src_mac
),
numbered AS (
  SELECT *, row_number() OVER (PARTITION BY priority, episode ORDER BY first_ord) - 1 AS node
  FROM nodes
)
SELECT t.tree, e.priority, n.node, e.tap, e.src_mac, e.start_ns, e.end_ns, e.paused_ns,
       e.running_until_ns, e.ord, e.ord = n.first_ord AS first_of_node
FROM episodes e
JOIN trees t ON t.priority = e.priority AND t.episode = e.episode
JOIN numbered n
  ON n.priority = e.priority AND n.episode = e.episode AND n.tap = e.tap AND n.src_mac = e.src_mac;

-- One row per tree and node (summary.json's pfc_trees[tree].nodes[node]):
-- a step's parent is the pause running when it began that began last
-- (then the later node), its delay from that node's first pause; the root
-- is a host when its MAC sent RoCE frames (a flow's first frame) or CNPs.
CREATE OR REPLACE TEMPORARY VIEW pfc_tree_nodes AS
WITH heads AS (
  SELECT * FROM pfc_tree_pauses WHERE first_of_node
),
causes AS (
  SELECT h.tree, h.node, q.node AS parent,
         row_number() OVER (PARTITION BY h.tree, h.node ORDER BY q.start_ns DESC, q.node DESC) AS r
  FROM heads h
  JOIN pfc_tree_pauses q
    ON q.tree = h.tree AND q.ord < h.ord AND q.running_until_ns >= h.start_ns
  WHERE h.node > 0
),
paused AS (
  SELECT tree, node, sum(paused_ns) AS paused_ns FROM pfc_tree_pauses GROUP BY tree, node
),
hosts AS (
  SELECT src_mac FROM (
    SELECT src_mac, row_number() OVER (PARTITION BY host, run, flow_id ORDER BY ts_ns, frame) AS r
    FROM packets
    WHERE kind = 'roce' AND NOT mirror_copy AND flow_id IS NOT NULL
  ) f
  WHERE r = 1
  UNION
  SELECT src_mac FROM packets WHERE kind = 'cnp' AND NOT mirror_copy
)
SELECT h.tree, h.priority, h.node, h.tap, h.src_mac,
       CASE WHEN h.node = 0 AND m.src_mac IS NOT NULL THEN 'host' ELSE 'switch' END AS kind,
       h.start_ns AS first_pause_ns, s.paused_ns, c.parent, h.start_ns - ph.start_ns AS delay_ns
FROM heads h
JOIN paused s ON s.tree = h.tree AND s.node = h.node
LEFT JOIN causes c ON c.tree = h.tree AND c.node = h.node AND c.r = 1
LEFT JOIN heads ph ON ph.tree = c.tree AND ph.node = c.parent
LEFT JOIN hosts m ON m.src_mac = h.src_mac;
