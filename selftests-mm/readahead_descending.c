// SPDX-License-Identifier: GPL-2.0
/*
 * Descending readers: a mapping read from its last page to its first, as
 * memmove()/memcpy() do when they copy backwards, must still get
 * readahead when the mapping asks for it.
 *
 *   file  |page 0|page 1| ... |page n-2|page n-1|
 *   walk      <----------------------------- start here, one touch a page
 *
 * madv_hugepage: VM_HUGEPAGE makes a fault read the aligned PMD-sized
 *   folio around it (force_thp_readahead), so a descending walk takes one
 *   major fault per PMD. When mmap_miss passes MMAP_LOTSAMISS because a
 *   PMD mapping never counts as a hit, readahead stops after about a
 *   hundred PMD folios and every later page is read on its own. The walk
 *   covers 256 PMDs (512 on large-block filesystems, whose folios hold
 *   fewer pages), well past that point.
 *   Bound: 10 major faults per PMD. healthy: 1 per PMD. broken: one per
 *   folio for the PMDs after the first hundred: 512 per PMD at 4 KiB
 *   folios, 128 at 16 KiB, 32 at 64 KiB (measured with the 7.2 hit
 *   accounting emulated: 79972, 52836 and 13284). At 64 KiB folios a PMD
 *   holds only 32 of them, so the broken figure is 2.6x over the bound:
 *   no bound can be 10x from both sides there.
 *
 * madv_sequential: VM_SEQ_READ reads ra_pages forwards from the fault, so
 *   each backward step lands below everything read: one major fault per
 *   folio. A kernel that reads the window ending at a descending fault
 *   takes one per ra_pages window.
 *   Bound: 12 major faults per ra_pages window (192 for 128 MiB at
 *   read_ahead_kb 8192). healthy: 16 (one a window; 17 measured with the
 *   descending series emulated). broken: one per
 *   folio, 32768 at 4 KiB folios, 2048 at 64 KiB: 10.7x the bound or more.
 *
 * ascending_control: the same MADV_SEQUENTIAL walk from the first page
 *   forwards, same bound: 1 major fault (17, one a window, on kernels
 *   that count the retry after each async readahead as major, like 6.1).
 *   It tells a broken descending path from a broken test environment.
 *
 * pmd_hole: a fault on an uncached PMD-sized hole between two cached
 *   ranges of a MADV_HUGEPAGE mapping is no descending step and must
 *   still be read as one PMD folio and mapped by one PMD. A descending
 *   rule that only looks at the folio above takes the hole for a
 *   backward step, reads the PMD below together with it, finds the
 *   lower range cached and falls back to small folios for all of it.
 *
 *     PMD  |    A    |    B    |    C    |
 *          ........c c.........      c = one cached folio (read with
 *                    ^ fault, middle of B    POSIX_FADV_RANDOM elsewhere)
 *
 *   100 holes, each in a mapping of its own, checked with smaps'
 *   FilePmdMapped after the fault, then unmapped and dropped. A first
 *   hole without cached neighbours must be PMD-mapped, or the kernel and
 *   filesystem map no page cache folio with a PMD and the test skips.
 *   The file is opened again every 50 holes: each hole is a miss that no
 *   hit offsets where PMD mappings do not count as hits (7.2 on), and
 *   past MMAP_LOTSAMISS misses on one struct file forced THP readahead
 *   stops, which is madv_hugepage's case, not this one.
 *   Bound: at most 10 holes not PMD-mapped. healthy: 0. broken: 100.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_util.h"

#define SEQ_SIZE	(128UL << 20)
#define RA_KB		8192UL
#define PMD_WALK	256UL
#define MAX_PMD_SIZE	(32UL << 20)
#define HOLES		100
#define HOLE_BOUND	(HOLES / 10)
#define HOLES_PER_OPEN	50
#define FMT_WALK \
	"%ld major faults after %zu of %zu pages, bound %ld, ra_pages %lu, folio %lu bytes; "
#define SUSPECT_THP \
	"suspected: mmap_miss passed MMAP_LOTSAMISS (PMD mappings not counted as hits), force_thp_readahead stopped"
#define SUSPECT_SEQ \
	"suspected: VM_SEQ_READ reads only forwards from a descending fault"
#define FMT_HOLES \
	"PMD holes between cached ranges: %ld of %ld not PMD-mapped, bound %d, PMD %lu bytes, folio %zu bytes\n"
#define FMT_HOLES_FAIL \
	"%ld of %ld holes not PMD-mapped, bound %d, ra_pages %lu, folio %zu bytes; "
#define SUSPECT_HOLE \
	"suspected: a fault between two cached ranges taken as a descending step, the hole read as small folios"
#define SUSPECT_FWD \
	"suspected: sequential readahead broken for a plain forward walk"

FIXTURE(descending) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
};

FIXTURE_VARIANT(descending) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(descending, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(descending, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(descending, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(descending, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(descending)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* Walks at RA_KB; forced THP readahead keeps up to two PMDs ahead. */
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB) +
			     2 * read_pmd_pagesize());
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
}

