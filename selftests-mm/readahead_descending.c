// SPDX-License-Identifier: GPL-2.0
/*
 * Descending readers: a MADV_HUGEPAGE mapping read from its last page to
 * its first, as memmove()/memcpy() do when they copy backwards, must
 * still get readahead; and a fault between two cached ranges must not be
 * taken for a descending step (a plain mapping read backwards:
 * readahead_window.c).
 * Measured: major faults of a descending walk of a MADV_HUGEPAGE mapping
 * (bound 10 per PMD; broken: mmap_miss passes MMAP_LOTSAMISS and every
 * page past the first hundred PMDs is read on its own), with an
 * ascending MADV_SEQUENTIAL walk as control; and how many of 50
 * PMD-sized holes between cached ranges are not PMD-mapped (bound a
 * tenth; broken: all).
 * Healthy: one fault per PMD; no hole.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define SEQ_SIZE	(128UL << 20)
#define RA_KB		8192UL
#define PMD_WALK	256UL
#define MAX_PMD_WALK	(1024UL << 20)
/* Misses of one struct file that stay under MMAP_LOTSAMISS */
#define HOLES		(RA_MMAP_LOTSAMISS / 2)
#define HOLES_BYTES	(320UL << 20)
#define SUSPECT_THP \
	"mmap_miss passed MMAP_LOTSAMISS (PMD mappings not counted as hits), force_thp_readahead stopped"
#define SUSPECT_HOLE \
	"a fault between two cached ranges taken as a descending step, the hole read as small folios"
#define SUSPECT_FWD \
	"sequential readahead broken for a plain forward walk"

/*
 * At least ten times the case's slowest run in QEMU under TCG, past the
 * harness's default of 30 s: time for a debug kernel (KASAN, lockdep)
 * under emulation.
 */
#define TIMEOUT_S	50

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

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* Walks at RA_KB; forced THP readahead keeps up to two PMDs ahead. */
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB) +
			     2 * read_pmd_pagesize());
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(descending)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

TEST_F_TIMEOUT(descending, madv_hugepage, TIMEOUT_S)
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
	/*
	 * VM_HUGEPAGE makes a fault read the aligned PMD-sized folio around
	 * it (force_thp_readahead): one major fault per PMD. Where a PMD
	 * mapping never counts as a hit, mmap_miss passes MMAP_LOTSAMISS
	 * after about a hundred PMDs and every later page is read on its
	 * own. 256 PMDs lie well past that point; 512 on large-block
	 * filesystems, whose folios hold fewer pages. The count is set by
	 * MMAP_LOTSAMISS, not by the PMD size: where the walk would pass
	 * MAX_PMD_WALK bytes (a 32 MiB PMD on 16 KiB pages, 512 MiB on
	 * 64 KiB arm64) it would not fit a test's time or memory.
	 */
	if (ra_folio_size(&self->fs) > ps)
		nr_pmd *= 2;
	if (nr_pmd * pmd > MAX_PMD_WALK)
		SKIP(return, "PMD %lu bytes: %lu PMDs past MMAP_LOTSAMISS, %lu MiB",
		     pmd, nr_pmd, nr_pmd * pmd >> 20);
	self->size = nr_pmd * pmd;
	/*
	 * Healthy: 1 per PMD. Broken: one per folio for the PMDs past the
	 * first hundred, 512 per PMD at 4 KiB folios, 128 at 16 KiB. At
	 * 64 KiB folios a PMD holds only 32, so the broken figure is about
	 * 3x the bound there: no bound can be 10x from both sides.
	 */
	bound = 10 * nr_pmd;

	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* A PMD-aligned mapping, so each PMD folio can be mapped whole. */
	self->map = ra_map_pmd_aligned(self->fd, 0, self->size, pmd);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_HUGEPAGE));

	/*
	 *   file  |page 0|page 1| ... |page n-2|page n-1|
	 *   walk      <----------------------------- start here, one touch a page
	 */
	ra_walk_pages(self->fd, self->map, 0, self->size / ps, true,
		      ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "descending walk, MADV_HUGEPAGE",
			 walk.majflt, "major faults", bound, SUSPECT_THP,
			 "after %zu of %zu pages, %lu PMDs", walk.touched,
			 self->size / ps, nr_pmd);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

/*
 * Control: a MADV_SEQUENTIAL mapping of a new cold file walked forwards,
 * one touch a page. It tells a broken environment from the mechanisms
 * the descending walks guard. Bound: 12 major faults per ra_pages
 * window, 192 for 128 MiB at read_ahead_kb 8192. Healthy: one, or one a
 * window where the fault retried after each async readahead counts as
 * major. Broken: one per folio, 2048 to 32768.
 */
