/* SPDX-License-Identifier: GPL-2.0 */
/* The filesystems an mmap readahead selftest runs on, and its test file. */
#ifndef __RA_FS_H__
#define __RA_FS_H__

#include "kselftest.h"

#define RA_PATH_LEN		256	/* mount points, sysfs attributes */

struct ra_fs {
	char dir[RA_PATH_LEN];		/* where the test file is created */
	char sysfs_ra[2 * RA_PATH_LEN];	/* read_ahead_kb governing its files */
	char bdev[32];			/* loop device, e.g. "loop3" */
	char type[16];
	unsigned long block_size;	/* bytes */
	unsigned long page_size;	/* bytes */
	unsigned long ra_kb;		/* KiB, last ra_set_read_ahead_kb() */
	unsigned long saved_ra_kb;	/* KiB, as the device was attached */
	char file[2 * RA_PATH_LEN];	/* the test file, removed on teardown */
	char why[4 * RA_PATH_LEN];	/* reason for a skip or failure */
};

struct ra_fs_kind {
	const char *type;		/* mkfs.<type>, mount -t <type> */
	unsigned long block_size;	/* bytes; min folio size if > a page */
	const char *mkfs;		/* mkfs options, printf of block_size */
	const char *mount;		/* mount data, or NULL */
	bool page_blocks;		/* mounts only where blocks are pages */
};

void ra_fs_init(int argc, char **argv, const struct ra_fs_kind *const kinds[]);
int ra_fs_setup(struct ra_fs *fs, const struct ra_fs_kind *kind);
int ra_set_read_ahead_kb(struct ra_fs *fs, unsigned long kb);
int ra_need_memory(struct ra_fs *fs, size_t bytes);
int ra_fs_skip(struct ra_fs *fs, const char *fmt, ...) __printf(2, 3);
int ra_fs_fail(struct ra_fs *fs, const char *what);
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd);
int ra_file_map(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd, char **map);
void ra_teardown(struct ra_fs *fs, char *map, size_t size, int fd);
extern pid_t ra_main_pid;	/* the binary's main process, set by ra_fs_init() */
extern const struct ra_fs_kind ra_ext4_4k;
extern const struct ra_fs_kind ra_xfs_4k;
extern const struct ra_fs_kind ra_xfs_16k;
extern const struct ra_fs_kind ra_xfs_32k;
extern const struct ra_fs_kind ra_xfs_64k;
extern const struct ra_fs_kind ra_btrfs_4k;
extern const struct ra_fs_kind ra_f2fs_4k;

/* ra_pages of a file opened now: read_ahead_kb in pages */
static inline unsigned long ra_pages(const struct ra_fs *fs)
{
	return fs->ra_kb * 1024 / fs->page_size;
}

/* Smallest page cache folio in bytes, the least a single read brings in */
static inline unsigned long ra_folio_size(const struct ra_fs *fs)
{
	return fs->block_size > fs->page_size ? fs->block_size : fs->page_size;
}

#ifdef __KSELFTEST_HARNESS_H
/* @ret as a verdict, after ra_teardown() (an early end of setup skips it) */
static inline bool ra_ready(struct __test_metadata *_metadata, int ret, struct ra_fs *fs)
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