FIXTURE_TEARDOWN(descending)
{
	if (self->map && self->map != MAP_FAILED)
		munmap(self->map, self->size);
	if (self->fd > 0)
		close(self->fd);
	ra_fs_teardown(&self->fs);
}

TEST_F_TIMEOUT(descending, madv_hugepage, 180)
{
	unsigned long pmd = read_pmd_pagesize(), nr_pmd = PMD_WALK;
	size_t ps = self->fs.page_size;
	struct ra_walk walk;
	long bound;
	int ret;

	/*
	 * MADV_HUGEPAGE sets VM_HUGEPAGE whatever the global THP mode, and
	 * force_thp_readahead only looks at VM_HUGEPAGE: the mode is left
	 * alone.
	 */
	if (!pmd)
		SKIP(return, "transparent hugepages not available");
	if (pmd > MAX_PMD_SIZE)
		SKIP(return, "PMD size %lu bytes: the walk would be too long", pmd);
	if (ra_folio_size(&self->fs) > ps)
		nr_pmd *= 2;
	self->size = nr_pmd * pmd;
	bound = 10 * nr_pmd;

	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* A PMD-aligned mapping, so each PMD folio can be mapped whole. */
	self->map = mmap(NULL, self->size + pmd, PROT_READ, MAP_SHARED,
			 self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	munmap(self->map, self->size + pmd);
	self->map = (char *)(((unsigned long)self->map + pmd - 1) & ~(pmd - 1));
	self->map = mmap(self->map, self->size, PROT_READ,
			 MAP_SHARED | MAP_FIXED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_HUGEPAGE));

	ra_walk_pages(self->map, self->size / ps, true, ra_limit(bound), &walk);
	ra_report(&self->fs, "descending walk, MADV_HUGEPAGE", walk.majflt,
		  bound);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
	EXPECT_LE(walk.majflt, bound)
		TH_LOG(FMT_WALK "%lu PMDs; " SUSPECT_THP, walk.majflt,
		       walk.touched, self->size / ps, bound, ra_pages(&self->fs),
		       ra_folio_size(&self->fs), nr_pmd);
}

/*
 * Walk a MADV_SEQUENTIAL mapping of a new cold file one page at a time.
 * The mapping and file are left to the fixture teardown.
 */
static void sequential_walk(struct __test_metadata *_metadata,
			    struct ra_fs *fs, int *fd, char **map,
			    size_t *size, bool backwards)
{
	long bound = 12 * (SEQ_SIZE / (RA_KB * 1024));
	size_t ps = fs->page_size;
	struct ra_walk walk;
	int ret;

	*size = SEQ_SIZE;
	ret = ra_file_prepare(fs, *size, RA_KB, fd);
	if (!ra_ready(_metadata, ret, fs))
		return;
	*map = mmap(NULL, *size, PROT_READ, MAP_SHARED, *fd, 0);
	ASSERT_NE(MAP_FAILED, *map);
	ASSERT_EQ(0, madvise(*map, *size, MADV_SEQUENTIAL));

	ra_walk_pages(*map, *size / ps, backwards, ra_limit(bound), &walk);
	ra_report(fs, backwards ? "descending walk, MADV_SEQUENTIAL" :
		  "ascending walk, MADV_SEQUENTIAL", walk.majflt, bound);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
	EXPECT_LE(walk.majflt, bound)
		TH_LOG(FMT_WALK "%s", walk.majflt, walk.touched, *size / ps,
		       bound, ra_pages(fs), ra_folio_size(fs),
		       backwards ? SUSPECT_SEQ : SUSPECT_FWD);
}