TEST_F(descending, ascending_control)
{
	long bound = 12 * (SEQ_SIZE / (RA_KB * 1024));
	size_t ps = self->fs.page_size;
	struct ra_walk walk;
	int ret;

	self->size = SEQ_SIZE;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_SEQUENTIAL));

	ra_walk_pages(self->fd, self->map, 0, self->size / ps, false,
		      ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "ascending walk, MADV_SEQUENTIAL",
			 walk.majflt, "major faults", bound, SUSPECT_FWD,
			 "after %zu of %zu pages", walk.touched,
			 self->size / ps);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

/*
 * Map the @pmd-aligned file range [@off, @off + @len) at a PMD-aligned
 * address with MADV_HUGEPAGE, fault the middle of its second PMD and
 * tell whether that PMD is mapped by one PMD. Unmaps and drops the range.
 */
static bool hole_pmd_mapped(struct __test_metadata *_metadata, int fd,
			    size_t off, size_t len, unsigned long pmd)
{
	bool mapped;
	char *map;

	map = ra_map_pmd_aligned(fd, off, len, pmd);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, madvise(map, len, MADV_HUGEPAGE));
	FORCE_READ(map[pmd + pmd / 2]);
	mapped = check_huge_file(map, len, 1, pmd);
	munmap(map, len);
	posix_fadvise(fd, off, len + pmd, POSIX_FADV_DONTNEED);
	return mapped;
}

TEST_F_TIMEOUT(descending, pmd_hole, TIMEOUT_S)
{
	unsigned long pmd = read_pmd_pagesize();
	size_t folio = ra_folio_size(&self->fs), region;
	long not_mapped = 0, i, holes = HOLES, bound;
	int ret, pre;
	char c;

	if (!pmd)
		SKIP(return, "transparent hugepages not available");
	/*
	 * Each hole reads one PMD: at most HOLES_BYTES of them (10 holes of
	 * a 32 MiB PMD, which fit the timeout under TCG on 16 KiB pages),
	 * and at least 10, so that a tenth of them is a bound.
	 */
	if (holes * pmd > HOLES_BYTES)
		holes = HOLES_BYTES / pmd;
	if (holes < 10)
		SKIP(return, "PMD size %lu bytes: 10 holes are over %lu MiB",
		     pmd, HOLES_BYTES >> 20);
	bound = holes / 10;
	/*
	 * Hole i: PMDs A, B, C and one spare PMD the readahead may reach.
	 * B is an uncached PMD-sized hole between two cached folios:
	 *
	 *     PMD  |    A    |    B    |    C    |  spare  |
	 *                   c           c
	 *                         ^ fault, middle of B
	 *
	 * c: one cached folio, the last of A and the first of C.
	 *
	 * A fault there is no descending step and must still be read as
	 * one PMD folio and mapped by one PMD. A descending rule that only
	 * looks at the folio above takes it for a backward step, reads A
	 * together with it, finds A's folio cached and falls back to small
	 * folios for all of it.
	 */
	region = 4 * pmd;
	self->size = (holes + 1) * region;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * Another struct file reads the cached folios, one folio each
	 * (POSIX_FADV_RANDOM): the readahead state of the tested one stays
	 * untouched.
	 */
	pre = open(self->fs.file, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, pre);
	ASSERT_EQ(0, posix_fadvise(pre, 0, 0, POSIX_FADV_RANDOM));

	/*
	 * Hole 0 has no cached neighbours: it must be PMD-mapped, or the
	 * kernel and filesystem map no page cache folio with a PMD: skip.
	 */
	if (!hole_pmd_mapped(_metadata, self->fd, 0, 3 * pmd, pmd)) {
		close(pre);
		SKIP(return, "%s: a cold fault is not PMD-mapped, no PMD-sized folios",
		     self->fs.type);
	}
	/*
	 * Each hole in a mapping of its own, checked with smaps'
	 * FilePmdMapped after the fault, then unmapped and dropped.
	 * Healthy: none not PMD-mapped; broken: all of them.
	 */
	for (i = 1; i <= holes && not_mapped <= ra_limit(bound); i++) {
		size_t off = i * region;

		/*
		 * Each hole is a miss that no hit offsets where PMD mappings
		 * do not count as hits; past MMAP_LOTSAMISS misses forced THP
		 * readahead would stop (madv_hugepage's case, not this one):
		 * HOLES stays under it.
		 */
		ASSERT_EQ(1, pread(pre, &c, 1, off + pmd - folio));
		ASSERT_EQ(1, pread(pre, &c, 1, off + 2 * pmd));
		if (!hole_pmd_mapped(_metadata, self->fd, off, 3 * pmd, pmd))
			not_mapped++;
	}
	close(pre);
	RA_EXPECT_FIGURE(&self->fs, "PMD holes between cached ranges",
			 not_mapped, "holes not PMD-mapped", bound,
			 SUSPECT_HOLE, "of %ld holes, PMD %lu bytes", i - 1, pmd);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
