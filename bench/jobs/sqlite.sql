-- SPDX-License-Identifier: GPL-2.0
--
-- A real client: Debian's sqlite3 reads the database of sqlite-db.sql
-- (392 MiB, one 4000-byte row per 4 KiB page) through one mapping of the
-- whole file (mmap_size), from a cold page cache, in one process and so
-- through one open file and its mmap_miss:
--
--   lookups  300 point lookups by primary key (rowid), keys from an LCG:
--            each descends the b-tree to a leaf at a random place; since
--            7.2, past MMAP_LOTSAMISS (100 misses) a miss reads only its
--            own page.
--   scan     then a full scan in key order, which touches every leaf
--            page in file order: it must get readahead again (a major
--            fault only where it comes out of a range the lookups left
--            cached, a few hundred for 100000 pages, and the table read
--            once). A kernel whose mmap_miss sticks after the
--            lookups (7.2 and 7.3) takes one major fault for most pages
--            (73178 of 100000 on 7.3.4).
--
-- bench/run-jobs.sh runs it with sqlite3 -readonly; "$BENCH_SAMPLE TAG"
-- prints sqlite3's major faults (/proc/<pid>/stat) and the loop device's
-- read counters between the phases, and the "result" lines are checked.

.mode list
.separator " "
PRAGMA mmap_size = 1073741824;
.shell $BENCH_SAMPLE start
WITH RECURSIVE k(i, x) AS (SELECT 0, 1 UNION ALL
	SELECT i + 1, (x * 1103515245 + 12345) % 2147483648 FROM k WHERE i < 300)
SELECT 'result lookups', count(*), sum(length(payload))
	FROM k JOIN t ON t.id = 1 + (k.x / 65536) % 100000 WHERE k.i > 0;
.shell $BENCH_SAMPLE lookups
SELECT 'result scan', count(*), sum(length(payload)) FROM t;
.shell $BENCH_SAMPLE scan
