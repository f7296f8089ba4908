// SPDX-License-Identifier: GPL-2.0
/*
 * Page cache probes of the mmap readahead selftests: what a file has in
 * the page cache, major faults, page walks that stop at a bound, dropping
 * ranges, and the fixed pseudo-random patterns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "kselftest.h"
#include "vm_util.h"
#include "ra_cache.h"

/* Pages between two looks at a walk's counters (and mincore() batches). */
#define RA_WALK_CHECK		16
/* A walk drops what lies this many bytes behind it, to bound its RSS. */
#define RA_WALK_ZAP		(16UL << 20)
/* How long ra_drop_cache() waits for pages that stay, in ms */
#define RA_DROP_WAIT_MS		4000

/**
 * ra_drop_cache() - empty a file's page cache and check that it is empty
 * @fs: filesystem of the file; @fs->why gets what stayed, or the error
 * @fd: open file, not mapped anywhere
 * @size: file size in bytes
 *
 * POSIX_FADV_DONTNEED drops only clean, unlocked folios nothing else
 * holds: one under its read, or that another task has locked or holds
 * (taken off the LRU by reclaim or compaction, under migration), stays
 * for a moment. While ra_cached_pages() finds pages (cachestat() counts
 * folios under their read too), the file is written back and its
 * filesystem synced once, and DONTNEED is tried again after 1, 2, 4 ...
 * 512 ms, then every 512 ms, until RA_DROP_WAIT_MS have passed.
 *
 * Return: 0 when nothing is resident; KSFT_SKIP with @fs->why naming
 * what stayed; -1 with @fs->why set on error.
 */
int ra_drop_cache(struct ra_fs *fs, int fd, size_t size)
{
	unsigned int ms = 0, waited = 0;
	unsigned char *vec;
	size_t first = 0;
	long resident;
	int err;
	void *p;

	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return ra_fs_fail(fs, "mapping the file to see its page cache");
	for (;;) {
		err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		resident = err ? 0 : ra_cached_pages(fd, p, 0, size);
		if (resident < 0)
			err = errno;
		if (err || !resident || waited >= RA_DROP_WAIT_MS)
			break;
		if (!ms && (fdatasync(fd) || syncfs(fd))) {
			err = errno;
			break;
		}
		ms = ms ? (ms < 512 ? 2 * ms : ms) : 1;
		usleep(ms * 1000);
		waited += ms;
	}
	/* The first page that stayed and mincore() sees (uptodate) */
	vec = resident > 0 ? malloc(size / psize() + 1) : NULL;
	if (vec && !mincore(p, size, vec))
		while (first < size / psize() && !(vec[first] & 1))
			first++;
	free(vec);
	munmap(p, size);
	errno = err;
	if (err)
		return ra_fs_fail(fs, "dropping the file from the page cache");
	if (resident)
		return ra_fs_skip(fs,
				  "%ld pages stayed cached (the first uptodate at page %zu of %zu) after a sync and DONTNEED for %u ms",
				  resident, first, size / psize(), waited);
	return 0;
}

/**
 * ra_resident_pages() - count resident pages in a mapping, by mincore()
 * @addr: page-aligned start of the range
 * @len: length of the range in bytes
 *
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
 * ra_majflt() - major faults of the calling process so far
 *
 * A major fault is a page cache miss in filemap_fault(): the faulting
 * task had to start the read (and any readahead) itself.
 *
 * Return: ru_majflt of RUSAGE_SELF, or -1 when getrusage() fails.
 */
long ra_majflt(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? -1 : ru.ru_majflt;
}

/**
 * ra_limit() - the count at which a measured walk may stop
 * @bound: the test's bound, in major faults or pages missed
 *
 * Past its bound a walk's verdict is known: stopping there keeps a broken
 * kernel as fast to test as a healthy one.
 *
 * Return: @bound, or LONG_MAX when READAHEAD_FULL_RUN=1 (whole figures).
 */
long ra_limit(long bound)
{
	const char *full = getenv(RA_ENV_FULL);

	return full && !strcmp(full, "1") ? LONG_MAX : bound;
}

/**
 * ra_walk_bytes() - most page cache a walk of a file mapping keeps
 * @ra_kb: read_ahead_kb of the walk, in KiB
 *
 * Return: in bytes, the 32 MiB ra_walk_pages() keeps behind it and two
 * readahead windows ahead; a test adds what else it holds and asks for
 * the sum with ra_need_memory().
 */