TEST_F_TIMEOUT(descending, madv_sequential, 180)
{
	sequential_walk(_metadata, &self->fs, &self->fd, &self->map,
			&self->size, true);
}

TEST_F_TIMEOUT(descending, ascending_control, 180)
{
	sequential_walk(_metadata, &self->fs, &self->fd, &self->map,
			&self->size, false);
}

/*
 * Map the @pmd-aligned file range [@off, @off + @len) at a PMD-aligned
 * address with MADV_HUGEPAGE, fault the middle of its second PMD and
 * tell whether that PMD is mapped by one PMD. Unmaps and drops the range.
 */
static bool hole_pmd_mapped(struct __test_metadata *_metadata, int fd,
			    size_t off, size_t len, unsigned long pmd)
{
	char *map, *aligned;
	bool mapped;

	map = mmap(NULL, len + pmd, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	munmap(map, len + pmd);
	aligned = (char *)(((unsigned long)map + pmd - 1) & ~(pmd - 1));
	map = mmap(aligned, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, off);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, madvise(map, len, MADV_HUGEPAGE));
	FORCE_READ(map[pmd + pmd / 2]);
	mapped = check_huge_file(map, len, 1, pmd);
	munmap(map, len);
	posix_fadvise(fd, off, len + pmd, POSIX_FADV_DONTNEED);
	return mapped;
}

TEST_F_TIMEOUT(descending, pmd_hole, 180)
{
	unsigned long pmd = read_pmd_pagesize();
	size_t folio = ra_folio_size(&self->fs), region;
	long not_mapped = 0, i;
	int ret, pre;
	char c;

	if (!pmd)
		SKIP(return, "transparent hugepages not available");
	if (pmd > MAX_PMD_SIZE)
		SKIP(return, "PMD size %lu bytes: the test would be too long", pmd);
	/* Hole i: PMDs A, B, C and one spare PMD the readahead may reach. */
	region = 4 * pmd;
	self->size = (HOLES + 1) * region;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* Another struct file reads the cached folios, one folio each. */
	pre = open(self->fs.file, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pre);
	ASSERT_EQ(0, posix_fadvise(pre, 0, 0, POSIX_FADV_RANDOM));

	if (!hole_pmd_mapped(_metadata, self->fd, 0, 3 * pmd, pmd)) {
		close(pre);
		SKIP(return, "%s: a cold fault is not PMD-mapped, no PMD-sized folios",
		     self->fs.type);
	}
	for (i = 1; i <= HOLES && not_mapped <= ra_limit(HOLE_BOUND); i++) {
		size_t off = i * region;

		if (i % HOLES_PER_OPEN == 0) {
			close(self->fd);
			self->fd = open(self->fs.file, O_RDONLY | O_CLOEXEC);
			ASSERT_LE(0, self->fd);
		}
		ASSERT_EQ(1, pread(pre, &c, 1, off + pmd - folio));
		ASSERT_EQ(1, pread(pre, &c, 1, off + 2 * pmd));
		if (!hole_pmd_mapped(_metadata, self->fd, off, 3 * pmd, pmd))
			not_mapped++;
	}
	close(pre);
	ksft_print_msg(FMT_HOLES, not_mapped, i - 1, HOLE_BOUND, pmd, folio);
	EXPECT_LE(not_mapped, HOLE_BOUND)
		TH_LOG(FMT_HOLES_FAIL SUSPECT_HOLE, not_mapped, i - 1, HOLE_BOUND,
		       ra_pages(&self->fs), folio);
}

TEST_HARNESS_MAIN
