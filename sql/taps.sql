-- The dataset's taps (docs/sql.md), for sql/hops.sql and sql/pfc_tree.sql:
-- a tap is host/iface, numbered as rocescope numbers the interfaces of a
-- run, by its first record (ties by name).
--
-- Input: a view `packets` over DIR/packets. Output: the temporary view
-- taps. Statements end with ';' at the end of a line; runs unchanged on
-- DuckDB and Spark SQL.
CREATE OR REPLACE TEMPORARY VIEW taps AS
SELECT tap, first_ns, row_number() OVER (ORDER BY first_ns, tap) - 1 AS tap_no
FROM (SELECT concat(host, '/', iface) AS tap, min(ts_ns) AS first_ns FROM packets GROUP BY host, iface) t;
