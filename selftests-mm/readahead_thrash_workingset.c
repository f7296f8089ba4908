// SPDX-License-Identifier: GPL-2.0
/*
 * A thrashing reader's fault-around hits on folios that refaulted with
 * PG_workingset: once mmap_miss has passed MMAP_LOTSAMISS, they must not
 * count as mmap hits (filemap_map_pages()), or they take the counter back
 * under the limit and read-around comes back for a file whose reads only
 * add to memory pressure. Measured: pages brought into the page cache per
 * round, each round one cold folio faulted at a random spot plus three
 * hits on refaulted working-set folios. Healthy: the round reads its
 * folio. Broken: read-around, ra_pages a round. Bound: ra_thrash_bound()
 * per round. memory.stat's workingset_restore_file proves the hits were
 * working set, on the classic LRU and on MGLRU alike.
 * What it leans on, and why:
 * - memory.stat, read after memcg_flush(): since "mm: memcg: make
 *   stats flushing threshold per-memcg" (2023) a read is exact only past
 *   MEMCG_CHARGE_BATCH updates a CPU, else after the 2 s periodic flush;
 *   making the updates is faster than waiting for it.
 * - the root memcg's active_file, classic LRU only: MADV_PAGEOUT reclaims
 *   for no target memcg (1a4e58cce84e "mm: introduce MADV_PAGEOUT"), so
 *   the shadow names the root, and a refault is working set only within
 *   the root's active file list (23047a96d7cf "mm: workingset:
 *   per-cgroup cache thrash detection"); the ballast fills it. MGLRU
 *   (ac35a4902374 "mm: multi-gen LRU: minimal implementation") judges a
 *   refault by its generation and needs no ballast.
 * - debugfs fault_around_bytes, when mounted: set to a page, fault-around
 *   maps nothing and the test has no hit to judge, so it skips; as it
 *   does on 64 KiB pages, where the default 64 KiB is one page.
 * The hits not refaulting as working set (workingset_restore_file) is
 * no verdict on readahead: the test skips then, with the figures.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"
#include "cgroup_util.h"
#include "ra_cgroup.h"

#define ROUNDS		30
#define HITS		3	/* refaulted folios hit per round */
#define BALLAST		(8UL << 20)
#define BALLAST_TRIES	3
#define ACCESSES	8	/* reads that make a folio working set */
#define FAULT_AROUND_ATTR	"/sys/kernel/debug/fault_around_bytes"
#define SUSPECT \
	"fault-around hits on PG_workingset folios counted as mmap hits (filemap_map_pages()); if random_reader fails too, the mmap_miss gate itself (kernels before 0b9c0aeba938, 7.2, or MMAP_LOTSAMISS raised past 110)"

/**
 * memcg_flush() - make the next memory.stat reads exact
 * @fd: a file of the test, read by a task of the cgroup
 * @off: file offset of a range of it the caller is done with, in bytes
 * @len: length of that range in bytes
 *
 * memcg statistics are kept per CPU and summed (flushed) lazily: reading
 * memory.stat flushes only once more than MEMCG_CHARGE_BATCH (64) updates
 * per online CPU are pending (mem_cgroup_flush_stats()), else a worker
 * does it every two seconds. Rather than wait for the worker, this makes
 * the updates: it reads and drops 64 pages per possible CPU of the range
 * (up to @len), each page at least four updates (file pages and LRU size,
 * up and down), so that the next read of the cgroup's memory.stat, or an
 * ancestor's, flushes.
 *
 * Return: 0, or -1 on error (errno set).
 */
