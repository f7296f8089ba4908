// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "kselftest.h"
#include "vm_util.h"
#include "ra_cache.h"

#define RA_WALK_CHECK		16		/* pages per mincore() and check */
#define RA_DROP_WAIT_MS		4000

/**
 * ra_drop_cache() - empty a file's page cache and check that it is empty
 * @fs: filesystem of the file; @fs->why gets what stayed, or the error
 * @fd: open file, not mapped anywhere
 * @size: file size in bytes
 *
 * DONTNEED skips dirty folios and, for a moment, those under read or held
 * by reclaim or migration: so sync once, and retry for RA_DROP_WAIT_MS.
 * Return: 0 when nothing is cached; KSFT_SKIP with @fs->why naming what
 * stayed; -1 with @fs->why set on error.
 */
int ra_drop_cache(struct ra_fs *fs, int fd, size_t size)
{
	unsigned int ms;
	long resident;
	int err;
	void *p;

	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return ra_fs_fail(fs, "mapping the file to see its page cache");
	for (ms = 0;; ms += 10) {	/* polls every 10 ms */
		err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		resident = err ? 0 : ra_cached_pages(fd, p, 0, size);
		if (resident < 0)
			err = errno;
		if (err || !resident || ms >= RA_DROP_WAIT_MS)
			break;
		if (!ms && (fdatasync(fd) || syncfs(fd))) {
			err = errno;
			break;
		}
		usleep(10000);
	}
	munmap(p, size);
	errno = err;
	if (err)
		return ra_fs_fail(fs, "dropping the file from the page cache");
	if (resident)
		return ra_fs_skip(fs,
				  "%ld of %zu pages stayed cached after a sync and DONTNEED for %u ms",
				  resident, size / psize(), ms);
	return 0;
}

/**
 * ra_resident_pages() - count resident pages in a mapping, by mincore()
 * @addr: page-aligned start of the range
 * @len: length of the range in bytes
 * Return: the number of resident pages, or -1 on error (errno set).
 */
