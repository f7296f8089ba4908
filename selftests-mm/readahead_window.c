// SPDX-License-Identifier: GPL-2.0
/*
 * What a reader of a plain mapping gets from read-around, wherever in the
 * file it starts and whichever way it goes.
 * - from_start: a program that reads a file's head (headers, an index)
 *   gets as much read-around as a reader of its middle: a cold fault on
 *   page 0 brings in no fewer pages than the control, a cold fault in
 *   the middle of the same file, less a twentieth of it (more is no
 *   defect). A reader walking forwards from there takes a handful of
 *   major faults, not one a folio. Bounds: control / 20 pages fewer
 *   (broken: a window cut where it meets page 0, half the control); per
 *   window walked, sqrt(folios a window) major faults (healthy: 1 in
 *   all; broken, no readahead: one a folio).
 * - backward: a reader walking backwards from the middle, as memmove()
 *   does when it copies to an overlapping higher address, takes one
 *   major fault per half window: each fault below what is cached reads
 *   the window around it, half of it new. Bound: sqrt(half windows *
 *   folios walked), 181 at 4 KiB folios, 45 at 64 KiB (healthy: 4;
 *   broken, a window read only ahead of the fault: one per folio, 8192
 *   to 512).
 * - forward_lead: a reader walking forwards from the middle never
 *   catches up with readahead: wherever it is, the next ra_pages / 40
 *   pages are in the page cache already (read, or being read): their
 *   reads were issued before the reader needed them. Measured without
 *   a clock: at each page touched, whether the pages ahead are present.
 *   Bound: ra_pages / 400 + 1 pages touched with less ahead, 11, 3 and
 *   1 at 4, 16 and 64 KiB pages (healthy: none on any page size,
 *   readahead staying a quarter window or more ahead, ten times the lead
 *   asked for; broken, the next read started only at a window's last
 *   page: the lead, 102, 25 and 6 pages, 6x the bound or more). A
 *   readahead window cut short by a failed allocation (a loaded machine)
 *   costs a healthy walk a lead too, now and then: the least of three
 *   walks counts.
 * from_start and forward_lead count pages under read as present, as
 * cachestat() does; without it (CONFIG_CACHESTAT_SYSCALL=n) mincore()
 * counts only pages read, a stricter probe that could only add pages
 * still in flight to a healthy kernel's figure: none were seen there
 * (kernels built without the syscall).
 * read_ahead_kb 16 MiB: ra_pages 4096 at 4 KiB pages, 256 at 64 KiB.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		16384UL
/* The file, in ra windows; the forward walk starts at 4 ra. */
#define FILE_WINDOWS	8
/* Windows walked by each reader. */
#define WALK_WINDOWS	2
#define LEAD_WALKS	3	/* forward_lead: walks at most, the least counts */
#define SUSPECT_CUT \
	"a read-around that meets page 0 cut short instead of kept at ra_pages"
#define SUSPECT_NO_RA \
	"no readahead for a reader starting at page 0"
#define SUSPECT_BACK \
	"read-around not around a descending fault (read only ahead of it?)"
#define SUSPECT_LEAD \
	"PG_readahead at or past the end of the window: async readahead starts when the reader is already there"

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
FIXTURE_VARIANT_ADD(window, btrfs_4k) { .fs = &ra_btrfs_4k };
FIXTURE_VARIANT_ADD(window, f2fs_4k) { .fs = &ra_f2fs_4k };

FIXTURE_SETUP(window)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * A walk of WALK_WINDOWS leaves its read-around and async windows
	 * cached behind and ahead of it: four windows at most.
	 */
	ret = ra_need_memory(&self->fs, 4 * RA_KB * 1024);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* A window of RA_KB is a whole number of min folios (64 KiB at most). */
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

