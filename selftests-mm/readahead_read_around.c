// SPDX-License-Identifier: GPL-2.0
/*
 * Read-around on a min folio order mapping: a cold file read in order
 * through a mapping must take one synchronous fault, then async readahead.
 *
 * Read-around asks for the PG_readahead marker a quarter window past the
 * fault and rounds it down to its folio: with a min folio larger than a
 * quarter of the window it lands on the faulting folio itself, which no
 * later fault reaches, and async readahead never starts.
 * Measured: pages of an in-order read of 32 MiB not in the page cache
 * when the reader reached them (each a major fault; the fault retried
 * after async readahead, major too without per-VMA locks, is not one),
 * one filesystem and ra window (in min folios) per variant. Bound: a
 * tenth of a miss per ra window, at most MMAP_LOTSAMISS / 10 = 10.
 * Broken: one miss per min-size folio, 1 to 3 per window of the 128 or
 * more, 12x over or more; a kernel that restarts readahead past
 * MMAP_LOTSAMISS still takes 101, 10x over. Healthy: one read-around,
 * then async readahead keeps a window ahead: 1, 10x under.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

/*
 * Far more than half of any window tested: the read-around is not
 * clamped. A read from the start of the file is not affected: the window
 * is clamped at 0 and the marker lands past the first folio.
 */
#define REGION_OFF	(8UL << 20)
#define REGION_SIZE	(32UL << 20)
#define SUSPECT \
	"read-around puts PG_readahead on the faulting min-order folio (or past its window), async readahead never starts (every released kernel: min folios since 26cfdb395eef \"readahead: allocate folios with mapping_min_order in readahead\", windows under four pages always)"

FIXTURE(read_around) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
	unsigned long windows;	/* ra windows in the in-order region */
	long bound;
};

/*
 * A filesystem and the ra window the file is opened with, in min folios
 * (the filesystem block, at least a page): 4, the first size where the
 * marker is not lost, 3, the last where it is, and 0 for the device
 * default read_ahead_kb 128, whatever that is in folios: 32 pages on
 * 4 KiB pages, 8 on 16 KiB, 2 on 64 KiB. With order-0 folios (a block
 * not above the page size) a window of 3 gives async_size 0 and no
 * marker at all, and so does the default on 64 KiB pages: one major
 * fault per folio or two.
 */
FIXTURE_VARIANT(read_around) {
	const struct ra_fs_kind *fs;
	unsigned long folios;
};

#define DEFAULT_RA_KB	128UL

FIXTURE_VARIANT_ADD(read_around, ext4_4k_win4) { .fs = &ra_ext4_4k, .folios = 4 };
FIXTURE_VARIANT_ADD(read_around, ext4_4k_win3) { .fs = &ra_ext4_4k, .folios = 3 };
FIXTURE_VARIANT_ADD(read_around, ext4_4k_default) { .fs = &ra_ext4_4k, .folios = 0 };
FIXTURE_VARIANT_ADD(read_around, xfs_4k_win4) { .fs = &ra_xfs_4k, .folios = 4 };
FIXTURE_VARIANT_ADD(read_around, xfs_4k_win3) { .fs = &ra_xfs_4k, .folios = 3 };
FIXTURE_VARIANT_ADD(read_around, xfs_4k_default) { .fs = &ra_xfs_4k, .folios = 0 };
FIXTURE_VARIANT_ADD(read_around, xfs_16k_win4) { .fs = &ra_xfs_16k, .folios = 4 };
FIXTURE_VARIANT_ADD(read_around, xfs_16k_win3) { .fs = &ra_xfs_16k, .folios = 3 };
FIXTURE_VARIANT_ADD(read_around, xfs_16k_default) { .fs = &ra_xfs_16k, .folios = 0 };
FIXTURE_VARIANT_ADD(read_around, xfs_32k_win4) { .fs = &ra_xfs_32k, .folios = 4 };
FIXTURE_VARIANT_ADD(read_around, xfs_32k_win3) { .fs = &ra_xfs_32k, .folios = 3 };
FIXTURE_VARIANT_ADD(read_around, xfs_32k_default) { .fs = &ra_xfs_32k, .folios = 0 };
FIXTURE_VARIANT_ADD(read_around, xfs_64k_win4) { .fs = &ra_xfs_64k, .folios = 4 };
FIXTURE_VARIANT_ADD(read_around, xfs_64k_win3) { .fs = &ra_xfs_64k, .folios = 3 };
FIXTURE_VARIANT_ADD(read_around, xfs_64k_default) { .fs = &ra_xfs_64k, .folios = 0 };
FIXTURE_VARIANT_ADD(read_around, btrfs_4k_win3) { .fs = &ra_btrfs_4k, .folios = 3 };
FIXTURE_VARIANT_ADD(read_around, btrfs_4k_default) { .fs = &ra_btrfs_4k, .folios = 0 };
FIXTURE_VARIANT_ADD(read_around, f2fs_4k_win3) { .fs = &ra_f2fs_4k, .folios = 3 };
FIXTURE_VARIANT_ADD(read_around, f2fs_4k_default) { .fs = &ra_f2fs_4k, .folios = 0 };

