// SPDX-License-Identifier: GPL-2.0
/*
 * Readahead advice: what MADV_RANDOM, MADV_SEQUENTIAL, MADV_NORMAL,
 * MADV_WILLNEED, POSIX_FADV_WILLNEED, POSIX_FADV_SEQUENTIAL,
 * POSIX_FADV_NORMAL and MADV_HUGEPAGE promise a program that maps a cold
 * file (madvise(2), posix_fadvise(2)).
 * Measured: the pages of a file range a fault or a hint brings into the
 * page cache (cachestat(), else mincore()), inside and outside the range
 * the hint asks for, or the major faults of a walk, mostly against a
 * control: the same fault without the advice. Bounds are in pages of
 * ra_pages (mostly read_ahead_kb 16 MiB: 4096 pages at 4 KiB, 256 at
 * 64 KiB), of folios or of the control, a tenth of what a broken kernel
 * gives, where a healthy one gives none of it, or the geometric mean of
 * healthy and broken; each test says its bound and both figures.
 * Broken: the hint ignored or misread, so that a range stays cold, a
 * window keeps the wrong size, or a random fault reads a whole window.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		16384UL
/* The file, in ra windows: every probe lies well inside it. */
#define FILE_WINDOWS	8
/* Faults of madv_random, one per slot of two windows; its file. */
#define RANDOM_FAULTS	3
#define RANDOM_WINDOWS	12
/* Room for two uncapped folios of 128 MiB (arm64, 64 KiB pages). */
#define THP_FILE	(512UL << 20)
#define THP_RA_KB	128UL
/* madv_hugepage_forward's walk: 32 pairs of 2 MiB folios; its end, mapped again */
#define THP_WALK	(128UL << 20)
#define THP_TAIL	(16UL << 20)
/*
 * madv_sequential_after_random: random faults at the default window,
 * then an in-order walk of SEQ_WALK at SEQ_KB.
 */
#define SEQ_RANDOM_FAULTS	(3 * RA_MMAP_LOTSAMISS)
#define SEQ_RANDOM_KB		128UL
#define SEQ_KB			8192UL
#define SEQ_WALK		(32UL << 20)

FIXTURE(advice) {
	struct ra_fs fs;
	int fd;
	char *map;
	char *map2;
	size_t size;
	size_t ra;		/* ra window in bytes */
	unsigned long ra_pages;
	size_t folio;
};

FIXTURE_VARIANT(advice) {
	const struct ra_fs_kind *fs;
	unsigned long max_folio;	/* bytes, largest folio; 0: any size */
};

FIXTURE_VARIANT_ADD(advice, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(advice, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(advice, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(advice, xfs_64k) { .fs = &ra_xfs_64k };
/* btrfs: BTRFS_MAX_BLOCKS_PER_FOLIO; f2fs: large folios if immutable */
FIXTURE_VARIANT_ADD(advice, btrfs_4k) { .fs = &ra_btrfs_4k, .max_folio = 8 * sizeof(long) * 4096 };
FIXTURE_VARIANT_ADD(advice, f2fs_4k) { .fs = &ra_f2fs_4k, .max_folio = 4096 };

FIXTURE_SETUP(advice)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	self->map2 = MAP_FAILED;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* At most three windows cached at once, or one walk. */
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB) +
			     2 * RA_KB * 1024);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->folio = ra_folio_size(&self->fs);
}

