// SPDX-License-Identifier: GPL-2.0
/*
 * The test file of an mmap readahead selftest: a sparse file on the
 * test's filesystem (ra_fs.c), created, emptied from the page cache and
 * opened cold, mapped, and removed with the rest on teardown.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kselftest.h"
#include "ra_fs.h"
#include "ra_cache.h"

/*
 * The largest test file made on erofs, in bytes: mkfs.erofs (1.5) reads
 * all of a sparse file to make the image, 4 to 6 ms a MiB on hardware
 * and ten times that or more under emulation.
 */
#define RA_EROFS_MAX		(128UL << 20)

#define RA_FMT_FILE \
	"%s on %s%s, %lu-byte blocks, read_ahead_kb %lu (ra_pages %lu), folio %lu bytes, file %zu MiB\n"

/**
 * ra_file_create() - create a sparse test file
 * @fs: filesystem to create it on
 * @name: file name prefix inside @fs->dir; six random characters follow
 * @size: file size in bytes
 * @path: buffer receiving the file's path
 * @path_len: size of @path in bytes
 *
 * The file is a hole from start to end: readahead, folio allocation and
 * fault accounting treat it as data (a hole is read with no bio), and no
 * test depends on disk speed or disk space. In a directory of the user's
 * (READAHEAD_TEST_DIR) it is removed when the caller dies, however it
 * dies.
 *
 * Return: 0 on success, -1 on error (errno set).
 */
static int ra_file_create(struct ra_fs *fs, const char *name, size_t size,
			  char *path, size_t path_len)
{
	int fd, ret;

	snprintf(path, path_len, "%s/%s.XXXXXX", fs->dir, name);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -1;
	snprintf(fs->file, sizeof(fs->file), "%s", path);
	/* In a directory of the user's, a killed test leaves no file. */
	if (!fs->own)
		ra_on_exit_of_caller(path, -1);
	ret = ftruncate(fd, size);
	close(fd);
	return ret;
}

/**
 * ra_open_cold() - open a test file with an empty page cache
 * @fs: filesystem of the file; @fs->why on skip or failure
 * @path: file to open read-only
 * @fd: receives the file descriptor
 *
 * A fresh open() gives a fresh file->f_ra: mmap_miss is 0 and ra_pages is
 * the disk's current read_ahead_kb in pages. The file's page cache is
 * emptied with ra_drop_cache().
 *
 * Return: 0; KSFT_SKIP or -1 with @fs->why set, and @fd closed.
 */
int ra_open_cold(struct ra_fs *fs, const char *path, int *fd)
{
	struct stat st;
	int ret;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return ra_fs_fail(fs, "opening the test file");
	if (fstat(*fd, &st))
		ret = ra_fs_fail(fs, "reading the test file's size");
	else
		ret = ra_drop_cache(fs, *fd, st.st_size);
	if (ret) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/**
 * ra_file_prepare() - create the test file and open it cold
 * @fs: filesystem to create it on
 * @size: file size in bytes
 * @ra_kb: read_ahead_kb to set before opening, in KiB
 * @fd: receives the open file descriptor
 *
 * Prints the filesystem, read_ahead_kb, ra_pages and folio size the test
 * runs with. Setting read_ahead_kb here, every time, is what keeps a test
 * on a filesystem an earlier test made (ra_fs_reuse_init()) from
 * running with that test's window. On erofs (one file a test) the image
 * ra_fs_seal() makes and mounts is made of the file; a file larger than
 * RA_EROFS_MAX skips there.
 *
 * Return: 0 on success, KSFT_SKIP or -1 with @fs->why set; then
 * ra_ready() puts read_ahead_kb back and removes the file.
 */
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb,
		    int *fd)
{
	char path[2 * RA_PATH_LEN];
	const char *name;
	int ret;

	if (!strcmp(fs->type, "erofs") && size > RA_EROFS_MAX)
		return ra_fs_skip(fs, "erofs: mkfs.erofs reads all of a file, %zu MiB past %lu",
				  size >> 20, RA_EROFS_MAX >> 20);
	if (ra_file_create(fs, "ra-test", size, path, sizeof(path)))
		return ra_fs_fail(fs, "creating test file");
	/* erofs: the image is made of the file, and mounted. */
	ret = ra_fs_seal(fs);
	if (ret)
		return ret;
	name = strrchr(fs->file, '/') + 1;
	snprintf(path, sizeof(path), "%s/%s", fs->dir, name);
	ret = ra_set_read_ahead_kb(fs, ra_kb);
	if (ret)
		return ret;
	ret = ra_open_cold(fs, path, fd);
	if (ret)
		return ret;
	ksft_print_msg(RA_FMT_FILE, fs->type, fs->bdev[0] ? fs->bdev : fs->dir,
		       strcmp(fs->type, "btrfs") ? "" : " (read_ahead_kb: its bdi's)",
		       fs->block_size, ra_kb, ra_pages(fs), ra_folio_size(fs),
		       size >> 20);
	return 0;
}

/**
 * ra_file_map() - create the test file, open it cold and map it
 * @fs: filesystem to create it on
 * @size: file size in bytes
 * @ra_kb: read_ahead_kb to set before opening, in KiB
 * @fd: receives the open file descriptor
 * @map: receives a read-only MAP_SHARED mapping of the whole file
 *
 * ra_file_prepare(), then the mapping most tests read through.
 *
 * Return: 0 on success, KSFT_SKIP or -1 with @fs->why set; then
 * ra_ready() puts read_ahead_kb back and removes the file (@fd, when
 * open, goes with the test process).
 */
int ra_file_map(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd,
		char **map)
{
	int ret = ra_file_prepare(fs, size, ra_kb, fd);

	if (ret)
		return ret;
	*map = mmap(NULL, size, PROT_READ, MAP_SHARED, *fd, 0);
	if (*map == MAP_FAILED)
		return ra_fs_fail(fs, "mapping the test file");
	return 0;
}

/**
 * ra_teardown() - undo what a fixture set up
 * @fs: filesystem of the fixture
 * @map: mapping of the test file, or NULL or MAP_FAILED
 * @size: length of @map in bytes
 * @fd: descriptor of the test file, or -1
 *
 * Unmaps @map, closes @fd and undoes what the test did to its filesystem
 * (ra_fs_teardown()).
 */
void ra_teardown(struct ra_fs *fs, char *map, size_t size, int fd)
{
	if (map && map != MAP_FAILED)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	ra_fs_teardown(fs);
}