static int memcg_flush(int fd, size_t off, size_t len)
{
	size_t ps = psize(), pages = 64 * sysconf(_SC_NPROCESSORS_CONF);
	size_t i;
	char *buf;
	int err;

	if (pages > len / ps)
		pages = len / ps;
	buf = malloc(ps);
	if (!buf)
		return -1;
	for (i = 0; i < pages; i++)
		if (pread(fd, buf, ps, off + i * ps) != (ssize_t)ps)
			break;
	free(buf);
	if (i < pages)
		return -1;
	err = posix_fadvise(fd, off, pages * ps, POSIX_FADV_DONTNEED);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/**
 * stat_key() - a counter of a cgroup's memory.stat
 * @cgroup: directory of the cgroup, a test's (&ra_cgroup.path) or the
 *	root (&ra_cgroup.root)
 * @key: name of the counter, e.g. "workingset_restore_file", any but the
 *	file's first ("anon")
 *
 * The counter as last flushed: after memcg_flush(), exact to within
 * the updates of other CPUs that are still batched (under 64 per CPU).
 *
 * Return: the counter (in pages for the workingset counters, in bytes
 * for the LRU sizes), or -1 when it cannot be read.
 */
static long stat_key(const char *cgroup, const char *key)
{
	char name[64];

	/* At a line's start: "active_file " is also the end of another. */
	snprintf(name, sizeof(name), "\n%s ", key);
	return cg_read_key_long(cgroup, "memory.stat", name);
}

/**
 * mglru_on() - whether reclaim uses the multi-gen LRU
 *
 * Return: true when /sys/kernel/mm/lru_gen/enabled has its main switch
 * (0x0001) on; false on the classic active/inactive LRU.
 */
static bool mglru_on(void)
{
	FILE *f = fopen("/sys/kernel/mm/lru_gen/enabled", "re");
	unsigned int caps = 0;

	if (!f)
		return false;
	if (fscanf(f, "%x", &caps) != 1)
		caps = 0;
	fclose(f);
	return caps & 1;
}

FIXTURE(thrash_workingset) {
	struct ra_fs fs;
	struct ra_cgroup cg;
	int fd;
	int fd_prep;		/* the same file, for the hits' preparation */
	char *map;
	char *map_prep;
	size_t size;
	size_t slot;		/* bytes per round: two read-around windows */
	size_t rounds_off;	/* file offset of the rounds' slots */
};

FIXTURE_VARIANT(thrash_workingset) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(thrash_workingset, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(thrash_workingset, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(thrash_workingset, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(thrash_workingset, xfs_64k) { .fs = &ra_xfs_64k };

/* The fault-around window in bytes: debugfs, else the default (64 KiB). */
static unsigned long fault_around_window(void)
{
	return access(FAULT_AROUND_ATTR, R_OK) ? 65536UL :
	       read_num(FAULT_AROUND_ATTR);
}

FIXTURE_SETUP(thrash_workingset)
{
	int ret;

	self->fd = -1;
	self->fd_prep = -1;
	ret = ra_fs_setup(&self->fs, variant->fs);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * The guard lives in fault-around (filemap_map_pages()). Where a
	 * fault-around window is one page (64 KiB pages, or
	 * fault_around_bytes lowered), a hit goes through filemap_fault()
	 * and do_async_mmap_readahead(), which counts it whatever the folio.
	 */
	if (fault_around_window() <= self->fs.page_size)
		SKIP(return, "fault-around window of %lu bytes is one page: no hit to judge",
		     fault_around_window());
	self->slot = 2 * RA_THRASH_KB * 1024;
	ret = ra_need_memory(&self->fs, 2 * self->slot + BALLAST);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->rounds_off = RA_THRASH_FAULTS * RA_THRASH_SPACING;
	self->size = self->rounds_off + ROUNDS * self->slot + BALLAST;
	ret = ra_cgroup_enter(&self->fs, &self->cg, "memory");
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, self->size, RA_THRASH_WARM_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	ra_assert_thrashing(_metadata, &self->fs, self->fd, self->map);
	/* A struct file of its own, so that the tested one's state stays. */
	self->fd_prep = open(self->fs.file, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->fd_prep);
	ASSERT_EQ(0, posix_fadvise(self->fd_prep, 0, 0, POSIX_FADV_RANDOM));
	self->map_prep = mmap(NULL, self->size, PROT_READ, MAP_SHARED,
			      self->fd_prep, 0);
	ASSERT_NE(MAP_FAILED, self->map_prep);
	ASSERT_EQ(0, madvise(self->map_prep, self->size, MADV_RANDOM));
}

FIXTURE_TEARDOWN(thrash_workingset)
{
	if (self->map_prep && self->map_prep != MAP_FAILED)
		munmap(self->map_prep, self->size);
	if (self->fd_prep >= 0)
		close(self->fd_prep);
	ra_teardown(&self->fs, self->map, self->size, self->fd);
	ra_cgroup_leave(&self->cg);
}

/*
 * memory.stat's @key in @cgroup, read after memcg_flush() of the
 * first @done bytes of @fd, the warm-up's range, which the test is done
 * with.
 */
static long memcg_stat(struct __test_metadata *_metadata, int fd,
		       size_t done, const char *cgroup, const char *key)
{
	long val;

	ASSERT_EQ(0, memcg_flush(fd, 0, done));
	val = stat_key(cgroup, key);
	ASSERT_LE(0, val) TH_LOG("no %s in %s/memory.stat", key, cgroup);
	return val;
}

/*
 * Make the folio at @off of the file a refaulted working-set folio:
 * read it ACCESSES times through the preparing struct file (in turn with
 * the other folios of the round, so that every read marks it accessed:
 * active on the classic LRU, PG_workingset on MGLRU), map it, evict it
 * with MADV_PAGEOUT (which marks an active folio PG_workingset, and
 * leaves a shadow entry that records it), and read it back: the refault
 * finds the shadow recent and sets PG_workingset on the new folio.
 */
static void prepare_hits(struct __test_metadata *_metadata, int fd,
			 char *map, size_t folio, const size_t *off)
{
	int a, h;
	char c;

	for (a = 0; a < ACCESSES; a++)
		for (h = 0; h < HITS; h++)
			ASSERT_EQ(1, pread(fd, &c, 1, off[h]));
	for (h = 0; h < HITS; h++) {
		FORCE_READ(map[off[h]]);
		ASSERT_EQ(0, madvise(map + off[h], folio, MADV_PAGEOUT));
		ASSERT_EQ(0, ra_resident_pages(map + off[h], folio))
			TH_LOG("MADV_PAGEOUT left the folio cached");
		ASSERT_EQ(1, pread(fd, &c, 1, off[h]));
	}
}

/*
 * Each round, three folios are made refaulted working-set folios
 * (prepare_hits()), then the tested struct file misses once at the spot
 * and hits each of the three once, through fault-around:
 *
 *   round i: |H|..|H|..|H|....|------ read-around window ------|....|
 *            one PMD apart     ^ spot, a miss, in the window's middle
 *
 * Healthy: one miss, no hit counted. Broken: three hits for one miss.
 */
TEST_F(thrash_workingset, refaulting_workingset)
{
	size_t ps = self->fs.page_size, folio = ra_folio_size(&self->fs);
	size_t ballast = self->size - BALLAST, pmd = read_pmd_pagesize();
	long bound, pages = 0, restored, expected, active;
	unsigned int seed = 4711, i, pass, try;
	cpu_set_t cpus;
	char *buf;
	int h;

	if (!pmd || pmd > self->slot / 8)
		pmd = RA_THRASH_SPACING;
	/*
	 * One CPU: MADV_PAGEOUT drains only its own CPU's batch of folios
	 * on their way to the LRU, and a folio read on another CPU could
	 * not be isolated, so it would stay cached (prepare_hits()).
	 */
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu(), &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	/*
	 * On the classic LRU a refault is recent when its distance is
	 * within the active file list of the memcg it was evicted from:
	 * MADV_PAGEOUT evicts for no target memcg, so the root's, as last
	 * flushed. The BALLAST, read twice, puts that many pages on it;
	 * the flush makes the root count them now. Each try reads it
	 * again, up to BALLAST_TRIES. MGLRU judges a refault by its
	 * generation and needs neither.
	 */
	buf = malloc(BALLAST);
	ASSERT_NE(NULL, buf);
	for (try = 0, active = 0; try < BALLAST_TRIES; try++) {
		for (pass = 0; pass < 2; pass++)
			ASSERT_EQ((ssize_t)BALLAST,
				  pread(self->fd_prep, buf, BALLAST, ballast));
		if (mglru_on())
			break;
		active = memcg_stat(_metadata, self->fd_prep, self->rounds_off,
				    self->cg.root, "active_file");
		if (active >= (long)BALLAST / 2)
			break;
	}
	free(buf);
	if (try == BALLAST_TRIES)
		SKIP(return,
		     "the root memcg counts %ld KiB of active file pages (this test's %ld KiB), under half the %lu KiB ballast: no refault would be recent",
		     active >> 10,
		     stat_key(self->cg.path, "active_file") >> 10,
		     BALLAST >> 10);
	restored = memcg_stat(_metadata, self->fd_prep, self->rounds_off,
			      self->cg.path, "workingset_restore_file");

	bound = ra_thrash_bound(&self->fs);
	for (i = 0; i < ROUNDS && pages <= ra_limit(bound * ROUNDS); i++) {
		size_t base = self->rounds_off + i * self->slot;
		size_t spot = ra_slot_spot(base, self->slot, folio, &seed);
		size_t hit[HITS];
		long before, after;

		for (h = 0; h < HITS; h++)
			hit[h] = base + h * pmd;
		prepare_hits(_metadata, self->fd_prep, self->map_prep, folio,
			     hit);
		before = ra_cached_pages(self->fd, self->map, base, self->slot);
		ASSERT_LE(0, before);
		FORCE_READ(self->map[spot]);
		for (h = 0; h < HITS; h++)
			FORCE_READ(self->map[hit[h]]);
		after = ra_cached_pages(self->fd, self->map, base, self->slot);
		ASSERT_LE(0, after);
		pages += after - before;
		ra_drop_range(self->fd, self->map, base, self->slot);
	}

	/* Every hit folio should have refaulted as working set. */
	expected = (long)i * HITS * (folio / ps);
	restored = memcg_stat(_metadata, self->fd_prep, self->rounds_off,
			      self->cg.path, "workingset_restore_file") - restored;
	ksft_print_msg("refaults: %ld pages restored as working set, of %ld refaulted (%s)\n",
		       restored, expected, mglru_on() ? "MGLRU" : "classic LRU");
	/* The figure means something only if the hits were working set. */
	if (restored < expected / 2)
		SKIP(return, "%ld of %ld hit pages refaulted as working set: no hit to judge",
		     restored, expected);
	RA_EXPECT_FIGURE(&self->fs, "misses among refaulted working-set hits",
			 pages / i, "pages per round", bound, SUSPECT,
			 "%ld pages in %u rounds of 1 miss and %d hits",
			 pages, i, HITS);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