FIXTURE_TEARDOWN(advice)
{
	if (self->map2 != MAP_FAILED)
		munmap(self->map2, self->size);
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

/* Pages of a file range (a whole number of pages) not in the page cache. */
static long uncached_pages(int fd, const char *map, size_t off, size_t len)
{
	long n = ra_cached_pages(fd, map, off, len);

	return n < 0 ? n : (long)(len / psize()) - n;
}

/* Make and map the cold test file of @windows ra windows at RA_KB. */
static int advice_file(struct _test_data_advice *self, size_t windows)
{
	self->ra = RA_KB * 1024;
	self->size = windows * self->ra;
	self->ra_pages = self->ra / self->fs.page_size;
	return ra_file_map(&self->fs, self->size, RA_KB, &self->fd,
			   &self->map);
}

/*
 * Touch every page of [@off, @off + @len) of @map that is in the page
 * cache, in order, and no other: a fault on a resident page reads
 * nothing itself, so whatever is read past the range is readahead.
 */
static int touch_cached(const char *map, size_t off, size_t len, size_t ps)
{
	unsigned char *vec = malloc(len / ps);
	size_t i;

	if (!vec || mincore((void *)(map + off), len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < len / ps; i++)
		if (vec[i] & 1)
			FORCE_READ(map[off + i * ps]);
	free(vec);
	return 0;
}

/*
 * MADV_RANDOM (VM_RAND_READ): a fault reads only the folio it needs, from
 * the first fault on, and touching pages another reader brought in reads
 * nothing more. Bound per fault: 10 folios. Healthy: 1 folio, 10x under.
 * Broken (read-around): ra_pages, 25x over (64 KiB folios on 4 KiB pages)
 * or more. Then the pages a plain mapping's fault read around, touched
 * through the MADV_RANDOM mapping: the pages cached past them, against
 * what the same touches through the plain mapping add there (the
 * control, where async readahead reads on). Bound: a tenth of the
 * control's. Healthy: none, the control half a window. Broken (async
 * readahead for the advised mapping): half a window, the control a
 * window, 5x over. A kernel whose plain reader reads nothing past
 * either has nothing for the advice to stop: bound 0, and none read.
 */
TEST_F(advice, madv_random)
{
	size_t ps = self->fs.page_size, probe, win, past_off;
	long cached, bound, past, control;
	int ret;

	ret = advice_file(self, RANDOM_WINDOWS);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_RANDOM));

	/*
	 * One fault in the middle of each slot of two windows, so that a
	 * read-around would stay inside the slot:
	 *
	 *   0        2 ra       4 ra       6 ra              12 ra
	 *   |----x----|----x----|----x----|........ ... ......|
	 *        ^ a fault at 1 ra, 3 ra, 5 ra; 6 ra on is for the marker
	 */
	force_read_pages(self->map + self->ra, RANDOM_FAULTS, 2 * self->ra);
	cached = ra_cached_pages(self->fd, self->map, 0, 6 * self->ra);
	ASSERT_LE(0, cached);
	bound = 10 * RANDOM_FAULTS * (self->folio / ps);
	RA_EXPECT_FIGURE(&self->fs, "MADV_RANDOM faults", cached, "pages",
			 bound, "VM_RAND_READ ignored, a fault reads around instead of its folio",
			 "%d faults, %zu pages a folio", RANDOM_FAULTS,
			 self->folio / ps);
	ASSERT_LE(1, cached) TH_LOG("nothing read: the faults did not happen");

	/*
	 * A plain mapping of the same struct file reads around a fault at
	 * 8 ra, PG_readahead somewhere in what it reads; the MADV_RANDOM
	 * mapping then touches every cached page there, the marker too:
	 *
	 *   7.5 ra         8 ra          9 ra                     12 ra
	 *   |==============x=============|------------------------|
	 *    read-around by the plain map, past it: stays cold
	 *    wherever it lies
	 */
	self->map2 = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map2);
	probe = 8 * self->ra;
	win = probe - self->ra / 2;
	past_off = probe + self->ra;
	FORCE_READ(self->map2[probe]);
	ASSERT_EQ(0, touch_cached(self->map, win, past_off - win, ps));
	past = ra_cached_pages(self->fd, self->map, past_off,
			       self->size - past_off);
	ASSERT_EQ(0, touch_cached(self->map2, win, past_off - win, ps));
	control = ra_cached_pages(self->fd, self->map, past_off,
				  self->size - past_off) - past;
	RA_EXPECT_FIGURE(&self->fs, "MADV_RANDOM faults on a read-around",
			 past, "pages past it", control / 10,
			 "async readahead runs for a VM_RAND_READ mapping",
			 "the same touches through a plain mapping add %ld",
			 control);
}

