// SPDX-License-Identifier: GPL-2.0
/*
 * Forced THP readahead under memory pressure: a MADV_HUGEPAGE fault reads
 * PMD-sized folios (at most 2 MiB) around it, but once mmap_miss is past
 * MMAP_LOTSAMISS, a fault that refaults a folio reclaim evicted must read
 * a small folio: under memory pressure PMD-sized folios are evicted
 * before they are used, and reading them only adds to it ("mm: readahead:
 * make thp readahead conditional to mmap_miss logic"). Measured: pages
 * brought into the page cache by the worst of 8 refaults of a
 * MADV_HUGEPAGE mapping, each on a page MADV_PAGEOUT evicted, after
 * faults at random took mmap_miss past the limit (kernels where
 * fault-around hits keep it low skip). Healthy: the folio the
 * fault needs. Broken: a 2 MiB folio (512, 128 or 32 pages on 4, 16 or
 * 64 KiB pages). Bound: their geometric mean, 22, 11 or 5 pages for a
 * folio of one page.
 *
 * memcg_limit: the same faults past the limit, each into a range nothing
 * was read into, in a memory cgroup whose memory.max cannot take a 2 MiB
 * folio. Forced THP readahead allocates with __GFP_NORETRY, so the
 * PMD-sized folio fails its charge; the fault must then read the folio it
 * needs, not the PMD range in small folios (as many as the cgroup's room
 * holds, where 7.3 reads one folio past the limit). Same bound. Not
 * judged where a 2 MiB folio is so few pages that a CPU's memcg charge
 * stock may hold it (64 KiB pages: enter_small_memcg()).
 *
 * Past the limit a kernel may still read the 2 MiB folio of a
 * MADV_HUGEPAGE reader that walks from one 2 MiB range of the file into
 * the next (a backward memmove(), readahead_descending.c); what it must
 * not do is read more than 7.3 does for the program's other faults, each
 * measured as pages read into the next range, healthy one folio, same
 * bound:
 * walk_memcg_limit: the walk goes on in a cgroup too small for a 2 MiB
 * folio, whose charge fails (as memcg_limit);
 * walk_refault: the range walked into holds the shadow of a page reclaim
 * evicted, a refault under pressure (as pageout_then_fault);
 * straddling_reads: not a walk, reads of RECORD_FOLIOS folios at random
 * that cross a 2 MiB boundary, up or down; healthy the record's folios,
 * broken a 2 MiB range more, bound their geometric mean.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "cgroup_util.h"
#include "ra_fs.h"
#include "ra_cache.h"
#include "ra_cgroup.h"

/* Measured faults or reads, one per slot of two RA_THP_FOLIO_MAX ranges */
#define SLOTS		8
/*
 * Faults of the random phase: even with a third of them hits, which
 * ra_assert_random_phase() lets pass, misses outnumber hits by more than
 * MMAP_LOTSAMISS.
 */
#define RANDOM_FAULTS	(3 * RA_MMAP_LOTSAMISS + 10)
#define SLOT_SIZE	(2 * RA_THP_FOLIO_MAX)
#define RA_KB		128UL
#define SUSPECT \
	"forced THP readahead past MMAP_LOTSAMISS on a refault (do_sync_mmap_readahead(); the gate of \"mm: readahead: make thp readahead conditional to mmap_miss logic\")"
#define SUSPECT_CHARGE \
	"forced THP readahead past MMAP_LOTSAMISS falls back to small folios for the whole PMD range when the PMD-sized folio fails its memcg charge (page_cache_ra_order()'s fallback)"
/* What the cgroup may charge past its use: half the largest THP folio. */
#define MEMCG_ROOM	(RA_THP_FOLIO_MAX / 2)
/* The most pages a memcg charge may take from a CPU's stock (memcontrol.h) */
#define MEMCG_CHARGE_BATCH	64
/* Folios of a straddling read, half of them each side of the boundary */
#define RECORD_FOLIOS	8
#define SUSPECT_WALK_CHARGE \
	"a VM_HUGEPAGE walk past MMAP_LOTSAMISS reads the next 2 MiB range in small folios when its 2 MiB folio fails the memcg charge (page_cache_ra_order()'s fallback in do_sync_mmap_readahead())"
