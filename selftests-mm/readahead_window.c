// SPDX-License-Identifier: GPL-2.0
/*
 * The read-around window: the first cold fault of a plain mapping reads
 * ra_pages centred on the fault (start pgoff - ra_pages / 2, not below
 * page 0, the size kept when clamped) and puts PG_readahead a quarter
 * window ahead of the fault, where an in-order reader starts async
 * readahead of the next window.
 * Measured: pages cached (cachestat(), else mincore()) on each side of
 * the window after one fault, and past it after faults up to and on the
 * marker. Bounds: a tenth of what a misplaced window leaves out or adds,
 * ra_pages / 20 for half a window, ra_pages / 40 for a quarter (read_ahead_kb
 * 16 MiB: ra_pages 4096 at 4 KiB pages, 256 at 64 KiB). Healthy: none of
 * it. Broken: a window read only ahead of the fault, shortened where it
 * is clamped, or its marker elsewhere: half or a quarter window, 10x over.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		16384UL
/* The file, in ra windows; centred faults are at 4 ra. */
#define FILE_WINDOWS	8
#define SUSPECT_FWD \
	"read-around not centred on the fault (read only ahead of it?)"

/* Per case, over twice its slowest under TCG; all cases fit mm's settings timeout */
#define TIMEOUT_S	4

FIXTURE(window) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
	size_t ra;		/* ra window in bytes */
	unsigned long ra_pages;
};

FIXTURE_VARIANT(window) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(window, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(window, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(window, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(window, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(window)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* Two windows cached at most: the read-around and one async. */
	ret = ra_need_memory(&self->fs, 2 * RA_KB * 1024);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * A window of RA_KB is a whole number of min folios (64 KiB at
	 * most), and so are its halves and quarters: the probes below cut
	 * no folio.
	 */
	self->ra = RA_KB * 1024;
	self->ra_pages = self->ra / self->fs.page_size;
	self->size = FILE_WINDOWS * self->ra;
	ret = ra_file_map(&self->fs, self->size, RA_KB, &self->fd, &self->map);
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(window)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

TEST_F_TIMEOUT(window, centred, TIMEOUT_S)
{
	size_t fault = 4 * self->ra, half = self->ra / 2;
	long behind, ahead;

	/*
	 * One cold fault at 4 ra:
	 *
	 *   3.5 ra        4 ra         4.5 ra                   6 ra
	 *   |=============x============|------------------------|
	 *    behind: read   ahead: read  past the window: cold
	 */
	FORCE_READ(self->map[fault]);
	behind = ra_uncached_pages(self->fd, self->map, fault - half, half);
	ahead = ra_cached_pages(self->fd, self->map, fault + half,
				3 * half);
	RA_EXPECT_FIGURE(&self->fs, "read-around behind the fault", behind,
			 "pages left uncached", self->ra_pages / 20,
			 SUSPECT_FWD, "of %lu", self->ra_pages / 2);
	RA_EXPECT_FIGURE(&self->fs, "read-around past the window", ahead,
			 "pages cached", self->ra_pages / 20, SUSPECT_FWD,
			 "of %lu", 3 * self->ra_pages / 2);
}

TEST_F_TIMEOUT(window, clamped_at_0, TIMEOUT_S)
{
	size_t fault = self->ra / 4;
	long in, past;

	/*
	 * One cold fault a quarter window into the file: the window would
	 * start before page 0, so it starts there, and keeps its size:
	 *
	 *   0     0.25 ra                     1 ra                 2 ra
	 *   |=====x===========================|--------------------|
	 *    the window, all read                past it: cold
	 */
	FORCE_READ(self->map[fault]);
	in = ra_uncached_pages(self->fd, self->map, 0, self->ra);
	past = ra_cached_pages(self->fd, self->map, self->ra, self->ra);
	RA_EXPECT_FIGURE(&self->fs, "read-around clamped at page 0", in,
			 "pages left uncached", self->ra_pages / 40,
			 "a read-around clamped at page 0 shortened, or not clamped",
			 "of %lu", self->ra_pages);
	RA_EXPECT_FIGURE(&self->fs, "clamped read-around, past the window",
			 past, "pages cached", self->ra_pages / 40,
			 "a read-around clamped at page 0 shifted past the window",
			 "of %lu", self->ra_pages);
}

TEST_F_TIMEOUT(window, marker_quarter, TIMEOUT_S)
{
	size_t ps = self->fs.page_size, fault = 4 * self->ra;
	size_t mark = fault + self->ra / 4, past_off = fault + self->ra;
	struct ra_walk walk;
	long early, late;

	/*
	 * One cold fault at 4 ra, then every page up to the marker, then
	 * the marker:
	 *
	 *   3.5 ra     4 ra   mark    4.5 ra       5 ra       5.5 ra
	 *   |==========x>>>>>>>^======|============|..........|
	 *    read-around         async readahead of the next window
	 *
	 * Before the marker nothing past 5 ra may be read; at the marker
	 * async readahead reads [4.5 ra, 5.5 ra).
	 */
	FORCE_READ(self->map[fault]);
	ra_walk_pages(self->fd, self->map + fault + ps, fault + ps,
		      (mark - fault) / ps - 1, false, LONG_MAX, &walk);
	early = ra_cached_pages(self->fd, self->map, past_off, self->ra);
	RA_EXPECT_FIGURE(&self->fs, "read before the marker", early,
			 "pages cached past the window", self->ra_pages / 20,
			 "PG_readahead less than a quarter window ahead of the fault",
			 "%zu pages read in order", walk.touched + 1);
	FORCE_READ(self->map[mark]);
	late = ra_uncached_pages(self->fd, self->map, past_off, self->ra / 2);
	RA_EXPECT_FIGURE(&self->fs, "fault on the marker", late,
			 "pages of the next window uncached", self->ra_pages / 20,
			 "no PG_readahead a quarter window ahead of the fault, no async readahead",
			 "of %lu", self->ra_pages / 2);
}

TEST_HARNESS_MAIN