/*
 * A WILLNEED hint on a cold range of one ra window (force_page_cache_ra()
 * reads up to max(io_pages, ra_pages) pages a call) brings all of it into
 * the page cache, and nothing else. Bounds: ra_pages / 10 left uncached
 * inside, ra_pages / 10 cached outside. Healthy: none of either. Broken
 * (hint ignored or its offset misread): the whole range, 10x over.
 * The mapping starts two windows into the file, so that the VMA's file
 * offset counts:
 *
 *   file  0          2 ra        3 ra        4 ra           8 ra
 *         |----------|===========|-----------|-- ... -------|
 *   map              [ advised   ] ...
 */
static void willneed(struct __test_metadata *_metadata, struct ra_fs *fs,
		     int fd, char *map, char *vma, size_t ra, bool madv)
{
	unsigned long advised = ra / fs->page_size;
	long inside, outside;
	int err;

	err = madv ? madvise(vma, ra, MADV_WILLNEED) :
		     posix_fadvise(fd, 2 * ra, ra, POSIX_FADV_WILLNEED);
	ASSERT_EQ(0, err);
	inside = uncached_pages(fd, map, 2 * ra, ra);
	outside = ra_cached_pages(fd, map, 0, FILE_WINDOWS * ra) -
		  ra_cached_pages(fd, map, 2 * ra, ra);
	RA_EXPECT_FIGURE(fs, madv ? "MADV_WILLNEED range" :
			 "POSIX_FADV_WILLNEED range", inside,
			 "pages left uncached", advised / 10,
			 "WILLNEED read nothing, or another range",
			 "of %lu pages advised", advised);
	RA_EXPECT_FIGURE(fs, madv ? "MADV_WILLNEED outside the range" :
			 "POSIX_FADV_WILLNEED outside the range", outside,
			 "pages cached", advised / 10,
			 "WILLNEED read another range than advised",
			 "file of %d ra windows", FILE_WINDOWS);
}

TEST_F(advice, madv_willneed)
{
	char *vma;
	int ret;

	ret = advice_file(self, FILE_WINDOWS);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	vma = mmap(NULL, 2 * self->ra, PROT_READ, MAP_SHARED, self->fd,
		   2 * self->ra);
	ASSERT_NE(MAP_FAILED, vma);
	willneed(_metadata, &self->fs, self->fd, self->map, vma, self->ra,
		 true);
	munmap(vma, 2 * self->ra);
}

TEST_F(advice, fadv_willneed)
{
	int ret;

	ret = advice_file(self, FILE_WINDOWS);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	willneed(_metadata, &self->fs, self->fd, self->map, NULL, self->ra,
		 false);
}

/*
 * A cold fault at 2 ra through the plain mapping (the control), then
 * POSIX_FADV_SEQUENTIAL, POSIX_FADV_NORMAL after it if @normal, and a
 * cold fault at 6 ra. Each fault's read is counted over two windows on
 * either side of it, wherever the kernel places it:
 *
 *   0           2 ra          4 ra          6 ra          8 ra
 *   |------------x------------|-------------x-------------|
 *    control: no advice yet    after the advice
 *
 * Return: the pages the advised fault read, or -1 after a skip;
 * *@control, those the control read.
 */
static long advised_fault(struct __test_metadata *_metadata,
			  struct _test_data_advice *self, bool normal,
			  long *control)
{
	long pages;
	int ret;

	ret = advice_file(self, FILE_WINDOWS);
	if (!ra_ready(_metadata, ret, &self->fs))
		return -1;
	FORCE_READ(self->map[2 * self->ra]);
	*control = ra_cached_pages(self->fd, self->map, 0, 4 * self->ra);
	ASSERT_LE(1, *control) TH_LOG("nothing read: the control fault did not happen");
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_SEQUENTIAL));
	if (normal)
		ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_NORMAL));
	FORCE_READ(self->map[6 * self->ra]);
	pages = ra_cached_pages(self->fd, self->map, 4 * self->ra, 4 * self->ra);
	ASSERT_LE(1, pages) TH_LOG("nothing read: the fault did not happen");
	return pages;
}