TEST_F(window, from_start)
{
	size_t ps = self->fs.page_size, npages = WALK_WINDOWS * self->ra_pages;
	unsigned long folios = self->ra / ra_folio_size(&self->fs);
	long control, head, bound = WALK_WINDOWS * (long)ra_isqrt(folios);
	struct ra_walk first, rest;

	/*
	 * The control, one cold fault at 6 ra; then one on page 0, then
	 * every page of two windows:
	 *
	 *   0            1 ra          2 ra   ...   5 ra     6 ra     7 ra
	 *   x============|-------------|            |=====c=====|      |
	 *    read by the fault on 0                  the control's
	 *   >>>>>>>>>>>>>>>>>>>>>>>>>>>>| the reader
	 */
	FORCE_READ(self->map[6 * self->ra]);
	control = ra_cached_pages(self->fd, self->map, 5 * self->ra, 2 * self->ra);
	ASSERT_LE(1, control) TH_LOG("nothing read: the control fault did not happen");
	ra_walk_pages(self->fd, self->map, 0, 1, false, LONG_MAX, &first);
	head = ra_cached_pages(self->fd, self->map, 0, 2 * self->ra);
	RA_EXPECT_FIGURE(&self->fs, "fault on page 0, fewer than the control",
			 control - head, "pages", control / 20, SUSPECT_CUT,
			 "%ld read, control %ld", head, control);
	ra_walk_pages(self->fd, self->map + ps, ps, npages - 1, false,
		      ra_limit(bound - first.majflt), &rest);
	RA_EXPECT_FIGURE(&self->fs, "in-order walk from page 0",
			 first.majflt + rest.majflt, "major faults", bound,
			 SUSPECT_NO_RA, "after %zu of %zu pages",
			 rest.touched + 1, npages);
}

TEST_F(window, backward)
{
	size_t npages = WALK_WINDOWS * self->ra_pages;
	unsigned long folios = WALK_WINDOWS * self->ra / ra_folio_size(&self->fs);
	long bound = ra_isqrt(2 * WALK_WINDOWS * folios);
	size_t start = 2 * self->ra;
	struct ra_walk walk;

	/*
	 * Every page from 4 ra down to 2 ra. Each major fault at q reads
	 * [q - ra/2, q + ra/2) and stops at the cached folios above q; the
	 * next one is half a window further down:
	 *
	 *   2 ra                                                4 ra
	 *   |--------------|=======q=======|======================|
	 *    not yet read   new     cached, read before
	 *   <------------------------------------------------------ the reader
	 */
	ra_walk_pages(self->fd, self->map + start, start, npages, true,
		      ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "descending walk from the middle",
			 walk.majflt, "major faults", bound, SUSPECT_BACK,
			 "after %zu of %zu pages, %d half windows",
			 walk.touched, npages, 2 * WALK_WINDOWS);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

TEST_F(window, forward_lead)
{
	size_t ps = self->fs.page_size, start = 4 * self->ra;
	size_t npages = WALK_WINDOWS * self->ra_pages, i;
	size_t lead = self->ra_pages / 40 * ps;
	long bound = self->ra_pages / 400 + 1, caught = LONG_MAX, n, ahead;
	int walk;

	/*
	 * One cold fault at 4 ra, then every page of two windows; at each
	 * page, are the next ra_pages / 40 pages in the page cache?
	 *
	 *   3.5 ra      4 ra                                      6 ra
	 *   |===========x>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>|
	 *    read-around  the reader   p[=====)
	 *                                 lead: cached, or being read
	 *
	 * Readahead allocates with __GFP_NORETRY: on a loaded machine a
	 * window may come short, the reader then catching up once. A kernel
	 * that marks late does so on every walk: the least of LEAD_WALKS
	 * walks counts, each on the range dropped again.
	 */
	for (walk = 0; walk < LEAD_WALKS && caught > bound; walk++) {
		ra_drop_range(self->fd, self->map, 3 * self->ra, self->size - 3 * self->ra);
		for (n = 0, i = 0; i < npages; i++) {
			size_t off = start + i * ps;

			FORCE_READ(self->map[off]);
			ahead = ra_cached_pages(self->fd, self->map, off + ps, lead);
			ASSERT_LE(0, ahead);
			if (ahead < (long)(lead / ps))
				n++;
		}
		caught = n < caught ? n : caught;
	}
	RA_EXPECT_FIGURE(&self->fs, "in-order walk from the middle", caught,
			 "pages touched with fewer cached ahead", bound, SUSPECT_LEAD,
			 "%zu pages ahead wanted, %zu pages walked, the least of %d walks",
			 lead / ps, npages, walk);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, &ra_btrfs_4k,
		&ra_f2fs_4k, NULL
	});
	return test_harness_run(argc, argv);
}