#define SUSPECT_WALK_SHADOW \
	"a VM_HUGEPAGE walk past MMAP_LOTSAMISS reads a 2 MiB folio over a refault's shadow (do_sync_mmap_readahead() checks folios only)"
#define SUSPECT_STRADDLE \
	"a random read across a 2 MiB boundary passes for a walk past MMAP_LOTSAMISS and reads the range beyond it (do_sync_mmap_readahead())"

FIXTURE(thp_refault) {
	struct ra_fs fs;
	struct ra_cgroup cg;
	int fd;
	char *map;
	char *huge;		/* the slots, mapped with MADV_HUGEPAGE */
	size_t size;
	size_t thp_pages;	/* pages of a 2 MiB folio */
	size_t folio_pages;	/* pages of a min-order folio */
	long bound;		/* pages a fault may read: their geometric mean */
	long read;		/* pages read by the measured faults */
	long worst;		/* by the worst of them */
};

/*
 * One filesystem is enough: the refault's folio is a page on every page
 * size (4 KiB blocks, large folios since 5.18), the 2 MiB folio always
 * many times that.
 */
FIXTURE_VARIANT(thp_refault) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(thp_refault, xfs_4k) { .fs = &ra_xfs_4k };

FIXTURE_SETUP(thp_refault)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	self->huge = MAP_FAILED;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* At most two RA_THP_FOLIO_MAX folios read per slot. */
	ret = ra_need_memory(&self->fs, SLOTS * SLOT_SIZE);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
}

FIXTURE_TEARDOWN(thp_refault)
{
	if (self->huge != MAP_FAILED)
		munmap(self->huge, SLOTS * SLOT_SIZE);
	ra_teardown(&self->fs, self->map, self->size, self->fd);
	ra_cgroup_leave(&self->cg);
}

#define SLOTS_OFF	(RANDOM_FAULTS * RA_THRASH_SPACING)

/*
 * Map the file twice from one struct file, the whole of it plain and the
 * slots again with MADV_HUGEPAGE, and take mmap_miss past the limit:
 *
 *   0        random region          SLOTS_OFF
 *   |-x------x--- ... ---x------|[ slot 0 ][ slot 1 ] ... [ slot 7 ]|
 *     ^ RANDOM_FAULTS pages,        each two 2 MiB folios, one
 *       through the plain mapping   fault 1 MiB into it
 *
 * Then check that a plain fault in slot 0 reads only its folio (kernels
 * whose fault-around hits keep mmap_miss low skip) and drop it again.
 * Return: false when the test skipped.
 */
static bool past_the_limit(struct __test_metadata *_metadata,
			   FIXTURE_DATA(thp_refault) * self)
{
	size_t folio_pages = ra_folio_size(&self->fs) / self->fs.page_size;
	size_t probe = SLOTS_OFF + RA_THP_FOLIO_MAX / 2;
	long n;
	int ret;

	self->thp_pages = RA_THP_FOLIO_MAX / self->fs.page_size;
	self->folio_pages = folio_pages;
	self->bound = ra_isqrt(folio_pages * self->thp_pages);

	self->size = SLOTS_OFF + SLOTS * SLOT_SIZE;
	ret = ra_file_map(&self->fs, self->size, RA_KB, &self->fd, &self->map);
	if (!ra_ready(_metadata, ret, &self->fs))
		return false;
	self->huge = mmap(NULL, SLOTS * SLOT_SIZE, PROT_READ, MAP_SHARED,
			  self->fd, SLOTS_OFF);
	EXPECT_NE(MAP_FAILED, self->huge)
		return false;
	if (madvise(self->huge, SLOTS * SLOT_SIZE, MADV_HUGEPAGE))
		SKIP(return false, "MADV_HUGEPAGE: %s", strerror(errno));

	/* Faults at random, each a miss: mmap_miss passes the limit. */
	ra_assert_random_phase(_metadata, self->map, RANDOM_FAULTS,
			       RA_THRASH_SPACING);
	ra_drop_range(self->fd, self->map, 0, SLOTS_OFF);

	FORCE_READ(self->map[probe]);
	n = ra_cached_pages(self->fd, self->map, SLOTS_OFF, SLOT_SIZE);
	if (n > (long)folio_pages)
		SKIP(return false, "a fault read %ld pages: mmap_miss under the limit",
		     n);
	ra_drop_range(self->fd, self->map, SLOTS_OFF, SLOT_SIZE);
	return true;
}