/*
 * POSIX_FADV_SEQUENTIAL: the program will read the file in order, and a
 * fault reads more of it than without the advice. Measured: the
 * control's pages per 100 the advised fault read. Bound: 66, more than
 * 1.5 times the control read. Healthy: 50, the window doubled (f2fs:
 * times seq_file_ra_mul, 2 by default). Broken (the advice leaves the
 * window as it is): 100.
 */
TEST_F(advice, fadv_sequential)
{
	long pages, control;

	pages = advised_fault(_metadata, self, false, &control);
	if (pages < 0)
		return;
	RA_EXPECT_FIGURE(&self->fs, "fault after POSIX_FADV_SEQUENTIAL, the control's read",
			 100 * control / pages, "per 100 pages", 66,
			 "POSIX_FADV_SEQUENTIAL did not widen the file's readahead",
			 "%ld pages read, %ld by the control", pages, control);
}

/*
 * POSIX_FADV_NORMAL after POSIX_FADV_SEQUENTIAL: a fault reads no more
 * than without advice. Measured: the pages the advised fault read per
 * 100 the control read. Bound: 120. Healthy: 100. Broken (the widened
 * window kept): 200.
 */
TEST_F(advice, fadv_normal)
{
	long pages, control;

	pages = advised_fault(_metadata, self, true, &control);
	if (pages < 0)
		return;
	RA_EXPECT_FIGURE(&self->fs, "fault after POSIX_FADV_SEQUENTIAL then POSIX_FADV_NORMAL",
			 100 * pages / control, "per 100 pages of the control", 120,
			 "POSIX_FADV_NORMAL left the window of POSIX_FADV_SEQUENTIAL",
			 "%ld pages read, %ld by the control", pages, control);
}

/*
 * The filesystem's folios cannot reach 2 MiB: btrfs's stop at 64 blocks
 * (forced THP readahead reads folios of that order), f2fs's test file has
 * order-0 ones (no forced THP readahead without large folios, a plain
 * read-around). Nothing to read as 2 MiB folios or PMD-map. Return: true,
 * after a SKIP, where so.
 */
static bool no_2m_folio(struct __test_metadata *_metadata, struct ra_fs *fs,
			unsigned long max_folio)
{
	if (!max_folio || max_folio >= RA_THP_FOLIO_MAX)
		return false;
	SKIP(return true, "%s folios hold at most %lu bytes: none of 2 MiB",
	     fs->type, max_folio);
}

/*
 * The control of a PMD check that failed: drop the 2 MiB at @off of @fd,
 * compact memory, fault it again through a MADV_HUGEPAGE mapping of its
 * own. Return: whether that fault is PMD-mapped; if not, memory is too
 * fragmented for readahead's __GFP_NORETRY 2 MiB folios, or the kernel
 * maps none (the PMD of this machine is 2 MiB).
 */
static bool pmd_control(int fd, char *map, size_t off)
{
	size_t thp = RA_THP_FOLIO_MAX;
	int c = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
	bool ret = false;
	char *ctl;

	ra_drop_range(fd, map, off, thp);
	if (c >= 0 && write(c, "1", 1) != 1)
		ksft_print_msg("compact_memory: %s\n", strerror(errno));
	if (c >= 0)
		close(c);
	ctl = ra_map_pmd_aligned(fd, off, thp, thp);
	if (ctl == MAP_FAILED)
		return false;
	if (!madvise(ctl, thp, MADV_HUGEPAGE)) {
		FORCE_READ(*ctl);
		ret = check_huge_file(ctl, thp, 1, thp);
	}
	munmap(ctl, thp);
	return ret;
}

