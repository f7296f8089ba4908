// SPDX-License-Identifier: GPL-2.0
/*
 * Page cache probes of the mmap readahead selftests: what a file has in
 * the page cache (mincore(), cachestat()), major fault counts, page walks
 * that stop once a bound is exceeded, dropping what a walk or a fault
 * left behind, the suite's figure line, and the fixed pseudo-random
 * patterns the tests fault in.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kselftest.h"
#include "vm_util.h"
#include "ra_cache.h"

/* Pages between two looks at the major fault counter during a walk. */
#define RA_WALK_CHECK		16
/* A walk unmaps what lies this many bytes behind it, to bound its RSS. */
#define RA_WALK_ZAP		(16UL << 20)

/* Rounds of ra_drop_cache(), each after writeback and a syncfs(). */
#define RA_DROP_ROUNDS		3

/**
 * ra_drop_cache() - empty a file's page cache and check that it is empty
 * @fs: filesystem of the file; @fs->why gets what stayed, or the error
 * @fd: open file, not mapped anywhere
 * @size: file size in bytes
 *
 * Uses POSIX_FADV_DONTNEED (never /proc/sys/vm/drop_caches), which drops
 * only clean, unlocked folios that nothing else holds: a folio still
 * dirty or under writeback stays, and so does one whose buffers its
 * filesystem cannot release yet (a journal commit pending). So when
 * mincore() still finds pages, each further round writes the file back
 * (fdatasync()) and syncs its filesystem (syncfs(): the journal commits
 * and writeback completes) before dropping again, RA_DROP_ROUNDS rounds
 * in all.
 *
 * Return: 0 when nothing is resident; KSFT_SKIP with @fs->why naming
 * what stayed (pages, and of them dirty and under writeback, from
 * cachestat()); -1 with @fs->why set on error.
 */
int ra_drop_cache(struct ra_fs *fs, int fd, size_t size)
{
	struct cachestat_range range = { 0, size };
	struct cachestat cs = { 0 };
	long resident = -1;
	int round, err;
	void *p;

	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return ra_fs_fail(fs, "mapping the file to see its page cache");
	for (round = 0; round < RA_DROP_ROUNDS; round++) {
		if (round && (fdatasync(fd) || syncfs(fd))) {
			resident = -1;
			break;
		}
		err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (err) {
			errno = err;
			resident = -1;
			break;
		}
		resident = ra_resident_pages(p, size);
		if (resident <= 0)
			break;
	}
	err = errno;
	munmap(p, size);
	if (!resident)
		return 0;
	if (resident < 0) {
		errno = err;
		return ra_fs_fail(fs, "dropping the file from the page cache");
	}
	syscall(__NR_cachestat, fd, &range, &cs, 0);
	snprintf(fs->why, sizeof(fs->why),
		 "%ld pages (%llu dirty, %llu under writeback) of the file stayed in the page cache after %d rounds of syncfs() and POSIX_FADV_DONTNEED",
		 resident, (unsigned long long)cs.nr_dirty,
		 (unsigned long long)cs.nr_writeback, RA_DROP_ROUNDS);
	return KSFT_SKIP;
}

/**
 * ra_figure() - print a measured figure in the suite's one figure format
 * @fs: filesystem the figure was measured on
 * @what: what was measured, e.g. "in-order read after random faults"
 * @measured: the figure, in @unit
 * @unit: unit of @measured and @bound: "major faults", "pages", "holes"
 * @bound: the test's bound on @measured, in @unit
 * @fmt: printf format of a note on the figure (where a walk stopped, the
 *	per-run figure), printed after "; "
 *
 * Prints "figure <what>: <measured> <unit>, bound <bound>, ra_pages <n>,
 * folio <bytes> bytes; <note>" as a TAP comment: ra_pages and the folio
 * size are the two things every bound of the suite is derived from.
 * Scripts that tabulate runs read this format. RA_EXPECT_FIGURE() prints
 * and checks in one step.
 */
