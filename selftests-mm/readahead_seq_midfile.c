// SPDX-License-Identifier: GPL-2.0
/*
 * MADV_SEQUENTIAL from the middle of a file: a mapping advised
 * MADV_SEQUENTIAL ("expect page references in sequential order",
 * madvise(2)) and read in order from a page past 0 must get async
 * readahead, as the same walk from page 0 does (and, on 4 KiB pages,
 * the same walk without advice).
 *
 * A VM_SEQ_READ miss goes to page_cache_sync_ra() with a request of
 * ra_pages. mmap faults never move file->f_ra.prev_pos, and the cached
 * run it finds behind the fault is at most ra_pages long, which since
 * commit 2cad40180197 ("readahead: make context readahead more
 * conservative", 3.12) is too short to count, so every miss past page 0
 * is taken for a small random read: ra_pages read from the fault, no
 * PG_readahead, and the next window is read synchronously again when the
 * reader gets there. Every released kernel since has this defect.
 * Measured: major faults of an in-order walk of 64 MiB from 8 MiB into
 * the file at the default read_ahead_kb 128. Bound: sqrt(windows of the
 * walk), 22. Broken: one per window, 512, 23x over. Healthy: one, then
 * async readahead keeps a window ahead of the reader, 22x under. Where
 * the fault retried after each async readahead counts as major (no
 * per-VMA locks: 6.1, CONFIG_SMP=n), a healthy kernel takes one a window
 * too. descending.ascending_control walks from page 0: it passing where
 * this fails points at the mid-file start, not at the machine.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		128UL
#define REGION_OFF	(8UL << 20)
#define REGION_SIZE	(64UL << 20)
#define SUSPECT \
	"a VM_SEQ_READ miss past page 0 is read as a small random read, without PG_readahead (page_cache_sync_ra() sees no sequential history: mmap faults leave ra->prev_pos alone; since 2cad40180197, 3.12)"

FIXTURE(seq_midfile) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
};

FIXTURE_VARIANT(seq_midfile) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(seq_midfile, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(seq_midfile, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(seq_midfile, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(seq_midfile, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(seq_midfile)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->size = REGION_OFF + REGION_SIZE;
	ret = ra_file_map(&self->fs, self->size, RA_KB, &self->fd, &self->map);
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(seq_midfile)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

TEST_F(seq_midfile, in_order)
{
	size_t ps = self->fs.page_size;
	unsigned long windows = REGION_SIZE / (RA_KB * 1024);
	long bound = ra_isqrt(windows);
	struct ra_walk walk;

	/*
	 * One struct file, one MADV_SEQUENTIAL mapping, the walk starting
	 * past page 0 (a miss at index 0 always starts a stream):
	 *
	 *   0          REGION_OFF                               + REGION_SIZE
	 *   |----------|=============================================|
	 *    untouched  in-order walk, cold, one touch per page
	 */
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_SEQUENTIAL));
	ra_walk_pages(self->fd, self->map + REGION_OFF, REGION_OFF,
		      REGION_SIZE / ps, false, ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "MADV_SEQUENTIAL in-order walk from mid-file",
			 walk.majflt, "major faults", bound, SUSPECT,
			 "after %zu of %lu pages, %lu ra windows", walk.touched,
			 REGION_SIZE / ps, windows);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