size_t ra_walk_bytes(unsigned long ra_kb)
{
	return 2 * RA_WALK_ZAP + 2 * ra_kb * 1024;
}

/**
 * ra_walk_pages() - read one byte of each page, counting faults and misses
 * @fd: the file mapped at @addr
 * @addr: page-aligned start of the walk in a mapping of @fd
 * @off: file offset @addr maps, in bytes
 * @npages: number of pages to touch
 * @backwards: walk from the last page to the first
 * @limit: stop once both more than this many major faults were taken and
 *	more than this many pages were missed: past it, a bound on either
 *	count is exceeded
 * @walk: result: faults taken, pages missed and touched, whether it
 *	stopped early
 *
 * The counters are read every 16 pages; mincore() looks 16 pages ahead
 * at a time for @walk->missed, and a page it found missing (or could
 * not look at) is looked at again just before its touch. Every 16 MiB, the 16 MiB lying 16
 * to 32 MiB behind the walk are dropped (ra_drop_range()), so that on a
 * small machine no page cache left behind forces the direct reclaim
 * under which readahead's __GFP_NORETRY allocations fail: major faults
 * no readahead bug caused. Readahead's windows (read_ahead_kb, at most
 * 32 MiB here) stay clear of what is dropped.
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
		/* What the next pages hold; one found missing is looked at again */
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
			walk->stopped = walk->missed > limit &&
					ra_majflt() - start > limit;
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
 * @len: length of the slot in bytes, at least two folios
 * @folio: folio size in bytes (ra_folio_size())
 * @seed: state of the pseudo-random sequence, updated
 *
 * A read-around centred in the middle half of a slot of two windows or
 * more stays within the slot, and is counted and dropped with it.
 *
 * Return: a file offset in bytes, @base + @len / 4 plus a whole number of
 * folios, below @base + 3 * @len / 4.
 */
size_t ra_slot_spot(size_t base, size_t len, size_t folio,
		    unsigned int *seed)
{
	return base + len / 4 + ra_rand(seed) % (len / 2 / folio) * folio;
}

/**
 * ra_thrash_bound() - most pages a fault of a thrashing reader may read
 * @fs: filesystem of the file, at the read_ahead_kb of the faults
 *
 * Past MMAP_LOTSAMISS a fault reads the folio it needs; read-around back
 * reads ra_pages. The bound is their geometric mean: at read_ahead_kb
 * 16384 healthy and broken each lie 16x or more from it.
 *
 * Return: sqrt(folio pages * ra_pages), in pages per fault.
 */
long ra_thrash_bound(const struct ra_fs *fs)
{
	return ra_isqrt(ra_folio_size(fs) / fs->page_size * ra_pages(fs));
}

/**
 * ra_map_pmd_aligned() - map a file range at a PMD-aligned address
 * @fd: the file
 * @off: file offset of the range in bytes, a multiple of @pmd
 * @len: length of the range in bytes
 * @pmd: PMD size in bytes (read_pmd_pagesize())
 *
 * A PMD-sized folio can be mapped by a PMD only where the virtual and the
 * file address agree modulo the PMD size.
 *
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
 * ra_isqrt() - integer square root
 * @n: the number
 *
 * A bound as far from a healthy figure as from a broken one is their
 * geometric mean, sqrt(healthy * broken).
 *
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
 * ra_cached_pages() - pages of a file range in the page cache
 * @fd: the file
 * @map: a mapping of the whole file from offset 0, or NULL
 * @off: file offset of the range in bytes
 * @len: length of the range in bytes
 *
 * cachestat() counts folios from their insertion, still locked under
 * their read; before 6.5 (no cachestat()), mincore() over @map counts
 * them once uptodate. Either counts the page cache, not page tables.
 *
 * Return: the number of pages, or -1 on error or without cachestat()
 * when @map is NULL (errno set).
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
 * ra_drop_range() - unmap a file range and drop it from the page cache
 * @fd: the file
 * @map: a mapping of the whole file, from offset 0
 * @off: file offset of the range in bytes, page-aligned
 * @len: length of the range in bytes
 *
 * MADV_DONTNEED, then POSIX_FADV_DONTNEED (pages mapped elsewhere stay):
 * the range is cold again, and the struct file's readahead state
 * (mmap_miss) is left as it is. A range left cached shows in the next
 * count.
 */
void ra_drop_range(int fd, const char *map, size_t off, size_t len)
{
	madvise((void *)(map + off), len, MADV_DONTNEED);
	posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
}