void ra_figure(const struct ra_fs *fs, const char *what, long measured,
	       const char *unit, long bound, const char *fmt, ...)
{
	char note[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	ksft_print_msg("figure %s: %ld %s, bound %ld, ra_pages %lu, folio %lu bytes; %s\n",
		       what, measured, unit, bound, ra_pages(fs),
		       ra_folio_size(fs), note);
}

/**
 * ra_resident_pages() - count resident pages in a mapping
 * @addr: page-aligned start of the range
 * @len: length of the range in bytes
 *
 * Return: the number of pages mincore() reports resident, or -1 on error
 * (errno set).
 */
long ra_resident_pages(const void *addr, size_t len)
{
	size_t ps = psize(), n = (len + ps - 1) / ps, i;
	unsigned char *vec;
	long count = 0;

	vec = malloc(n);
	if (!vec)
		return -1;
	if (mincore((void *)addr, len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
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
 * Return: ru_majflt of RUSAGE_SELF, summed over all threads, or -1 when
 * getrusage() fails (which it does not for RUSAGE_SELF).
 */
long ra_majflt(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return -1;
	return ru.ru_majflt;
}

/**
 * ra_limit() - major fault count at which a measured walk may stop
 * @bound: the test's bound in major faults
 *
 * Once a walk passes its bound the verdict is known; stopping there keeps
 * a broken kernel as fast to test as a healthy one. READAHEAD_FULL_RUN=1
 * disables the early stop, to measure a broken kernel's whole figure.
 *
 * Return: @bound, or LONG_MAX when READAHEAD_FULL_RUN=1.
 */
long ra_limit(long bound)
{
	const char *full = getenv(RA_ENV_FULL);

	return full && !strcmp(full, "1") ? LONG_MAX : bound;
}

/*
 * Unmap [addr, addr + len), which maps the file at @off, then drop those
 * file pages from the page cache (pages mapped elsewhere stay). Neither
 * call touches the struct file's readahead state (file->f_ra, mmap_miss).
 */
static void drop_mapped(int fd, const char *addr, size_t off, size_t len)
{
	madvise((void *)addr, len, MADV_DONTNEED);
	posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
}

/**
 * ra_walk_bytes() - most page cache a walk of a file mapping keeps
 * @ra_kb: read_ahead_kb of the walk, in KiB
 *
 * ra_walk_pages() keeps at most the 32 MiB it passed last (it drops what
 * lies further behind), and readahead keeps at most two windows ahead of
 * it: the one being read and the async one started at its PG_readahead
 * marker.
 *
 * Return: that amount in bytes; a test adds what else it keeps cached or
 * allocates, and asks for the sum with ra_need_memory().
 */
size_t ra_walk_bytes(unsigned long ra_kb)
{
	return 2 * RA_WALK_ZAP + 2 * ra_kb * 1024;
}

/**
 * ra_walk_pages() - read one byte of each page, counting major faults
 * @fd: the file mapped at @addr
 * @addr: page-aligned start of the walk in a mapping of @fd
 * @off: file offset @addr maps, in bytes
 * @npages: number of pages to touch
 * @backwards: walk from the last page to the first
 * @limit: stop once more than this many major faults were taken
 * @walk: result: faults taken, pages touched, whether it stopped early
 *
 * The counter is read every 16 pages, so an early stop happens at most 16
 * pages after the limit is passed. Every 16 MiB, the 16 MiB that lie 16
 * to 32 MiB behind the walk are unmapped and dropped from the page cache,
 * as ra_drop_range() does, so that neither the RSS nor the page cache of
 * a walk grows with its length (ra_walk_bytes()): on a small machine,
 * page cache left behind forces direct reclaim, under which readahead's
 * folio allocations (__GFP_NORETRY) fail and reads are cut short, which
 * shows up as major faults no readahead bug caused. Readahead and
 * fault-around read within a window of read_ahead_kb around the walk
 * (at most 32 MiB keeps it clear of what is dropped): what is dropped
 * lies behind it and is never touched again.
 */
void ra_walk_pages(int fd, const char *addr, size_t off, size_t npages,
		   bool backwards, long limit, struct ra_walk *walk)
{
	size_t ps = psize(), zap = RA_WALK_ZAP / ps, i;
	long start = ra_majflt();

	walk->stopped = false;
	for (i = 0; i < npages; i++) {
		size_t page = backwards ? npages - 1 - i : i;

		FORCE_READ(addr[page * ps]);
		if ((i + 1) % zap == 0 && i + 1 >= 2 * zap) {
			size_t first = backwards ? npages - (i + 1 - zap) :
					i + 1 - 2 * zap;

			drop_mapped(fd, addr + first * ps, off + first * ps,
				    zap * ps);
		}
		if ((i + 1) % RA_WALK_CHECK == 0 &&
		    ra_majflt() - start > limit) {
			walk->stopped = true;
			i++;
			break;
		}
	}
	walk->touched = i;
	walk->majflt = ra_majflt() - start;
}

/**
 * ra_rand() - next value of the suite's pseudo-random sequence
 * @seed: state of the sequence, updated
 *
 * A fixed linear congruential sequence: every run on every kernel draws
 * the same values, so that random access patterns are the same pages in
 * the same order everywhere.
 *
 * Return: a value in 0 .. 2^24 - 1.
 */
static unsigned int ra_rand(unsigned int *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 8;
}

/**
 * ra_shuffle() - a fixed pseudo-random order of 0 .. @n - 1
 * @order: receives the @n indices
 * @n: number of indices
 * @seed: seed of the sequence (ra_rand()); the same seed gives the same
 *	order
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
 * @seed: state of the ra_rand() sequence, updated
 *
 * A test that counts what one fault reads gives each fault a slot of two
 * read-around windows or more: a read-around centred on a spot in the
 * middle half stays within the slot, and is counted and dropped with it.
 *
 * Return: a file offset in bytes, @base + @len / 4 plus a whole number of
 * folios, below @base + @len / 4 + @len / 2.
 */
size_t ra_slot_spot(size_t base, size_t len, size_t folio,
		    unsigned int *seed)
{
	return base + len / 4 + ra_rand(seed) % (len / 2 / folio) * folio;
}

/**
 * ra_random_phase() - fault single pages far apart, in a fixed random order
 * @map: mapping of the file
 * @nr: number of faults
 * @spacing: bytes between two faulted pages, so that no fault lands in
 *	another's read-around window
 *
 * Touches page 0, @spacing, 2 * @spacing, ... of @map in the order
 * ra_shuffle() gives for seed 12345. Each touch is a page cache miss that
 * do_sync_mmap_readahead() counts in file->f_ra.mmap_miss (but on a
 * VM_EXEC mapping), so that with @nr above MMAP_LOTSAMISS the counter
 * passes the limit. Prints the major faults taken.
 *
 * Return: the major faults taken, or -1 when @nr is above
 * RA_RANDOM_MAX.
 */
long ra_random_phase(const char *map, unsigned int nr, size_t spacing)
{
	unsigned int order[RA_RANDOM_MAX], i;
	long start, majflt;

	if (nr > RA_RANDOM_MAX)
		return -1;
	ra_shuffle(order, nr, 12345);
	start = ra_majflt();
	for (i = 0; i < nr; i++)
		FORCE_READ(map[order[i] * spacing]);
	majflt = ra_majflt() - start;
	ksft_print_msg("random phase: %ld major faults for %u faults %zu bytes apart\n",
		       majflt, nr, spacing);
	return majflt;
}

/**
 * ra_thrash_bound() - most pages a fault of a thrashing reader may read
 * @fs: filesystem of the file, at the read_ahead_kb of the faults
 *
 * Once mmap_miss is past MMAP_LOTSAMISS, a fault reads the one folio it
 * needs; read-around back reads ra_pages. The bound is their geometric
 * mean, sqrt(folio pages * ra_pages): at read_ahead_kb 16384 ra_pages is
 * 256 folios or more (64 KiB folios, 4 KiB pages), so healthy and broken
 * each lie 16x or more from it.
 *
 * Return: the bound in pages per fault.
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
 * A PMD-sized folio can be mapped by one PMD only where the virtual and
 * the file address agree modulo the PMD size: a read-only MAP_SHARED
 * mapping of [@off, @off + @len) at such an address.
 *
 * Return: the mapping, or MAP_FAILED (errno set).
 */
char *ra_map_pmd_aligned(int fd, size_t off, size_t len, unsigned long pmd)
{
	char *map, *aligned;

	map = mmap(NULL, len + pmd, PROT_READ, MAP_SHARED, fd, off);
	if (map == MAP_FAILED)
		return map;
	munmap(map, len + pmd);
	aligned = (char *)(((unsigned long)map + pmd - 1) & ~(pmd - 1));
	return mmap(aligned, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, off);
}

/**
 * ra_isqrt() - integer square root
 * @n: the number
 *
 * Bounds that must lie as far from a healthy figure as from a broken one
 * are their geometric mean, sqrt(healthy * broken).
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
 * ra_cachestat() - pages of a file range in the page cache, by cachestat()
 * @fd: the file
 * @off: file offset of the range in bytes
 * @len: length of the range in bytes
 *
 * Counts what the page cache holds, including folios still locked under
 * their first read, which mincore() reports only once they are uptodate.
 *
 * Return: the number of pages, or -1 when the kernel has no cachestat()
 * (before 6.5: ENOSYS) or it fails (errno set).
 */
long ra_cachestat(int fd, size_t off, size_t len)
{
	struct cachestat_range range = { off, len };
	struct cachestat cs;

	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return -1;
	return cs.nr_cache;
}

/**
 * ra_cached_pages() - pages of a file range in the page cache
 * @fd: the file
 * @map: a mapping of the whole file, from offset 0
 * @off: file offset of the range in bytes
 * @len: length of the range in bytes
 *
 * Uses ra_cachestat(), else mincore() over the same range of @map, which
 * reports page cache residency whether or not a page is mapped. Either
 * way the count is of the file's page cache, not of the caller's page
 * tables: what a fault's readahead brought in.
 *
 * Return: the number of pages, or -1 on error (errno set).
 */
long ra_cached_pages(int fd, const char *map, size_t off, size_t len)
{
	long n = ra_cachestat(fd, off, len);

	return n >= 0 ? n : ra_resident_pages(map + off, len);
}

/**
 * ra_uncached_pages() - pages of a file range not in the page cache
 * @fd: the file
 * @map: a mapping of the whole file, from offset 0
 * @off: file offset of the range in bytes, page-aligned
 * @len: length of the range in bytes, a whole number of pages
 *
 * The complement of ra_cached_pages(): what a read that should cover the
 * range left out of it.
 *
 * Return: the number of pages, or -1 on error (errno set).
 */
long ra_uncached_pages(int fd, const char *map, size_t off, size_t len)
{
	long n = ra_cached_pages(fd, map, off, len);

	return n < 0 ? n : (long)(len / psize()) - n;
}

/**
 * ra_drop_range() - unmap a file range and drop it from the page cache
 * @fd: the file
 * @map: a mapping of the whole file, from offset 0
 * @off: file offset of the range in bytes, page-aligned
 * @len: length of the range in bytes
 *
 * MADV_DONTNEED, then POSIX_FADV_DONTNEED, which leaves pages mapped
 * elsewhere alone: the range is cold again for the next fault, and the
 * struct file's readahead state (mmap_miss) is left as it is. Errors are
 * ignored: a range left cached shows up in the next ra_cached_pages()
 * count.
 */
void ra_drop_range(int fd, const char *map, size_t off, size_t len)
{
	drop_mapped(fd, map + off, off, len);
}
