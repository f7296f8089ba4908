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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

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

FIXTURE(thp_refault) {
	struct ra_fs fs;
	int fd;
	char *map;
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
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* At most two RA_THP_FOLIO_MAX folios read per slot. */
	ret = ra_need_memory(&self->fs, SLOTS * SLOT_SIZE);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
}

FIXTURE_TEARDOWN(thp_refault)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

TEST_F(thp_refault, pageout_then_fault)
{
	size_t ps = self->fs.page_size, thp_pages = RA_THP_FOLIO_MAX / ps;
	size_t folio_pages = ra_folio_size(&self->fs) / ps;
	size_t slots_off = RANDOM_FAULTS * RA_THRASH_SPACING;
	long read = 0, worst = 0, bound = ra_isqrt(folio_pages * thp_pages);
	char *huge;
	int i, ret;

	/*
	 * One struct file, two mappings of it: the whole file, plain, and
	 * the slots again with MADV_HUGEPAGE.
	 *
	 *   0        random region          slots_off
	 *   |-x------x--- ... ---x------|[ slot 0 ][ slot 1 ] ... [ slot 7 ]|
	 *     ^ RANDOM_FAULTS pages,        each two 2 MiB folios, one
	 *       through the plain mapping   refault 1 MiB into it
	 */
	self->size = slots_off + SLOTS * SLOT_SIZE;
	ret = ra_file_map(&self->fs, self->size, RA_KB, &self->fd, &self->map);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	huge = mmap(NULL, SLOTS * SLOT_SIZE, PROT_READ, MAP_SHARED, self->fd,
		    slots_off);
	ASSERT_NE(MAP_FAILED, huge);
	if (madvise(huge, SLOTS * SLOT_SIZE, MADV_HUGEPAGE)) {
		munmap(huge, SLOTS * SLOT_SIZE);
		SKIP(return, "MADV_HUGEPAGE: %s", strerror(errno));
	}

	/* Faults at random, each a miss: mmap_miss passes the limit. */
	ra_assert_random_phase(_metadata, self->map, RANDOM_FAULTS,
			       RA_THRASH_SPACING);
	ra_drop_range(self->fd, self->map, 0, slots_off);

	for (i = 0; i < SLOTS; i++) {
		size_t slot = slots_off + i * SLOT_SIZE;
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
		if (before > (long)folio_pages) {
			munmap(huge, SLOTS * SLOT_SIZE);
			SKIP(return, "a fault read %ld pages: mmap_miss under the limit",
			     before);
		}
		if (madvise(self->map + off, ps, MADV_PAGEOUT)) {
			munmap(huge, SLOTS * SLOT_SIZE);
			SKIP(return, "MADV_PAGEOUT: %s", strerror(errno));
		}
		if (ra_cached_pages(self->fd, self->map, off, ps)) {
			munmap(huge, SLOTS * SLOT_SIZE);
			SKIP(return, "MADV_PAGEOUT left the page cached");
		}
		/* The refault, through the MADV_HUGEPAGE mapping. */
		before = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE);
		FORCE_READ(huge[off - slots_off]);
		n = ra_cached_pages(self->fd, self->map, slot, SLOT_SIZE) -
		    before;
		read += n;
		if (n > worst)
			worst = n;
	}
	munmap(huge, SLOTS * SLOT_SIZE);

	RA_EXPECT_FIGURE(&self->fs, "worst MADV_HUGEPAGE refault past the limit",
			 worst, "pages read", bound, SUSPECT,
			 "%ld pages by %d refaults, %zu-page THP folio", read,
			 SLOTS, thp_pages);
	ASSERT_LE(SLOTS, read) TH_LOG("the refaults read nothing: nothing was evicted");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){ &ra_xfs_4k, NULL });
	return test_harness_run(argc, argv);
}