/* After pmd_control(): whether an anonymous MADV_HUGEPAGE fault gets a THP */
static bool anon_thp(void)
{
	size_t thp = RA_THP_FOLIO_MAX;
	char *p = mmap(NULL, 2 * thp, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a = (char *)(((unsigned long)p + thp - 1) & ~(thp - 1));
	bool ret = false;

	if (p == MAP_FAILED)
		return false;
	if (!madvise(a, thp, MADV_HUGEPAGE)) {
		a[0] = 1;
		ret = check_huge_anon(a, thp, 1, thp);
	}
	munmap(p, 2 * thp);
	return ret;
}

/*
 * MADV_HUGEPAGE: where the PMD is 2 MiB, the fault is mapped by a PMD
 * (FilePmdMapped); wherever it is, the fault caches no more than a few
 * 2 MiB folios (RA_THP_FOLIO_MAX): where the PMD is larger (32 MiB on
 * arm64 16 KiB pages, 512 MiB on 64 KiB) no page cache folio is mapped
 * by one, and larger folios only cost memory. Bound: 4 folios of 2 MiB
 * cached in the file, and on a 2 MiB PMD, the fault PMD-mapped. Healthy:
 * 2 folios, PMD-mapped. Broken: two folios of the mapping's largest
 * order, 16 MiB (ext4 on 64 KiB pages) to 256 MiB (XFS there), 2x over
 * or more; a small folio, not PMD-mapped, even when faulted again after
 * compaction (pmd_control()), where an anonymous fault gets a THP (else
 * memory is too fragmented: a skip).
 */
TEST_F(advice, madv_hugepage_2m)
{
	size_t ps = self->fs.page_size, thp = RA_THP_FOLIO_MAX;
	unsigned long pmd = read_pmd_pagesize();
	long cached, small;
	int ret;

	if (!pmd)
		SKIP(return, "transparent hugepages not available");
	if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) > 0)
		SKIP(return, "THP disabled for this process (PR_SET_THP_DISABLE)");
	if (no_2m_folio(_metadata, &self->fs, variant->max_folio))
		return;
	self->size = THP_FILE;
	ret = ra_file_prepare(&self->fs, self->size, THP_RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = ra_map_pmd_aligned(self->fd, 0, self->size, thp);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_HUGEPAGE));
	/* 131 MiB: inside an uncapped folio of 128 MiB too */
	FORCE_READ(self->map[(128UL << 20) + 3 * (thp / 2)]);
	cached = ra_cached_pages(self->fd, self->map, 0, self->size);
	ASSERT_LE(1, cached) TH_LOG("nothing read: the fault did not happen");
	RA_EXPECT_FIGURE(&self->fs, "MADV_HUGEPAGE fault", cached,
			 "pages cached", 4 * thp / ps,
			 "forced THP readahead folios not capped at 2 MiB",
			 "PMD %lu bytes", pmd);
	if (pmd != thp)
		return;
	/* The 2 MiB folio of the fault, [130 MiB, 132 MiB) */
	small = !check_huge_file(self->map, self->size, 1, thp) &&
		!pmd_control(self->fd, self->map, (128UL << 20) + thp);
	if (small && !anon_thp())
		SKIP(return, "no THP for an anonymous fault after compaction either");
	RA_EXPECT_FIGURE(&self->fs, "MADV_HUGEPAGE fault, PMD-mapped", small,
			 "not PMD-mapped", 0, "no forced THP readahead, a small folio",
			 "PMD %lu bytes, also after compaction", pmd);
}

/*
 * MADV_SEQUENTIAL after random faults on the same struct file: a
 * VM_SEQ_READ fault goes to page_cache_sync_ra() before the mmap_miss
 * gate of do_sync_mmap_readahead(), so the advice still gets readahead
 * once random faults have put mmap_miss past MMAP_LOTSAMISS. It is what a
 * program that knows its next phase is sequential does (madvise(2):
 * "expect page references in sequential order"), and the way out of a
 * sticky mmap_miss that needs no reopen. Measured: major faults of an
 * in-order walk of 32 MiB through a MADV_SEQUENTIAL mapping, after
 * 3 * MMAP_LOTSAMISS random faults through a plain one. Bound:
 * sqrt(windows * folios) of the walk, 45 (64 KiB folios) to 181 (4 KiB).
 * Healthy: 1 to 4, one per window where a mid-file VM_SEQ_READ miss
 * sets no PG_readahead (7.3 does not mark it), 11x
 * under or more. Broken (the advice gated by mmap_miss): one per folio,
 * 512 to 8192, 11x over or more.
 */
