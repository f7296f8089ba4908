/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page cache probes of the mmap readahead selftests (ra_cache.c), the
 * figure line and its check, and a reader's state past MMAP_LOTSAMISS.
 */
#ifndef __RA_CACHE_H__
#define __RA_CACHE_H__

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>

#include "ra_fs.h"

/*
 * MMAP_LOTSAMISS of mm/filemap.c (100 in 7.3): past this many more misses
 * than hits on a struct file, its faults get no read-around. That there
 * is such a limit is what programs see (a random reader stops paying for
 * windows it never uses); its value is not, and no interface exposes it.
 * Random phases pass it three times over, but those of the tests that
 * count hits wrongly taken back (RA_THRASH_FAULTS, random_reader's
 * warm-up): each fault past the limit is one more such hit a broken
 * kernel must take before its test sees read-around come back.
 */
#define RA_MMAP_LOTSAMISS	100

/* The largest folio forced THP readahead (VM_HUGEPAGE) builds: 2 MiB. */
#define RA_THP_FOLIO_MAX	(2UL << 20)

/* Set to 1 to walk whole regions even after a bound is exceeded. */
#define RA_ENV_FULL		"READAHEAD_FULL_RUN"

/**
 * struct ra_walk - result of a page walk
 * @majflt: major faults taken by the walk
 * @missed: pages not in the page cache when the walk reached them: each
 *	one a read the walk waited for, where a retried fault counted major
 *	after async readahead (kernels without per-VMA locks) is not one
 * @touched: pages touched before the walk ended
 * @stopped: true when the walk ended early, both counts past its limit
 */
struct ra_walk {
	long majflt;
	long missed;
	size_t touched;
	bool stopped;
};

int ra_drop_cache(struct ra_fs *fs, int fd, size_t size);
long ra_resident_pages(const void *addr, size_t len);
long ra_majflt(void);
long ra_limit(long bound);
void ra_walk_pages(int fd, const char *addr, size_t off, size_t npages,
		   bool backwards, long limit, struct ra_walk *walk);
size_t ra_walk_bytes(unsigned long ra_kb);
void ra_shuffle(unsigned int *order, unsigned int n, unsigned int seed);
size_t ra_slot_spot(size_t base, size_t len, size_t folio,
		    unsigned int *seed);
long ra_thrash_bound(const struct ra_fs *fs);
char *ra_map_pmd_aligned(int fd, size_t off, size_t len, unsigned long pmd);
unsigned long ra_isqrt(unsigned long n);
long ra_cached_pages(int fd, const char *map, size_t off, size_t len);
void ra_drop_range(int fd, const char *map, size_t off, size_t len);

#ifdef __KSELFTEST_HARNESS_H
/**
 * RA_EXPECT_FIGURE() - print a figure and check its bound
 * @fs: filesystem the figure was measured on
 * @what: what was measured
 * @measured: the figure, in @unit
 * @unit: unit of @measured and @bound
 * @bound: the test fails when @measured is above it
 * @suspect: the mechanism a figure above @bound points to, printed then
 * @fmt: printf format (a literal) of the figure's note, with its arguments
 *
 * Prints "figure <what>: <measured> <unit>, bound <bound>, ra_pages <n>,
 * folio <bytes> bytes; <note>": ra_pages and the folio size are what
 * every bound of the suite is derived from; scripts that tabulate runs
 * read this format. ra_pages is open-coded: tests name locals ra_pages.
 */
#define RA_EXPECT_FIGURE(fs, what, measured, unit, bound, suspect, fmt, ...)	\
	do {								\
		const struct ra_fs *__ra_fs = (fs);			\
		long __ra_fig = (measured), __ra_lim = (bound);		\
									\
		ksft_print_msg("figure %s: %ld %s, bound %ld, ra_pages %lu, folio %lu bytes; " \
			       fmt "\n", what, __ra_fig, unit, __ra_lim,	\
			       __ra_fs->ra_kb * 1024 / __ra_fs->page_size,	\
			       ra_folio_size(__ra_fs), ##__VA_ARGS__);	\
		EXPECT_LE(__ra_fig, __ra_lim)				\
			TH_LOG("suspected: %s", suspect);		\
	} while (0)

/**
 * ra_assert_random_phase() - fault single pages far apart, all misses
 * @_metadata: the running test
 * @map: mapping of the file
 * @nr: number of faults, above MMAP_LOTSAMISS, at most 4 times it
 * @spacing: bytes between two faulted pages, so that no fault lands in
 *	another's read-around window
 *
 * Touches page 0, @spacing, 2 * @spacing, ... of @map in a fixed random
 * order: each touch a page cache miss that the fault path counts in
 * file->f_ra.mmap_miss (but on a VM_EXEC mapping). Fails the test unless
 * at least two thirds of them were major faults: without real misses
 * mmap_miss never passes the limit and the test proves nothing.
 */
static inline void ra_assert_random_phase(struct __test_metadata *_metadata,
					  const char *map, unsigned int nr,
					  size_t spacing)
{
	unsigned int order[4 * RA_MMAP_LOTSAMISS], i;
	long start = ra_majflt(), majflt;

	ASSERT_LE(nr, ARRAY_SIZE(order));
	ra_shuffle(order, nr, 12345);
	for (i = 0; i < nr; i++)
		FORCE_READ(map[order[i] * spacing]);
	majflt = ra_majflt() - start;
	ksft_print_msg("random phase: %ld major faults for %u faults %zu bytes apart\n",
		       majflt, nr, spacing);
	ASSERT_GE(majflt, 2 * (long)nr / 3)
		TH_LOG("random faults were not page cache misses: the test proves nothing");
}

/*
 * A thrashing reader (ra_assert_thrashing()): opened at RA_THRASH_WARM_KB,
 * RA_THRASH_FAULTS faults RA_THRASH_SPACING apart (wider than any folio
 * or read-around window), then read_ahead_kb RA_THRASH_KB.
 */
#define RA_THRASH_FAULTS	(RA_MMAP_LOTSAMISS + 10)
#define RA_THRASH_SPACING	(2UL << 20)
#define RA_THRASH_WARM_KB	128UL
#define RA_THRASH_KB		16384UL

/**
 * ra_assert_thrashing() - put a struct file in a thrashing reader's state
 * @_metadata: the running test
 * @fs: filesystem of the file, at read_ahead_kb RA_THRASH_WARM_KB
 * @fd: the file, opened cold at that read_ahead_kb
 * @map: mapping of the file from offset 0, RA_THRASH_FAULTS *
 *	RA_THRASH_SPACING bytes or more
 *
 * mmap_miss past MMAP_LOTSAMISS at the cost of small reads, then the
 * window widened to RA_THRASH_KB (POSIX_FADV_NORMAL copies it into the
 * struct file; mmap_miss stays) and the faulted range dropped. From here
 * a fault should read the folio it needs: ra_thrash_bound() per fault.
 */
static inline void ra_assert_thrashing(struct __test_metadata *_metadata,
				       struct ra_fs *fs, int fd,
				       const char *map)
{
	ra_assert_random_phase(_metadata, map, RA_THRASH_FAULTS,
			       RA_THRASH_SPACING);
	ASSERT_EQ(0, ra_set_read_ahead_kb(fs, RA_THRASH_KB))
		TH_LOG("%s", fs->why);
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL));
	ra_drop_range(fd, map, 0, RA_THRASH_FAULTS * RA_THRASH_SPACING);
}
#endif

#endif /* __RA_CACHE_H__ */
