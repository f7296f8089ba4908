/* SPDX-License-Identifier: GPL-2.0 */
/* Page cache probes, figure checks and random phases of the readahead tests */
#ifndef __RA_CACHE_H__
#define __RA_CACHE_H__

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>

#include "ra_fs.h"

/*
 * MMAP_LOTSAMISS of mm/filemap.c (100), copied as nothing exposes it:
 * past this many more misses than hits, a file's faults get no read-around.
 * Random phases pass it three times over, or by 10 only where a broken
 * kernel takes one wrong hit per fault past it before read-around comes
 * back, so that the test sees read-around come back.
 */
#define RA_MMAP_LOTSAMISS	100

#define RA_THP_FOLIO_MAX	(2UL << 20)	/* largest forced THP folio */
#define RA_ENV_FULL		"READAHEAD_FULL_RUN"	/* =1: full walks */
#define RA_WALK_ZAP		(16UL << 20)	/* bytes a walk drops at once */

/* Most page cache a walk at @ra_kb KiB keeps: 32 MiB behind, 2 windows ahead */
static inline size_t ra_walk_bytes(unsigned long ra_kb)
{
	return 2 * RA_WALK_ZAP + 2 * ra_kb * 1024;
}

struct ra_walk {		/* result of ra_walk_pages() */
	long majflt;		/* major faults taken */
	long missed;		/* pages not cached when reached (not a retried fault) */
	size_t touched;		/* pages touched */
	bool stopped;		/* ended early, both counts past its limit */
};

int ra_drop_cache(struct ra_fs *fs, int fd, size_t size);
long ra_resident_pages(const void *addr, size_t len);
long ra_majflt(void);
long ra_limit(long bound);
void ra_walk_pages(int fd, const char *addr, size_t off, size_t npages,
		   bool backwards, long limit, struct ra_walk *walk);
void ra_shuffle(unsigned int *order, unsigned int n, unsigned int seed);
size_t ra_slot_spot(size_t base, size_t len, size_t folio, unsigned int *seed);
long ra_thrash_bound(const struct ra_fs *fs);
char *ra_map_pmd_aligned(int fd, size_t off, size_t len, unsigned long pmd);
unsigned long ra_isqrt(unsigned long n);
long ra_cached_pages(int fd, const char *map, size_t off, size_t len);
void ra_drop_range(int fd, const char *map, size_t off, size_t len);

#ifdef __KSELFTEST_HARNESS_H
/**
 * RA_EXPECT_FIGURE() - print a figure, its bound and units in one format, check it
 * @fs: filesystem the figure was measured on (ra_pages open-coded: tests
 *	name locals ra_pages)
 * @what: what was measured
 * @measured: the figure, in @unit
 * @unit: unit of @measured and @bound
 * @bound: the test fails when @measured is above it
 * @suspect: mechanism a figure above @bound points to, printed then
 * @fmt: printf format (a literal) of a note, followed by its arguments
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
 * @spacing: bytes between faulted pages, beyond any read-around window
 *
 * Asserts two thirds were major faults: without real misses mmap_miss never
 * passes the limit and the test proves nothing.
 */
static inline void ra_assert_random_phase(struct __test_metadata *_metadata,
					  const char *map, unsigned int nr, size_t spacing)
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

#define RA_THRASH_FAULTS	(RA_MMAP_LOTSAMISS + 10)
#define RA_THRASH_SPACING	(2UL << 20)	/* past any folio or window */
#define RA_THRASH_WARM_KB	128UL
#define RA_THRASH_KB		16384UL

/**
 * ra_assert_thrashing() - put a struct file in a thrashing reader's state
 * @_metadata: the running test
 * @fs: filesystem of the file, at read_ahead_kb RA_THRASH_WARM_KB
 * @fd: the file, opened cold at that read_ahead_kb
 * @map: mapping of the file from 0, RA_THRASH_FAULTS * RA_THRASH_SPACING long
 * Past MMAP_LOTSAMISS with small reads, then at RA_THRASH_KB (POSIX_FADV_NORMAL
 * copies it to the file and keeps mmap_miss).
 */
static inline void ra_assert_thrashing(struct __test_metadata *_metadata,
				       struct ra_fs *fs, int fd, const char *map)
{
	ra_assert_random_phase(_metadata, map, RA_THRASH_FAULTS, RA_THRASH_SPACING);
	ASSERT_EQ(0, ra_set_read_ahead_kb(fs, RA_THRASH_KB))
		TH_LOG("%s", fs->why);
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL));
	ra_drop_range(fd, map, 0, RA_THRASH_FAULTS * RA_THRASH_SPACING);
}
#endif

#endif /* __RA_CACHE_H__ */