TEST_F(advice, madv_sequential_after_random)
{
	size_t ps = self->fs.page_size, spacing, seq_off;
	struct ra_walk walk;
	long bound;
	char *seq;
	int ret;

	/*
	 * One struct file, two mappings:
	 *
	 *   0                 random region              seq_off
	 *   |-x------x------x--- ... ---x------|=============================|
	 *     ^ plain mapping: single pages      ^ MADV_SEQUENTIAL mapping:
	 *       8 windows apart at SEQ_RANDOM_KB   SEQ_WALK in order at SEQ_KB
	 */
	spacing = 8 * SEQ_RANDOM_KB * 1024;
	if (spacing < 2 * self->folio)
		spacing = 2 * self->folio;
	seq_off = SEQ_RANDOM_FAULTS * spacing;
	self->size = seq_off + SEQ_WALK;
	bound = ra_isqrt(SEQ_WALK / (SEQ_KB * 1024) * (SEQ_WALK / self->folio));
	ret = ra_need_memory(&self->fs, SEQ_RANDOM_FAULTS * SEQ_RANDOM_KB *
			     1024 + ra_walk_bytes(SEQ_KB));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_map(&self->fs, self->size, SEQ_RANDOM_KB, &self->fd,
			  &self->map);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ra_assert_random_phase(_metadata, self->map, SEQ_RANDOM_FAULTS, spacing);

	/*
	 * A wider window for the walk: POSIX_FADV_NORMAL copies the disk's
	 * new ra_pages into the struct file; mmap_miss stays.
	 */
	ASSERT_EQ(0, ra_set_read_ahead_kb(&self->fs, SEQ_KB))
		TH_LOG("%s", self->fs.why);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_NORMAL));
	seq = mmap(NULL, SEQ_WALK, PROT_READ, MAP_SHARED, self->fd, seq_off);
	ASSERT_NE(MAP_FAILED, seq);
	ASSERT_EQ(0, madvise(seq, SEQ_WALK, MADV_SEQUENTIAL));
	ra_walk_pages(self->fd, seq, seq_off, SEQ_WALK / ps, false,
		      ra_limit(bound), &walk);
	munmap(seq, SEQ_WALK);
	RA_EXPECT_FIGURE(&self->fs, "MADV_SEQUENTIAL walk after random faults",
			 walk.majflt, "major faults", bound,
			 "VM_SEQ_READ faults gated by mmap_miss, which the random faults left past MMAP_LOTSAMISS",
			 "after %zu of %lu pages, %d random faults before",
			 walk.touched, SEQ_WALK / ps, SEQ_RANDOM_FAULTS);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

/*
 * MADV_SEQUENTIAL: a program that starts reading a file in order from
 * its middle needs what lies ahead of its start, not what lies behind
 * it. Measured: a cold fault at 4 ra through the MADV_SEQUENTIAL mapping,
 * against a cold fault at 2 ra before the advice (the control): of the
 * pages the control read from its fault on, those left uncached from the
 * advised fault on; and the pages cached in the window below the advised
 * fault (4 ra is a multiple of any folio: none holding the fault starts
 * below it). Bounds: a tenth of the control's, and a folio. Healthy: none
 * of either (a window read from the fault, the control half a window).
 * Broken: read around the fault, as the control, half a window below,
 * ra_pages / 2 over a bound of 1 (16 on 64 KiB folios); the fault's folio
 * only, as MADV_RANDOM, the control's pages less a folio uncached, 9x
 * over or more.
 *
 *   1.5 ra  2 ra  2.5 ra  3 ra                 4 ra                 5 ra
 *   |=======x=======|-----|--------------------x====================|
 *    control read-around   below: must stay     ^ advised fault, then
 *                          cold                   what it reads
 */
