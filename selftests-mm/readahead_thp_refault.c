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
 * holds, where 7.3 reads one folio past the limit). Same bound.
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

/* Refaulted pages, one per slot of two RA_THP_FOLIO_MAX folios. */
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

FIXTURE(thp_refault) {
	struct ra_fs fs;
	struct ra_cgroup cg;
	int fd;
	char *map;
	char *huge;		/* the slots, mapped with MADV_HUGEPAGE */
	size_t size;
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

TEST_F(thp_refault, pageout_then_fault)
{
	size_t ps = self->fs.page_size, thp_pages = RA_THP_FOLIO_MAX / ps;
	size_t folio_pages = ra_folio_size(&self->fs) / ps;
	long read = 0, worst = 0, bound = ra_isqrt(folio_pages * thp_pages);
	int i;

	if (!past_the_limit(_metadata, self))
		return;

	for (i = 0; i < SLOTS; i++) {
		size_t slot = SLOTS_OFF + i * SLOT_SIZE;
		size_t off = slot + RA_THP_FOLIO_MAX / 2;
		long before, n;

		/*
		 * Fault the page in through the plain mapping (past the limit
		 * it reads its folio), then let reclaim take it: MADV_PAGEOUT
		 * evicts it as memory pressure would, leaving the shadow a
		 * refault finds.
		 */
		FORCE_READ(self->map[off]);
		before = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		if (before > (long)folio_pages)
			SKIP(return, "a fault read %ld pages: mmap_miss under the limit",
			     before);
		if (madvise(self->map + off, ps, MADV_PAGEOUT))
			SKIP(return, "MADV_PAGEOUT: %s", strerror(errno));
		if (ra_cached_pages(self->fd, self->map, off, ps))
			SKIP(return, "MADV_PAGEOUT left the page cached");
		/* The refault, through the MADV_HUGEPAGE mapping. */
		before = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		FORCE_READ(self->huge[off - SLOTS_OFF]);
		n = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE) -
		    before;
		read += n;
		if (n > worst)
			worst = n;
	}

	RA_EXPECT_FIGURE(&self->fs, "worst MADV_HUGEPAGE refault past the limit",
			 worst, "pages read", bound, SUSPECT,
			 "%ld pages by %d refaults, %zu-page THP folio", read,
			 SLOTS, thp_pages);
	ASSERT_LE(SLOTS, read) TH_LOG("the refaults read nothing: nothing was evicted");
}

TEST_F(thp_refault, memcg_limit)
{
	size_t ps = self->fs.page_size, thp_pages = RA_THP_FOLIO_MAX / ps;
	size_t folio_pages = ra_folio_size(&self->fs) / ps;
	long read = 0, worst = 0, bound = ra_isqrt(folio_pages * thp_pages);
	long base, n;
	char buf[32];
	int i, ret;

	if (!past_the_limit(_metadata, self))
		return;

	/*
	 * The test's own cgroup, limited from what it holds now: a fault's
	 * folio fits, a PMD-sized one never does, whatever reclaim frees.
	 *
	 *   memory.max = memory.current + MEMCG_ROOM (1 MiB)
	 */
	ret = ra_cgroup_enter(&self->fs, &self->cg, "memory");
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	base = cg_read_long(self->cg.path, "memory.current");
	ASSERT_LE(0, base);
	snprintf(buf, sizeof(buf), "%ld", base + (long)MEMCG_ROOM);
	ASSERT_EQ(0, cg_write(self->cg.path, "memory.max", buf));

	/* One fault per slot, 1 MiB into it, through the MADV_HUGEPAGE map. */
	for (i = 0; i < SLOTS; i++) {
		size_t slot = SLOTS_OFF + i * SLOT_SIZE;

		FORCE_READ(self->huge[i * SLOT_SIZE + RA_THP_FOLIO_MAX / 2]);
		n = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		ASSERT_LE(0, n);
		read += n;
		if (n > worst)
			worst = n;
	}
	ASSERT_EQ(0, cg_write(self->cg.path, "memory.max", "max"));

	RA_EXPECT_FIGURE(&self->fs, "worst MADV_HUGEPAGE fault past the limit under memory.max",
			 worst, "pages read", bound, SUSPECT_CHARGE,
			 "%ld pages by %d faults, %zu-page THP folio, memory.max %zu KiB over use",
			 read, SLOTS, thp_pages, MEMCG_ROOM / 1024);
	ASSERT_LE(SLOTS, read) TH_LOG("the faults read nothing");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){ &ra_xfs_4k, NULL });
	return test_harness_run(argc, argv);
}
