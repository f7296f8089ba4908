/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The filesystems an mmap readahead selftest runs on and its test file
 * (ra_fs.c): private filesystems on self-detaching loop devices, made in
 * main(), the disk's read_ahead_kb, cold sparse files. What mm's
 * vm_util.h offers (psize(), write_sysfs(), read_pmd_pagesize()) is used
 * from there.
 */
#ifndef __RA_FS_H__
#define __RA_FS_H__

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kselftest.h"

/* Room for the paths a test uses (mount points, sysfs attributes). */
#define RA_PATH_LEN		256

/**
 * struct ra_fs_kind - a filesystem variant the tests run on
 * @type: filesystem type name: "ext4", "xfs", "btrfs" or "f2fs"
 * @block_size: block size in bytes; above the page size the page cache
 *	uses folios of at least that size (min folio order above 0)
 * @max_folio_blocks: the most blocks a page cache folio of a regular
 *	file holds, 0 when the filesystem sets no limit below the PMD
 */
struct ra_fs_kind {
	const char *type;
	unsigned long block_size;
	unsigned long max_folio_blocks;
};

/**
 * struct ra_fs - a filesystem a test runs on
 * @dir: directory the test files are created in
 * @sysfs_ra: path of the read_ahead_kb attribute that governs its files
 * @bdev: name of the backing loop device (e.g. "loop3")
 * @type: filesystem type name
 * @block_size: filesystem block size in bytes
 * @page_size: page size in bytes
 * @max_folio: largest page cache folio of the test file in bytes, 0 when
 *	no smaller than a PMD (struct ra_fs_kind's @max_folio_blocks)
 * @ra_kb: read_ahead_kb last set by ra_set_read_ahead_kb(), in KiB
 * @saved_ra_kb: read_ahead_kb the device was attached with, in KiB
 * @file: path of the test file, removed on teardown
 * @why: one-line reason when setup returned KSFT_SKIP or failed
 */
struct ra_fs {
	char dir[RA_PATH_LEN];
	char sysfs_ra[2 * RA_PATH_LEN];
	char bdev[32];
	char type[16];
	unsigned long block_size;
	unsigned long page_size;
	unsigned long max_folio;
	unsigned long ra_kb;
	unsigned long saved_ra_kb;
	char file[2 * RA_PATH_LEN];
	char why[4 * RA_PATH_LEN];
};

/* ra_fs.c: the filesystems, the disk's read_ahead_kb, the test file */
void ra_fs_init(const struct ra_fs_kind *const kinds[]);
int ra_fs_setup(struct ra_fs *fs, const struct ra_fs_kind *kind);
int ra_set_read_ahead_kb(struct ra_fs *fs, unsigned long kb);
int ra_need_memory(struct ra_fs *fs, size_t bytes);
int ra_fs_skip(struct ra_fs *fs, const char *fmt, ...) __printf(2, 3);
int ra_fs_fail(struct ra_fs *fs, const char *what);
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb,
		    int *fd);
int ra_file_map(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd,
		char **map);
void ra_teardown(struct ra_fs *fs, char *map, size_t size, int fd);

/**
 * ra_pages() - the readahead window a file opened now gets
 * @fs: filesystem
 *
 * Return: ra_pages, in pages: read_ahead_kb converted to pages.
 */
static inline unsigned long ra_pages(const struct ra_fs *fs)
{
	return fs->ra_kb * 1024 / fs->page_size;
}

/**
 * ra_folio_size() - smallest page cache folio of the test filesystem
 * @fs: filesystem
 *
 * Return: the larger of block and page size, in bytes: a min-order
 * folio, the least a single read brings in.
 */
static inline unsigned long ra_folio_size(const struct ra_fs *fs)
{
	return fs->block_size > fs->page_size ? fs->block_size : fs->page_size;
}

extern const struct ra_fs_kind ra_ext4_4k, ra_xfs_4k, ra_xfs_16k, ra_xfs_32k,
	ra_xfs_64k, ra_btrfs_4k, ra_f2fs_4k;

#ifdef __KSELFTEST_HARNESS_H
/**
 * ra_ready() - turn a lib status into a harness verdict
 * @_metadata: the running test
 * @ret: 0, KSFT_SKIP or -1, from a lib function that takes @fs
 *	(ra_fs_setup(), ra_need_memory(), ra_file_prepare(), ...)
 * @fs: filesystem whose @why explains a skip or failure
 *
 * On a skip or a failure, first undoes what the test did to its
 * filesystem (ra_teardown(): the test file): a fixture
 * setup that ends early gets no teardown from the harness. In a test
 * body the harness's teardown follows, and does nothing more, since
 * ra_teardown() undoes each change once.
 *
 * Return: true when the test can go on; false after a SKIP, and the
 * caller must return. A failure ends the test here.
 */
static inline bool ra_ready(struct __test_metadata *_metadata, int ret,
			    struct ra_fs *fs)
{
	if (ret)
		ra_teardown(fs, NULL, 0, -1);
	if (ret == KSFT_SKIP)
		SKIP(return false, "%s", fs->why);
	ASSERT_EQ(0, ret) TH_LOG("%s", fs->why);
	return true;
}
#endif

#endif /* __RA_FS_H__ */