TEST_F(advice, madv_sequential_ahead)
{
	size_t ps = self->fs.page_size;
	long control, below, ahead;
	int ret;

	ret = advice_file(self, FILE_WINDOWS);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	FORCE_READ(self->map[2 * self->ra]);
	control = ra_cached_pages(self->fd, self->map, 2 * self->ra, self->ra);
	ASSERT_LE(1, control) TH_LOG("nothing read: the control fault did not happen");
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_SEQUENTIAL));
	FORCE_READ(self->map[4 * self->ra]);
	below = ra_cached_pages(self->fd, self->map, 3 * self->ra, self->ra);
	ahead = uncached_pages(self->fd, self->map, 4 * self->ra, control * ps);
	ASSERT_LE(0, below);
	RA_EXPECT_FIGURE(&self->fs, "MADV_SEQUENTIAL fault, the window below it",
			 below, "pages cached", self->folio / ps,
			 "VM_SEQ_READ faults read around instead of ahead",
			 "%ld of %ld left uncached ahead", ahead, control);
	RA_EXPECT_FIGURE(&self->fs, "MADV_SEQUENTIAL fault, as far ahead as the control",
			 ahead, "pages left uncached", control / 10,
			 "VM_SEQ_READ faults read their folio only, as VM_RAND_READ ones",
			 "the control read %ld from its fault on", control);
}

/*
 * MADV_NORMAL after MADV_RANDOM gives the mapping its read-around back:
 * madvise(2) calls it "no special treatment", and it clears VM_RAND_READ
 * with VM_SEQ_READ. Programs switch advice between phases of their work.
 * Measured: pages of [2 ra, 6 ra) cached by one cold fault at 4 ra after
 * MADV_RANDOM then MADV_NORMAL, short of what a cold fault at 1 ra
 * through a second, never advised mapping caches in [0, 2 ra) (the
 * control). Bound: a tenth of the control. Healthy: none short, the same
 * read-around. Broken (VM_RAND_READ left set): the fault's folio only,
 * ra_pages less a folio short, 9x over or more.
 *
 *   0     1 ra        2 ra        4 ra        6 ra
 *   |-----x-----------|-----------x-----------|
 *    plain mapping:    advised mapping: MADV_RANDOM,
 *    the control fault then MADV_NORMAL
 */
TEST_F(advice, madv_normal_after_random)
{
	long pages, control;
	char *plain;
	int ret;

	ret = advice_file(self, FILE_WINDOWS);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	plain = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, plain);
	FORCE_READ(plain[self->ra]);
	control = ra_cached_pages(self->fd, plain, 0, 2 * self->ra);
	munmap(plain, self->size);
	ASSERT_LE(1, control) TH_LOG("nothing read: the control fault did not happen");
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_RANDOM));
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_NORMAL));
	FORCE_READ(self->map[4 * self->ra]);
	pages = ra_cached_pages(self->fd, self->map, 2 * self->ra, 4 * self->ra);
	ASSERT_LE(1, pages) TH_LOG("nothing read: the fault did not happen");
	RA_EXPECT_FIGURE(&self->fs, "fault after MADV_RANDOM then MADV_NORMAL",
			 control - pages, "pages short of a never advised fault",
			 control / 10,
			 "MADV_NORMAL left VM_RAND_READ set, the fault read its folio only",
			 "%ld pages read, %ld by the control fault (ra_pages %lu)",
			 pages, control, self->ra_pages);
}

