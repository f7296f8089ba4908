/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the mmap readahead selftests: a private filesystem on
 * a self-detaching loop device, cold files, residency and major fault
 * accounting, and page walks that stop once a bound is exceeded. What
 * mm's vm_util.h offers (psize(), FORCE_READ(), read_num(), write_num(),
 * read_pmd_pagesize()) is used from there.
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

/* Most faults ra_random_phase() takes. */
#define RA_RANDOM_MAX		(4 * RA_MMAP_LOTSAMISS)

/* Environment variable naming a directory to test on instead. */
#define RA_ENV_DIR		"READAHEAD_TEST_DIR"
/* Set to 1 to walk whole regions even after a bound is exceeded. */
#define RA_ENV_FULL		"READAHEAD_FULL_RUN"

/**
 * struct ra_fs_kind - a filesystem variant the tests run on
 * @type: filesystem type name, "ext4" or "xfs"
 * @block_size: block size in bytes; above the page size the page cache
 *	uses folios of at least that size (min folio order above 0)
 */
struct ra_fs_kind {
	const char *type;
	unsigned long block_size;
};

/**
 * struct ra_fs - a filesystem a test runs on
 * @dir: directory the test files are created in
 * @sysfs_ra: path of the backing queue's read_ahead_kb attribute, or ""
 * @bdev: name of the backing block device (e.g. "loop3"), or ""
 * @type: filesystem type name
 * @block_size: filesystem block size in bytes
 * @page_size: page size in bytes
 * @ra_kb: read_ahead_kb last set by ra_set_read_ahead_kb(), in KiB
 * @saved_ra_kb: read_ahead_kb before the test changed it, in KiB
 * @ra_saved: true when @saved_ra_kb holds a value to put back
 * @own: true when the filesystem was created by ra_fs_setup()
 * @mnt: mount point, when @own
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
	unsigned long ra_kb;
	unsigned long saved_ra_kb;
	bool ra_saved;
	bool own;
	char mnt[RA_PATH_LEN];
	char file[2 * RA_PATH_LEN];
	char why[4 * RA_PATH_LEN];
};

/**
 * struct ra_cgroup - a cgroup v2 a test runs in, created for it
 * @root: the cgroup v2 root directory
 * @path: the cgroup's directory, "" when none was created
 * @home: the cgroup the test came from, to go back to
 * @dev: "major:minor" of the disk whose reads ra_cgroup_throttle_reads()
 *	slowed, or ""
 */
struct ra_cgroup {
	char root[RA_PATH_LEN];
	char path[2 * RA_PATH_LEN];
	char home[4 * RA_PATH_LEN];
	char dev[32];
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

int ra_fs_setup(struct ra_fs *fs, const struct ra_fs_kind *kind);
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
void ra_walk_pages(const char *addr, size_t npages, bool backwards,
		   long limit, struct ra_walk *walk);
int ra_uncache(const void *addr, size_t len);
size_t ra_walk_bytes(unsigned long ra_kb);
int ra_need_memory(struct ra_fs *fs, size_t bytes);
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb,
		    int *fd);
int ra_file_map(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd,
		char **map);
void ra_teardown(struct ra_fs *fs, char *map, size_t size, int fd);
void ra_figure(const struct ra_fs *fs, const char *what, long measured,
	       const char *unit, long bound, const char *fmt, ...)
	__printf(6, 7);
unsigned int ra_rand(unsigned int *seed);
void ra_shuffle(unsigned int *order, unsigned int n, unsigned int seed);
size_t ra_slot_spot(size_t base, size_t len, size_t folio,
		    unsigned int *seed);
long ra_random_phase(const char *map, unsigned int nr, size_t spacing);
char *ra_map_pmd_aligned(int fd, size_t off, size_t len, unsigned long pmd);
unsigned long ra_isqrt(unsigned long n);
long ra_cachestat(int fd, size_t off, size_t len);
long ra_cached_pages(int fd, const char *map, size_t off, size_t len);
void ra_drop_range(int fd, char *map, size_t off, size_t len);
int ra_cgroup_enter(struct ra_fs *fs, struct ra_cgroup *cg,
		    const char *controller);
int ra_cgroup_throttle_reads(struct ra_fs *fs, struct ra_cgroup *cg,
			     unsigned int iops);
long ra_memcg_stat(const char *cgroup, const char *key, long at_least);
void ra_cgroup_leave(struct ra_cgroup *cg);

extern const struct ra_fs_kind ra_ext4_4k, ra_xfs_4k, ra_xfs_16k, ra_xfs_32k,
	ra_xfs_64k;

#ifdef __KSELFTEST_HARNESS_H
/**
 * ra_ready() - turn a lib status into a harness verdict
 * @_metadata: the running test
 * @ret: 0, KSFT_SKIP or -1, from ra_fs_setup() or ra_file_prepare()
 * @fs: filesystem whose @why explains a skip or failure
 *
 * Return: true when the test can go on; false after a SKIP, and the
 * caller must return. A failure ends the test here.
 */
static inline bool ra_ready(struct __test_metadata *_metadata, int ret,
			    const struct ra_fs *fs)
{
	if (ret == KSFT_SKIP)
		SKIP(return false, "%s", fs->why);
	ASSERT_EQ(0, ret) TH_LOG("%s", fs->why);
	return true;
}

/**
 * RA_EXPECT_FIGURE() - print a figure and check it against its bound
 * @fs: filesystem the figure was measured on
 * @what: what was measured
 * @measured: the figure, in @unit
 * @unit: unit of @measured and @bound
 * @bound: the test's bound: the test fails when @measured is above it
 * @suspect: the mechanism a figure above @bound points to
 * @fmt: printf format of the figure's note, with its arguments
 *
 * Prints the figure line of ra_figure(); above the bound, marks the test
 * failed and adds a line "suspected: <@suspect>".
 */
#define RA_EXPECT_FIGURE(fs, what, measured, unit, bound, suspect, fmt, ...)	\
	do {								\
		long figure = (measured), limit = (bound);		\
									\
		ra_figure(fs, what, figure, unit, limit, fmt, ##__VA_ARGS__); \
		EXPECT_LE(figure, limit) TH_LOG("suspected: %s", suspect); \
	} while (0)

/**
 * ra_assert_random_phase() - ra_random_phase(), asserted to be misses
 * @_metadata: the running test
 * @map: mapping of the file
 * @nr: number of faults, above MMAP_LOTSAMISS
 * @spacing: bytes between two faulted pages
 *
 * Fails the test unless at least two thirds of the faults were major:
 * without real page cache misses mmap_miss never passes the limit and
 * the test proves nothing.
 */
static inline void ra_assert_random_phase(struct __test_metadata *_metadata,
					  const char *map, unsigned int nr,
					  size_t spacing)
{
	long majflt = ra_random_phase(map, nr, spacing);

	ASSERT_GE(majflt, 2 * (long)nr / 3)
		TH_LOG("random faults were not page cache misses: the test proves nothing");
}
#endif

#endif /* __RA_UTIL_H__ */
