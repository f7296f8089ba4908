// SPDX-License-Identifier: GPL-2.0
/*
 * POSIX_FADV_RANDOM and a mapping of the same open file.
 *
 * posix_fadvise(2), NOTES (VERSIONS in later man-pages): "Under Linux,
 * POSIX_FADV_NORMAL sets the readahead window to the default size for
 * the backing device; POSIX_FADV_SEQUENTIAL doubles this size, and
 * POSIX_FADV_RANDOM disables file readahead entirely. These changes
 * affect the entire file, not just the specified region (but other open
 * file handles to the same file are unaffected)." read() follows it
 * where it reads itself (FMODE_RANDOM in page_cache_sync_ra()), and
 * faults follow the other two (advice.fadv_normal, fadv_sequential); a
 * fault through a mapping of the advised file must not read ahead
 * either, as under MADV_RANDOM (advice.madv_random, whose bounds these
 * are).
 * Measured: pages a fault brings into the page cache, at read_ahead_kb
 * 16 MiB (4096 pages at 4 KiB, 256 at 64 KiB). Bounds: 10 folios a
 * fault; ra_pages / 20 read past a PG_readahead marker the fault reaches.
 * Healthy: the faulting folio, nothing past the marker. Broken (the
 * fault path reads VM_RAND_READ, not FMODE_RANDOM: every kernel since
 * 2.6.34): a read-around window a fault, 25x over or more, and a window
 * of async readahead from the marker, half of it counted, 10x over.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		16384UL
/* The file, in ra windows; faults in [0, 6 ra), the marker at 8 ra. */
#define FILE_WINDOWS	12
#define FAULTS		3

FIXTURE(fadv_random) {
	struct ra_fs fs;
	int fd;
	char *map;
	char *plain;	/* a mapping of another open file, never advised */
	size_t size;
	size_t ra;	/* ra window in bytes */
	size_t folio;
};

FIXTURE_VARIANT(fadv_random) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(fadv_random, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(fadv_random, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(fadv_random, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(fadv_random, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(fadv_random)
{
	int ret = ra_fs_setup(&self->fs, variant->fs), fd2;

	self->fd = -1;
	self->plain = MAP_FAILED;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * At most four windows cached at once: on_marker's two read-arounds
	 * and, where the advice is ignored, two windows of async readahead.
	 */
	ret = ra_need_memory(&self->fs, 4 * RA_KB * 1024);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->folio = ra_folio_size(&self->fs);
	self->ra = RA_KB * 1024;
	self->size = FILE_WINDOWS * self->ra;
	ret = ra_file_map(&self->fs, self->size, RA_KB, &self->fd, &self->map);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* A mapping of another open file, which the advice leaves alone. */
	fd2 = open(self->fs.file, O_RDONLY | O_CLOEXEC);
	if (fd2 >= 0) {
		self->plain = mmap(NULL, self->size, PROT_READ, MAP_SHARED,
				   fd2, 0);
		close(fd2);
	}
	if (self->plain == MAP_FAILED) {
		ret = ra_fs_fail(&self->fs, "mapping the file through another open file");
	} else {
		/* posix_fadvise() returns its error; errno for ra_fs_fail(). */
		errno = posix_fadvise(self->fd, 0, 0, POSIX_FADV_RANDOM);
		if (errno)
			ret = ra_fs_fail(&self->fs, "POSIX_FADV_RANDOM");
	}
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(fadv_random)
{
	if (self->plain != MAP_FAILED)
		munmap(self->plain, self->size);
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

/*
 * One fault in the middle of each slot of two windows, so that a
 * read-around would stay inside the slot:
 *
 *   0        2 ra       4 ra       6 ra              12 ra
 *   |----x----|----x----|----x----|........ ... ......|
 *        ^ a fault at 1 ra, 3 ra, 5 ra
 */
TEST_F(fadv_random, faults)
{
	size_t ps = self->fs.page_size;
	long cached, bound = 10 * FAULTS * (self->folio / ps);

	force_read_pages(self->map + self->ra, FAULTS, 2 * self->ra);
	cached = ra_cached_pages(self->fd, self->map, 0, 6 * self->ra);
	ASSERT_LE(0, cached);
	RA_EXPECT_FIGURE(&self->fs, "POSIX_FADV_RANDOM faults", cached, "pages",
			 bound,
			 "the fault path ignores FMODE_RANDOM (it reads VM_RAND_READ only) and reads around",
			 "%d faults, %zu pages a folio", FAULTS,
			 self->folio / ps);
	ASSERT_LE(1, cached) TH_LOG("nothing read: the faults did not happen");
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
 * @plain, the never advised mapping, reads around a fault at @probe,
 * PG_readahead in what it reads; then @toucher touches every cached page
 * from half a window (@ra bytes) before @probe to a window after it, the
 * marker too. The file is @fd, @size bytes, mapped whole at @map:
 *
 *   probe - ra/2        probe        probe + ra/2  probe + ra
 *   |===================x============|-------------|-----------
 *    read-around by the plain map     an async      counted from
 *                                     window here   here on
 *
 * Return: the pages cached from a window past @probe to the end of the
 * file, or -1 on error.
 */
static long after_marker(const struct ra_fs *fs, int fd, const char *map,
			 const char *plain, size_t size, size_t ra,
			 const char *toucher, size_t probe)
{
	size_t from = probe - ra / 2, past = probe + ra;

	FORCE_READ(plain[probe]);
	if (touch_cached(toucher, from, past - from, fs->page_size))
		return -1;
	return ra_cached_pages(fd, map, past, size - past);
}

TEST_F(fadv_random, on_marker)
{
	unsigned long ra_pages = self->ra / self->fs.page_size;
	long past;

	/* The advised mapping on the marker at 8 ra: nothing past 9 ra. */
	past = after_marker(&self->fs, self->fd, self->map, self->plain,
			    self->size, self->ra, self->map, 8 * self->ra);
	ASSERT_LE(0, past);
	RA_EXPECT_FIGURE(&self->fs, "POSIX_FADV_RANDOM faults on a read-around",
			 past, "pages past it", ra_pages / 20,
			 "async readahead runs for a mapping of an FMODE_RANDOM file",
			 "window of %lu pages", ra_pages);
	/* Control: the plain mapping on a marker at 10 ra reads past 11 ra. */
	past = after_marker(&self->fs, self->fd, self->map, self->plain,
			    self->size, self->ra, self->plain, 10 * self->ra);
	ASSERT_LE((long)ra_pages / 4, past)
		TH_LOG("the plain mapping read %ld pages past its marker: no marker to test",
		       past);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
