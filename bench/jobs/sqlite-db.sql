-- SPDX-License-Identifier: GPL-2.0
--
-- The database of sqlite.sql, made by bench/run-jobs.sh on the test
-- filesystem before its first run there: a table of 100000 rows, an
-- integer primary key (the rowid) and a 4000-byte blob, in key order.
-- With 4 KiB database pages every row fills a leaf page of its own:
-- 100249 pages (392 MiB), the leaves in key order with the 248 interior
-- pages among them. The content depends only on these statements, so
-- every kernel reads the same file.

PRAGMA page_size = 4096;
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE t(id INTEGER PRIMARY KEY, payload BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
INSERT INTO t SELECT i, CAST(printf('%.4000c', char(33 + i % 90)) AS BLOB) FROM n;