long ra_resident_pages(const void *addr, size_t len)
{
	size_t n = (len + psize() - 1) / psize(), i;
	unsigned char *vec = malloc(n);
	long count = 0;

	if (!vec || mincore((void *)addr, len, vec))
		count = -1;
	for (i = 0; count >= 0 && i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

/**
 * ra_majflt() - major faults (page cache misses) of this process so far
 * Return: ru_majflt of RUSAGE_SELF, or -1 when getrusage() fails.
 */
long ra_majflt(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? -1 : ru.ru_majflt;
}

/**
 * ra_limit() - count past which a walk may stop, its verdict known
 * @bound: the test's bound, in major faults or pages missed
 * Return: @bound, or LONG_MAX when READAHEAD_FULL_RUN=1 (whole figures).
 */
long ra_limit(long bound)
{
	const char *full = getenv(RA_ENV_FULL);

	return full && !strcmp(full, "1") ? LONG_MAX : bound;
}

/**
 * ra_walk_pages() - read one byte of each page, counting faults and misses
 * @fd: the file mapped at @addr
 * @addr: page-aligned start of the walk in a mapping of @fd
 * @off: file offset @addr maps, in bytes
 * @npages: number of pages to touch
 * @backwards: walk from the last page to the first
 * @limit: stop once both major faults and missed pages exceed it
 * @walk: the result
 *
 * Drops what lies 16 to 32 MiB behind, lest direct reclaim on a small machine
 * fail readahead's __GFP_NORETRY allocations; windows (<= 32 MiB) stay clear.
 */
void ra_walk_pages(int fd, const char *addr, size_t off, size_t npages,
		   bool backwards, long limit, struct ra_walk *walk)
{
	size_t ps = psize(), zap = RA_WALK_ZAP / ps, i, first, idx, lo = 0, n;
	unsigned char vec[RA_WALK_CHECK], one;
	long start = ra_majflt();

	walk->stopped = false;
	walk->missed = 0;
	for (i = 0; i < npages && !walk->stopped; i++) {
		idx = backwards ? npages - 1 - i : i;
		/* mincore() in batches; recheck what it saw missing */
		if (i % RA_WALK_CHECK == 0) {
			n = npages - i < RA_WALK_CHECK ? npages - i : RA_WALK_CHECK;
			lo = backwards ? idx + 1 - n : idx;
			if (mincore((void *)(addr + lo * ps), n * ps, vec))
				memset(vec, 0, sizeof(vec));
		}
		if (!(vec[idx - lo] & 1) &&
		    (mincore((void *)(addr + idx * ps), ps, &one) || !(one & 1)))
			walk->missed++;
		FORCE_READ(addr[idx * ps]);
		if ((i + 1) % zap == 0 && i + 1 >= 2 * zap) {
			first = backwards ? npages - (i + 1 - zap) : i + 1 - 2 * zap;
			ra_drop_range(fd, addr - off, off + first * ps, zap * ps);
		}
		if ((i + 1) % RA_WALK_CHECK == 0)
			walk->stopped = walk->missed > limit && ra_majflt() - start > limit;
	}
	walk->touched = i;
	walk->majflt = ra_majflt() - start;
}

/* A fixed linear congruential sequence: the same pattern on every run. */
static unsigned int ra_rand(unsigned int *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 8;
}

/**
 * ra_shuffle() - a fixed pseudo-random order of 0 .. @n - 1
 * @order: receives the @n indices
 * @n: number of indices
 * @seed: seed of the sequence; the same seed gives the same order
 */
void ra_shuffle(unsigned int *order, unsigned int n, unsigned int seed)
{
	unsigned int i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n; i > 1; i--) {
		j = ra_rand(&seed) % i;
		t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}

/**
 * ra_slot_spot() - a random folio in the middle half of a slot of a file
 * @base: file offset of the slot in bytes
 * @len: slot length in bytes, two windows or more to hold a read-around
 * @folio: folio size in bytes (ra_folio_size())
 * @seed: state of the pseudo-random sequence, updated
 * Return: file offset of the folio, in bytes.
 */
size_t ra_slot_spot(size_t base, size_t len, size_t folio, unsigned int *seed)
{
	return base + len / 4 + ra_rand(seed) % (len / 2 / folio) * folio;
}

/**
 * ra_thrash_bound() - most pages a fault of a thrashing reader may read
 * @fs: filesystem of the file, at the read_ahead_kb of the faults
 * Return: pages per fault, the geometric mean of a healthy fault (a folio)
 * and a broken one (ra_pages): 16x from either at read_ahead_kb 16384.
 */
long ra_thrash_bound(const struct ra_fs *fs)
{
	return ra_isqrt(ra_folio_size(fs) / fs->page_size * ra_pages(fs));
}

/**
 * ra_map_pmd_aligned() - map a file range where a PMD can map its folios
 * @fd: the file
 * @off: file offset of the range in bytes, a multiple of @pmd
 * @len: length of the range in bytes
 * @pmd: PMD size in bytes (read_pmd_pagesize())
 * Return: a read-only MAP_SHARED mapping, or MAP_FAILED (errno set).
 */
char *ra_map_pmd_aligned(int fd, size_t off, size_t len, unsigned long pmd)
{
	char *map = mmap(NULL, len + pmd, PROT_READ, MAP_SHARED, fd, off);

	if (map == MAP_FAILED)
		return map;
	munmap(map, len + pmd);
	map = (char *)(((unsigned long)map + pmd - 1) & ~(pmd - 1));
	return mmap(map, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, off);
}

/**
 * ra_isqrt() - integer square root of @n, for geometric-mean bounds
 * @n: the number
 * Return: the largest r with r * r <= @n.
 */
unsigned long ra_isqrt(unsigned long n)
{
	unsigned long r = 0;

	while ((r + 1) * (r + 1) <= n)
		r++;
	return r;
}

/**
 * ra_cached_pages() - pages of a file range in the page cache, counted by
 * cachestat() from their insertion, or without it by mincore() once uptodate
 * @fd: the file
 * @map: a mapping of the whole file from offset 0, or NULL
 * @off: file offset of the range in bytes
 * @len: length of the range in bytes
 * Return: pages cached; -1 on error or without cachestat() and @map (errno set)
 */
long ra_cached_pages(int fd, const char *map, size_t off, size_t len)
{
	struct cachestat_range range = { off, len };
	struct cachestat cs;

	if (!syscall(__NR_cachestat, fd, &range, &cs, 0))
		return cs.nr_cache;
	return map ? ra_resident_pages(map + off, len) : -1;
}

/**
 * ra_drop_range() - unmap a range, drop it from the page cache, mmap_miss kept
 * @fd: the file
 * @map: a mapping of the whole file, from offset 0
 * @off: file offset of the range in bytes, page-aligned
 * @len: length of the range in bytes
 */
void ra_drop_range(int fd, const char *map, size_t off, size_t len)
{
	madvise((void *)(map + off), len, MADV_DONTNEED);
	posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
}