FIXTURE_SETUP(read_around)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);
	unsigned long ra_kb;

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;

	/*
	 * One struct file, one mapping:
	 *
	 *   0          REGION_OFF                               + REGION_SIZE
	 *   |----------|=============================================|
	 *    untouched  in-order region, cold, one touch per page
	 */
	self->size = REGION_OFF + REGION_SIZE;
	/* 128 to 2730 windows in the region: the bound is 10 everywhere. */
	ra_kb = DEFAULT_RA_KB;
	if (variant->folios)
		ra_kb = variant->folios * ra_folio_size(&self->fs) / 1024;
	self->windows = REGION_SIZE / (ra_kb * 1024);
	self->bound = self->windows / 10;
	if (self->bound > RA_MMAP_LOTSAMISS / 10)
		self->bound = RA_MMAP_LOTSAMISS / 10;

	ret = ra_need_memory(&self->fs, ra_walk_bytes(ra_kb));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_map(&self->fs, self->size, ra_kb, &self->fd, &self->map);
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(read_around)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

TEST_F(read_around, cold_in_order)
{
	size_t ps = self->fs.page_size;
	struct ra_walk walk;

	/*
	 * A page cache miss in filemap_fault() calls
	 * do_sync_mmap_readahead(). Without VM_SEQ_READ, VM_EXEC or
	 * VM_HUGEPAGE it reads around the fault:
	 *
	 *	ra->start = pgoff - ra_pages / 2	(not below 0)
	 *	ra->size = ra_pages
	 *	ra->async_size = ra_pages / 4
	 *
	 * and page_cache_ra_order() asks for the PG_readahead marker at
	 * start + size - async_size = pgoff + ra_pages / 4. Read-around
	 * passes order 0, which page_cache_ra_order() raises to the min
	 * folio order, so every folio of the window is a min-size folio of
	 * F pages, and ra_alloc_folio() rounds the marker index down to
	 * the folio holding it. An in-order reader faults on the first
	 * page of a folio (the folio before it is cached), so when
	 * F > ra_pages / 4 the marker lands on the faulting folio itself:
	 *
	 *   pgoff - ra_pages/2   pgoff      pgoff + ra_pages/4    pgoff + F
	 *   |--------------------|================^===============|--- ...
	 *    folio(s) before      faulting folio   marker asked for  next folio
	 *                         (the marker is rounded down to its start)
	 *
	 * The fault that started the read dropped the lock for the I/O
	 * and is retried with FAULT_FLAG_TRIED; filemap_fault() calls
	 * do_async_mmap_readahead() only on a first try, and
	 * finish_fault() maps the whole folio. No later fault lands on the
	 * marker, async readahead never starts, and the reader's next
	 * fault past the window is a major fault again. That read-around
	 * begins at a cached folio, where page_cache_ra_order() stops with
	 * -EEXIST: with a window start aligned to the min folio,
	 * page_cache_ra_unbounded() reads the rest and rounds the marker
	 * *up*, past the window; with an unaligned start the fallback
	 * reads nothing and the fault reads its own folio. Either way: one
	 * major fault per min-size folio.
	 */
	ra_walk_pages(self->fd, self->map + REGION_OFF, REGION_OFF,
		      REGION_SIZE / ps, false, ra_limit(self->bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "cold in-order read", walk.missed,
			 "pages missed", self->bound, SUSPECT,
			 "%ld major faults after %zu of %lu pages, %lu ra windows",
			 walk.majflt, walk.touched, REGION_SIZE / ps,
			 self->windows);
	ASSERT_LE(1, walk.missed) TH_LOG("no page missed: the file was not cold");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_32k, &ra_xfs_64k,
		&ra_btrfs_4k, &ra_f2fs_4k, NULL
	});
	return test_harness_run(argc, argv);
}