/*
 * A charge of MEMCG_CHARGE_BATCH pages or fewer may be served from what a
 * CPU keeps charged in stock for the cgroup, which memory.max does not
 * bound: where a 2 MiB folio is that small (32 pages on 64 KiB pages),
 * its charge cannot be made to fail, and the test skips.
 * Return: false when the test skipped.
 */
static bool thp_charge_can_fail(struct __test_metadata *_metadata,
				FIXTURE_DATA(thp_refault) * self)
{
	size_t thp_pages = RA_THP_FOLIO_MAX / self->fs.page_size;

	if (thp_pages <= MEMCG_CHARGE_BATCH)
		SKIP(return false,
		     "a %zu-page THP folio may be charged from a CPU's memcg stock (%d pages), which memory.max does not bound",
		     thp_pages, MEMCG_CHARGE_BATCH);
	return true;
}

/*
 * Enter the test's own memory cgroup and limit it to what it holds plus
 * MEMCG_ROOM: a fault's folio fits, a 2 MiB one never does, whatever
 * reclaim frees.
 *
 *   memory.max = memory.current + MEMCG_ROOM (1 MiB)
 *
 * Return: false when the test skipped.
 */
static bool enter_small_memcg(struct __test_metadata *_metadata,
			      FIXTURE_DATA(thp_refault) * self)
{
	long base;
	char buf[32];
	int ret;

	ret = ra_cgroup_enter(&self->fs, &self->cg, "memory");
	if (!ra_ready(_metadata, ret, &self->fs))
		return false;
	base = cg_read_long(self->cg.path, "memory.current");
	ASSERT_LE(0, base);
	snprintf(buf, sizeof(buf), "%ld", base + (long)MEMCG_ROOM);
	ASSERT_EQ(0, cg_write(self->cg.path, "memory.max", buf));
	return true;
}

/*
 * Fault the page at file offset @off in through the plain mapping (past
 * the limit it reads its folio, nothing else of its 2 MiB range), then let
 * reclaim take it: MADV_PAGEOUT evicts it as memory pressure would,
 * leaving the shadow a refault finds.
 * Return: false when the test skipped.
 */
static bool evict_page(struct __test_metadata *_metadata,
		       FIXTURE_DATA(thp_refault) * self, size_t off)
{
	size_t ps = self->fs.page_size;
	size_t range = off & ~(RA_THP_FOLIO_MAX - 1);
	long before, n;

	before = ra_cached_pages(self->fd, self->map, range, RA_THP_FOLIO_MAX);
	FORCE_READ(self->map[off]);
	n = ra_cached_pages(self->fd, self->map, range, RA_THP_FOLIO_MAX) -
	    before;
	if (n > (long)self->folio_pages)
		SKIP(return false, "a fault read %ld pages: mmap_miss under the limit",
		     n);
	if (madvise(self->map + off, ps, MADV_PAGEOUT))
		SKIP(return false, "MADV_PAGEOUT: %s", strerror(errno));
	if (ra_cached_pages(self->fd, self->map, off, ps))
		SKIP(return false, "MADV_PAGEOUT left the page cached");
	return true;
}

/* Count the pages a measured fault (or read) read. */
static void count_read(FIXTURE_DATA(thp_refault) * self, long n)
{
	self->read += n;
	if (n > self->worst)
		self->worst = n;
}

