/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the mmap readahead selftests: a private filesystem on
 * a self-detaching loop device, cold files, residency and major fault
 * accounting, and page walks that stop once a bound is exceeded.
 */
#ifndef __RA_UTIL_H__
#define __RA_UTIL_H__

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>

/* Room for the paths a test uses (mount points, sysfs attributes). */
#define RA_PATH_LEN		256

/* Above this many mmap misses, read-around is skipped (mm/filemap.c). */
#define RA_MMAP_LOTSAMISS	100

/* Environment variable naming a directory to test on instead. */
#define RA_ENV_DIR		"READAHEAD_TEST_DIR"
/* Set to 1 to walk whole regions even after a bound is exceeded. */
#define RA_ENV_FULL		"READAHEAD_FULL_RUN"

/**
 * struct ra_fs - a filesystem a test runs on
 * @dir: directory the test files are created in
 * @sysfs_ra: path of the backing queue's read_ahead_kb attribute, or ""
 * @bdev: name of the backing block device (e.g. "loop3"), or ""
 * @type: filesystem type name
 * @block_size: filesystem block size in bytes
 * @page_size: page size in bytes
 * @ra_kb: read_ahead_kb last set by ra_set_read_ahead_kb(), in KiB
 * @own: true when the filesystem was created by ra_fs_setup()
 * @mnt: mount point, when @own
 * @why: one-line reason when setup returned KSFT_SKIP or failed
 */
struct ra_fs {
	char dir[RA_PATH_LEN];
	char sysfs_ra[2 * RA_PATH_LEN];
	char bdev[32];
	char type[16];
	unsigned long block_size;
	unsigned long page_size;
	unsigned long ra_kb;
	bool own;
	char mnt[RA_PATH_LEN];
	char why[4 * RA_PATH_LEN];
};

/**
 * struct ra_walk - result of a page walk
 * @majflt: major faults taken by the walk
 * @touched: pages touched before the walk ended
 * @stopped: true when the walk ended early because @majflt passed the limit
 */
struct ra_walk {
	long majflt;
	size_t touched;
	bool stopped;
};

int ra_fs_setup(struct ra_fs *fs, const char *type, unsigned long block_size);
void ra_fs_teardown(struct ra_fs *fs);
int ra_set_read_ahead_kb(struct ra_fs *fs, unsigned long kb);
unsigned long ra_folio_size(const struct ra_fs *fs);
int ra_file_create(struct ra_fs *fs, const char *name, size_t size,
		   char *path, size_t path_len);
int ra_open_cold(const char *path);
unsigned long ra_pages(const struct ra_fs *fs);
int ra_drop_cache(int fd, size_t size);
long ra_resident_pages(const void *addr, size_t len);
long ra_majflt(void);
long ra_limit(long bound);
void ra_walk_pages(const volatile char *addr, size_t npages, bool backwards,
		   long limit, struct ra_walk *walk);
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb,
		    int *fd);
void ra_report(const struct ra_fs *fs, const char *what, long measured,
	       long bound);
int ra_thp_madvise_enable(char *saved, size_t saved_len);
void ra_thp_restore(const char *saved);

/*
 * Fixture setup shared by every test: create the filesystem for the
 * variant, skip with its reason or fail with it.
 */
#define RA_SETUP_FS(fs, variant) do {					\
	int __ret = ra_fs_setup(fs, (variant)->type,			\
				(variant)->block_size);			\
	if (__ret == KSFT_SKIP)						\
		SKIP(return, "%s", (fs)->why);				\
	ASSERT_EQ(0, __ret) TH_LOG("%s", (fs)->why);			\
} while (0)

/* Create, size and cold-open the test file; skip or fail with why. */
#define RA_PREPARE_FILE(fs, size, ra_kb, fdp) do {			\
	int __ret = ra_file_prepare(fs, size, ra_kb, fdp);		\
	if (__ret == KSFT_SKIP)						\
		SKIP(return, "%s", (fs)->why);				\
	ASSERT_EQ(0, __ret) TH_LOG("%s", (fs)->why);			\
} while (0)

/*
 * The filesystem variants every fixture runs on. xfs_16k and xfs_64k
 * have blocks larger than a 4 KiB page: their page cache folios have a
 * min folio order above 0.
 */
#define RA_FS_VARIANTS(fixture)						\
	FIXTURE_VARIANT_ADD(fixture, ext4_4k) {				\
		.type = "ext4", .block_size = 4096,			\
	};								\
	FIXTURE_VARIANT_ADD(fixture, xfs_4k) {				\
		.type = "xfs", .block_size = 4096,			\
	};								\
	FIXTURE_VARIANT_ADD(fixture, xfs_16k) {				\
		.type = "xfs", .block_size = 16384,			\
	};								\
	FIXTURE_VARIANT_ADD(fixture, xfs_64k) {				\
		.type = "xfs", .block_size = 65536,			\
	}

#endif /* __RA_UTIL_H__ */