/*
 * Forced THP readahead stays ahead of a forward reader: a MADV_HUGEPAGE
 * fault reads two 2 MiB folios (RA_THP_FOLIO_MAX) and marks the second
 * with PG_readahead (async_size one folio), so that a walk reaching it
 * starts the next pair while it reads. The two-folio read "so we get
 * the chance to actually readahead" is a comment of
 * do_sync_mmap_readahead(); what a program sees of it is a forward walk
 * of a MADV_HUGEPAGE mapping that stalls once, at read_ahead_kb 128 as
 * well as at larger windows. Measured: pages of an in-order walk of
 * 128 MiB not in the page cache when the walk reached them (a fault
 * retried after async readahead is no miss, though kernels without
 * per-VMA locks count it major). Bound: sqrt(pairs of folios walked) =
 * 5. Healthy: 1, 5x under. Broken (the pair read unmarked): one per
 * pair, 32, 6x over. Where the PMD is 2 MiB, the last 16 MiB of the
 * walk must then be PMD-mapped: broken (async readahead falling back to
 * folios of read_ahead_kb), they are not; where a fault's own 2 MiB is not
 * either, after compaction (pmd_control(): fragmented memory, or no large
 * folio in this filesystem), a skip. Under PR_SET_THP_DISABLE too.
 */
TEST_F(advice, madv_hugepage_forward)
{
	size_t ps = self->fs.page_size, pairs = THP_WALK / (2 * RA_THP_FOLIO_MAX);
	long bound = ra_isqrt(pairs), small;
	struct ra_walk walk;
	char *tail;
	int ret;

	if (!read_pmd_pagesize())
		SKIP(return, "transparent hugepages not available");
	if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) > 0)
		SKIP(return, "THP disabled for this process (PR_SET_THP_DISABLE)");
	if (no_2m_folio(_metadata, &self->fs, variant->max_folio))
		return;
	self->size = THP_WALK;
	ret = ra_need_memory(&self->fs, ra_walk_bytes(4 * RA_THP_FOLIO_MAX / 1024));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, self->size, THP_RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = ra_map_pmd_aligned(self->fd, 0, self->size,
				       RA_THP_FOLIO_MAX);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_HUGEPAGE));
	ra_walk_pages(self->fd, self->map, 0, self->size / ps, false,
		      ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "MADV_HUGEPAGE in-order walk", walk.missed,
			 "pages missed", bound,
			 "forced THP readahead sets no PG_readahead",
			 "%ld major faults after %zu of %zu pages, %zu pairs of 2 MiB folios",
			 walk.majflt, walk.touched, self->size / ps, pairs);
	ASSERT_LE(1, walk.missed) TH_LOG("no page missed: the file was not cold");
	/*
	 * The folios async readahead read last, mapped again on their own,
	 * where the PMD is 2 MiB: they must be PMD-mapped (FilePmdMapped).
	 * Where it is larger no forced THP folio is PMD-mapped, and async
	 * readahead may build folios larger than 2 MiB: nothing to see.
	 */
	if (walk.stopped || read_pmd_pagesize() != RA_THP_FOLIO_MAX)
		return;
	tail = ra_map_pmd_aligned(self->fd, self->size - THP_TAIL, THP_TAIL,
				  RA_THP_FOLIO_MAX);
	ASSERT_NE(MAP_FAILED, tail);
	ASSERT_EQ(0, madvise(tail, THP_TAIL, MADV_HUGEPAGE));
	force_read_pages(tail, THP_TAIL / RA_THP_FOLIO_MAX, RA_THP_FOLIO_MAX);
	small = !check_huge_file(tail, THP_TAIL, THP_TAIL / RA_THP_FOLIO_MAX,
				 RA_THP_FOLIO_MAX);
	munmap(tail, THP_TAIL);
	if (small && !pmd_control(self->fd, self->map, 0))
		SKIP(return, "no fault is PMD-mapped after compaction: nothing to judge");
	RA_EXPECT_FIGURE(&self->fs, "MADV_HUGEPAGE in-order walk, its last 16 MiB",
			 small, "not all PMD-mapped", 0,
			 "async readahead after forced THP readahead falls back to folios of read_ahead_kb",
			 "PMD %lu bytes", read_pmd_pagesize());
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