TEST_F(thp_refault, pageout_then_fault)
{
	int i;

	if (!past_the_limit(_metadata, self))
		return;

	for (i = 0; i < SLOTS; i++) {
		size_t slot = SLOTS_OFF + i * SLOT_SIZE;
		size_t off = slot + RA_THP_FOLIO_MAX / 2;
		long before, n;

		if (!evict_page(_metadata, self, off))
			return;
		/* The refault, through the MADV_HUGEPAGE mapping. */
		before = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		FORCE_READ(self->huge[off - SLOTS_OFF]);
		n = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE) -
		    before;
		count_read(self, n);
	}

	RA_EXPECT_FIGURE(&self->fs, "worst MADV_HUGEPAGE refault past the limit",
			 self->worst, "pages read", self->bound, SUSPECT,
			 "%ld pages by %d refaults, %zu-page THP folio",
			 self->read, SLOTS, self->thp_pages);
	ASSERT_LE(SLOTS, self->read) TH_LOG("the refaults read nothing: nothing was evicted");
}

TEST_F(thp_refault, memcg_limit)
{
	long n;
	int i;

	if (!thp_charge_can_fail(_metadata, self) ||
	    !past_the_limit(_metadata, self) ||
	    !enter_small_memcg(_metadata, self))
		return;

	/* One fault per slot, 1 MiB into it, through the MADV_HUGEPAGE map. */
	for (i = 0; i < SLOTS; i++) {
		size_t slot = SLOTS_OFF + i * SLOT_SIZE;

		FORCE_READ(self->huge[i * SLOT_SIZE + RA_THP_FOLIO_MAX / 2]);
		n = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		ASSERT_LE(0, n);
		count_read(self, n);
	}
	ASSERT_EQ(0, cg_write(self->cg.path, "memory.max", "max"));

	RA_EXPECT_FIGURE(&self->fs, "worst MADV_HUGEPAGE fault past the limit under memory.max",
			 self->worst, "pages read", self->bound, SUSPECT_CHARGE,
			 "%ld pages by %d faults, %zu-page THP folio, memory.max %zu KiB over use",
			 self->read, SLOTS, self->thp_pages, MEMCG_ROOM / 1024);
	ASSERT_LE(SLOTS, self->read) TH_LOG("the faults read nothing");
}

/*
 * Walk the first 2 MiB range of each slot through the MADV_HUGEPAGE
 * mapping, a fault per folio, all but its last folio: past the limit each
 * fault reads its folio. The walk's last step, from that folio into the
 * slot's second range, is the test's.
 *
 *   [ range 0: walked ......... | last ][ range 1 ]  slot i
 *     one fault per folio, here   ^ then  ^ measured
 */
static void walk_first_ranges(FIXTURE_DATA(thp_refault) * self)
{
	size_t folio = ra_folio_size(&self->fs), off;
	int i;

	for (i = 0; i < SLOTS; i++)
		for (off = 0; off < RA_THP_FOLIO_MAX - folio; off += folio)
			FORCE_READ(self->huge[i * SLOT_SIZE + off]);
}

/*
 * The walk's last step in slot @i: the last folio of its first range,
 * then the first page of the second. Return: pages the two faults read
 * into the second range.
 */
static long walk_step(struct __test_metadata *_metadata,
		      FIXTURE_DATA(thp_refault) * self, int i)
{
	size_t folio = ra_folio_size(&self->fs);
	size_t second = i * SLOT_SIZE + RA_THP_FOLIO_MAX;
	long before, after;

	before = ra_cached_pages(self->fd, self->map, SLOTS_OFF + second,
				 RA_THP_FOLIO_MAX);
	ASSERT_LE(0, before);
	FORCE_READ(self->huge[second - folio]);
	FORCE_READ(self->huge[second]);
	after = ra_cached_pages(self->fd, self->map, SLOTS_OFF + second,
				RA_THP_FOLIO_MAX);
	ASSERT_LE(0, after);
	return after - before;
}

TEST_F(thp_refault, walk_memcg_limit)
{
	long control;
	int i;

	if (!thp_charge_can_fail(_metadata, self) ||
	    !past_the_limit(_metadata, self))
		return;
	walk_first_ranges(self);
	/*
	 * Slot 0's step outside the cgroup, for the figure line: what the
	 * kernel reads for such a walk where memory allows (one folio on
	 * 7.3, a 2 MiB folio where walks read them).
	 */
	control = walk_step(_metadata, self, 0);

	/* The walk goes on in a cgroup too small for a 2 MiB folio. */
	if (!enter_small_memcg(_metadata, self))
		return;
	for (i = 1; i < SLOTS; i++)
		count_read(self, walk_step(_metadata, self, i));
	ASSERT_EQ(0, cg_write(self->cg.path, "memory.max", "max"));

	RA_EXPECT_FIGURE(&self->fs,
			 "worst MADV_HUGEPAGE walk into the next 2 MiB range under memory.max",
			 self->worst, "pages read", self->bound,
			 SUSPECT_WALK_CHARGE,
			 "%ld pages by %d faults, %zu-page THP folio, memory.max %zu KiB over use; outside the cgroup %ld",
			 self->read, SLOTS - 1, self->thp_pages,
			 MEMCG_ROOM / 1024, control);
	ASSERT_LE(SLOTS - 1, self->read) TH_LOG("the faults read nothing");
}

TEST_F(thp_refault, walk_refault)
{
	int i;

	if (!past_the_limit(_metadata, self))
		return;
	walk_first_ranges(self);

	for (i = 0; i < SLOTS; i++) {
		/* A page 1 MiB into the second range, faulted and evicted */
		size_t off = SLOTS_OFF + i * SLOT_SIZE + RA_THP_FOLIO_MAX * 3 / 2;

		if (!evict_page(_metadata, self, off))
			return;
		count_read(self, walk_step(_metadata, self, i));
	}

	RA_EXPECT_FIGURE(&self->fs, "worst MADV_HUGEPAGE walk into a 2 MiB range with a shadow",
			 self->worst, "pages read", self->bound,
			 SUSPECT_WALK_SHADOW,
			 "%ld pages by %d faults, %zu-page THP folio",
			 self->read, SLOTS, self->thp_pages);
	ASSERT_LE(SLOTS, self->read) TH_LOG("the faults read nothing");
}

TEST_F(thp_refault, straddling_reads)
{
	size_t folio = ra_folio_size(&self->fs), healthy;
	long bound;
	int k, j;

	if (!past_the_limit(_metadata, self))
		return;
	healthy = RECORD_FOLIOS * self->folio_pages;
	bound = ra_isqrt(healthy * self->thp_pages);

	/*
	 * One read per slot, a fault per folio, across the boundary of its
	 * two ranges, up in the even slots, then down in the odd ones: no
	 * read starts next to the range the one before ended in.
	 *
	 *   [ range 0      |xxxx][xxxx|      range 1 ]  slot i
	 *                   --->  (slots 0, 2, 4, 6)
	 *                   <---  (slots 1, 3, 5, 7)
	 */
	for (k = 0; k < SLOTS; k++) {
		bool down = k >= SLOTS / 2;
		int i = 2 * k % SLOTS + down;
		size_t slot = SLOTS_OFF + i * SLOT_SIZE;
		size_t start = i * SLOT_SIZE + RA_THP_FOLIO_MAX -
			       RECORD_FOLIOS / 2 * folio;
		long before, after;

		before = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		ASSERT_LE(0, before);
		for (j = 0; j < RECORD_FOLIOS; j++)
			FORCE_READ(self->huge[start + (down ?
					RECORD_FOLIOS - 1 - j : j) * folio]);
		after = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		ASSERT_LE(0, after);
		count_read(self, after - before);
	}

	RA_EXPECT_FIGURE(&self->fs,
			 "worst MADV_HUGEPAGE read across a 2 MiB boundary past the limit",
			 self->worst, "pages read", bound, SUSPECT_STRADDLE,
			 "%ld pages by %d reads of %zu pages (healthy), %zu-page THP folio",
			 self->read, SLOTS, healthy, self->thp_pages);
	ASSERT_LE(SLOTS, self->read) TH_LOG("the reads read nothing");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){ &ra_xfs_4k, NULL });
	return test_harness_run(argc, argv);
}
