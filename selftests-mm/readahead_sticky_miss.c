// SPDX-License-Identifier: GPL-2.0
/*
 * Sticky mmap_miss: readahead must come back after random faults.
 *
 * Past MMAP_LOTSAMISS page cache misses, do_sync_mmap_readahead() reads
 * only the faulting folio and sets no PG_readahead marker; only mmap
 * hits take file->f_ra.mmap_miss back down. A kernel that counts only
 * the faulting address as a hit (not fault-around, not retried faults)
 * never gets under the limit again: every later fault reads one folio.
 * Measured: major faults of an in-order read (by one reader, by four
 * threads, or by get_user_pages) after a random phase through the same
 * struct file, at read_ahead_kb 512 and at the block devices' default of
 * 128 (2 pages on 64 KiB pages, 2 folios on 64 KiB blocks: a restart
 * must come back in windows of any size). Bound: folios read / 12.
 * Broken: one fault per folio, 12x over. Healthy: one read-around, then
 * async readahead keeps ahead: a handful of faults, or one per ra window
 * where retried faults count as major (no per-VMA locks), still 10x
 * under at 512. Two readers take one fault per window even when
 * healthy: get_user_pages, retried after each async readahead, and
 * threads whose streams share one readahead state. After the random
 * phase at 512 both widen the window to SHARED_RA_KB; at the default
 * both are judged only where a window holds SHARED_JUDGE_FOLIOS folios,
 * against the geometric mean of one fault per window and one per folio
 * (4x both ways). At the default, where a min folio is over a quarter
 * of the window, kernels whose read-around puts PG_readahead on the
 * faulting folio or nowhere (read_around) fail too, with or without
 * sticky mmap_miss: XFS with 64 KiB blocks, and every filesystem on
 * 64 KiB pages.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RANDOM_FAULTS	(3 * RA_MMAP_LOTSAMISS)
/*
 * The in-order region: 32 MiB and 2048 folios or more, so that its bound,
 * folios / 12, stays well above the fixed cost of a healthy restart
 * (about 20 faults) on any folio size.
 */
#define SEQ_MIN_SIZE	(32UL << 20)
#define SEQ_MIN_FOLIOS	2048
#define WIDE_KB		512UL
#define DEFAULT_KB	128UL	/* block devices' default read_ahead_kb */
#define THREADS		4
#define SHARED_RA_KB	16384UL
#define SHARED_JUDGE_FOLIOS	16
#define GUP_CHUNK	(1024 * 1024UL)
#define SUSPECT \
	"mmap_miss stuck above MMAP_LOTSAMISS, read-around and async readahead never restart (sticky mmap_miss)"
/* Where a min folio is over a quarter of the window, as in read_around. */
#define SUSPECT_SMALL_WINDOW \
	SUSPECT ", or read-around puts PG_readahead on the faulting folio"

FIXTURE(sticky_miss) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
	size_t spacing;		/* bytes between two random faults */
	size_t seq_off;		/* file offset of the in-order region */
	size_t seq_size;	/* its size in bytes */
	long bound;
};

FIXTURE_VARIANT(sticky_miss) {
	const struct ra_fs_kind *fs;
	unsigned long ra_kb;	/* read_ahead_kb of the whole test */
};

FIXTURE_VARIANT_ADD(sticky_miss, ext4_4k) { .fs = &ra_ext4_4k, .ra_kb = WIDE_KB };
FIXTURE_VARIANT_ADD(sticky_miss, ext4_4k_default) { .fs = &ra_ext4_4k, .ra_kb = DEFAULT_KB };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_4k) { .fs = &ra_xfs_4k, .ra_kb = WIDE_KB };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_16k) { .fs = &ra_xfs_16k, .ra_kb = WIDE_KB };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_16k_default) { .fs = &ra_xfs_16k, .ra_kb = DEFAULT_KB };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_64k) { .fs = &ra_xfs_64k, .ra_kb = WIDE_KB };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_64k_default) { .fs = &ra_xfs_64k, .ra_kb = DEFAULT_KB };
FIXTURE_VARIANT_ADD(sticky_miss, btrfs_4k_default) { .fs = &ra_btrfs_4k, .ra_kb = DEFAULT_KB };
FIXTURE_VARIANT_ADD(sticky_miss, f2fs_4k_default) { .fs = &ra_f2fs_4k, .ra_kb = DEFAULT_KB };

FIXTURE_SETUP(sticky_miss)
{
	size_t random_bytes = RANDOM_FAULTS * variant->ra_kb * 1024;
	size_t seq_bytes;
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->seq_size = SEQ_MIN_FOLIOS * ra_folio_size(&self->fs);
	if (self->seq_size < SEQ_MIN_SIZE)
		self->seq_size = SEQ_MIN_SIZE;
	seq_bytes = self->seq_size + 2 * SHARED_RA_KB * 1024;

	/*
	 * One struct file, one mapping:
	 *
	 *   0               random region               seq_off
	 *   |-x------x------x---- ... -----x------|==========================|
	 *     ^ RANDOM_FAULTS single pages,         ^ seq_size read in order
	 *       shuffled, @spacing apart
	 *
	 * Eight read-around windows apart, no fault lands in another's
	 * window: each one is a real miss.
	 */
	self->spacing = 8 * variant->ra_kb * 1024;
	if (self->spacing < 2 * ra_folio_size(&self->fs))
		self->spacing = 2 * ra_folio_size(&self->fs);
	self->seq_off = RANDOM_FAULTS * self->spacing;
	self->size = self->seq_off + self->seq_size;
	self->bound = self->seq_size / ra_folio_size(&self->fs) / 12;

	/*
	 * The random phase reads around each fault and is dropped after;
	 * the threads and gup_after_random keep the whole in-order region
	 * with two SHARED_RA_KB windows ahead.
	 */
	ret = ra_need_memory(&self->fs, random_bytes > seq_bytes ?
			     random_bytes : seq_bytes);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_map(&self->fs, self->size, variant->ra_kb, &self->fd,
			  &self->map);
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(sticky_miss)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

/*
 * The random phase: every fault a miss, so mmap_miss passes the limit.
 * Only the counter matters from here on, not the pages read: dropped.
 */
static void random_phase(struct __test_metadata *_metadata, int fd,
			 const char *map, size_t spacing)
{
	ra_assert_random_phase(_metadata, map, RANDOM_FAULTS, spacing);
	ra_drop_range(fd, map, 0, RANDOM_FAULTS * spacing);
}

/*
 * The bound of a reader that takes one fault per ra window when healthy
 * (GUP, threads sharing a readahead state) at the default read_ahead_kb:
 * the geometric mean of one fault per window and one per folio of @size
 * bytes. Return: the bound, or 0 when the window holds too few folios to
 * tell them apart.
 */
static long per_window_bound(const struct ra_fs *fs, unsigned long ra_kb, size_t size)
{
	size_t folio = ra_folio_size(fs);
	unsigned long window = ra_kb * 1024 / folio;

	if (window < SHARED_JUDGE_FOLIOS)
		return 0;
	return size / folio / ra_isqrt(window);
}

/*
 * After the random phase at read_ahead_kb 512, a reader that takes one
 * fault per window when healthy reads at SHARED_RA_KB: one fault per
 * window stays far under the bound on 64 KiB folios and pages too.
 * POSIX_FADV_NORMAL copies the disk's new ra_pages into the struct file
 * and leaves mmap_miss alone.
 */
static int widen_window(struct ra_fs *fs, int fd)
{
	if (ra_set_read_ahead_kb(fs, SHARED_RA_KB))
		return -1;
	return posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL) ? -1 : 0;
}

#define FMT_NOT_JUDGED \
	"not judged by design: %s take one fault per window when healthy, and a window of %lu folios (under %d) cannot tell that from one per folio"

TEST_F(sticky_miss, sequential_after_random)
{
	size_t ps = self->fs.page_size;
	struct ra_walk walk;

	random_phase(_metadata, self->fd, self->map, self->spacing);

	/* One touch per page, forwards, through the same struct file. */
	ra_walk_pages(self->fd, self->map + self->seq_off, self->seq_off,
		      self->seq_size / ps, false, ra_limit(self->bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "in-order read after random faults",
			 walk.majflt, "major faults", self->bound,
			 4 * ra_folio_size(&self->fs) > variant->ra_kb * 1024 ?
			 SUSPECT_SMALL_WINDOW : SUSPECT,
			 "after %zu of %zu pages", walk.touched, self->seq_size / ps);
}

struct reader {
	int fd;
	const char *addr;
	size_t off;
	size_t npages;
	long limit;
	struct ra_walk walk;
};

static void *read_range(void *arg)
{
	struct reader *r = arg;

	ra_walk_pages(r->fd, r->addr, r->off, r->npages, false, r->limit,
		      &r->walk);
	return NULL;
}

TEST_F(sticky_miss, threads_after_random)
{
	size_t ps = self->fs.page_size, per = self->seq_size / THREADS;
	struct reader readers[THREADS];
	pthread_t tids[THREADS];
	long start, total, bound = self->bound;
	int i;

	if (variant->ra_kb != WIDE_KB) {
		bound = per_window_bound(&self->fs, variant->ra_kb, self->seq_size);
		if (!bound)
			SKIP(return, FMT_NOT_JUDGED,
			     "threads sharing a readahead state",
			     variant->ra_kb * 1024 / ra_folio_size(&self->fs),
			     SHARED_JUDGE_FOLIOS);
	}
	random_phase(_metadata, self->fd, self->map, self->spacing);
	if (variant->ra_kb == WIDE_KB)
		ASSERT_EQ(0, widen_window(&self->fs, self->fd))
			TH_LOG("%s", self->fs.why);

	/*
	 * Each thread reads its quarter in order; all share one readahead
	 * state. Each sees the whole process's major faults, so each may
	 * stop once the process passes the bound.
	 *
	 *   seq_off
	 *   |== thread 0 ==|== thread 1 ==|== thread 2 ==|== thread 3 ==|
	 */
	start = ra_majflt();
	for (i = 0; i < THREADS; i++) {
		readers[i].fd = self->fd;
		readers[i].off = self->seq_off + i * per;
		readers[i].addr = self->map + readers[i].off;
		readers[i].npages = per / ps;
		readers[i].limit = ra_limit(bound);
		ASSERT_EQ(0, pthread_create(&tids[i], NULL, read_range,
					    &readers[i]));
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(tids[i], NULL);
	total = ra_majflt() - start;

	RA_EXPECT_FIGURE(&self->fs, "threads reading in order after random faults",
			 total, "major faults", bound, SUSPECT,
			 "%d threads", THREADS);
}

/*
 * A file on the test filesystem that O_DIRECT writes can go to, already
 * unlinked: nothing is left behind. Returns the descriptor or -1.
 */
static int direct_sink(const struct ra_fs *fs)
{
	char path[2 * RA_PATH_LEN];
	int fd, sink;

	snprintf(path, sizeof(path), "%s/ra-sink.XXXXXX", fs->dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -1;
	sink = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
	unlink(path);
	close(fd);
	return sink;
}

TEST_F(sticky_miss, gup_after_random)
{
	size_t chunk = GUP_CHUNK, done;
	long start, majflt = 0, bound = self->bound;
	int sink;

	if (variant->ra_kb != WIDE_KB) {
		bound = per_window_bound(&self->fs, variant->ra_kb, self->seq_size);
		if (!bound)
			SKIP(return, FMT_NOT_JUDGED, "get_user_pages' retries",
			     variant->ra_kb * 1024 / ra_folio_size(&self->fs),
			     SHARED_JUDGE_FOLIOS);
	}
	/*
	 * btrfs runs its direct I/O with the source's faults off and, where
	 * pages are missing, faults them in as user accesses
	 * (fault_in_iov_iter_readable()) and tries again: no
	 * get_user_pages fault, only what sequential_after_random counts.
	 */
	if (!strcmp(self->fs.type, "btrfs"))
		SKIP(return, "btrfs faults an O_DIRECT source in as user accesses, not by GUP");
	sink = direct_sink(&self->fs);
	if (sink < 0)
		SKIP(return, "no O_DIRECT file on %s: %s", self->fs.dir,
		     strerror(errno));
	random_phase(_metadata, self->fd, self->map, self->spacing);
	/*
	 * A GUP fault holds mmap_lock, drops it for each async readahead
	 * and is retried, and a retried fault counts as major: one per ra
	 * window when healthy.
	 */
	if (variant->ra_kb == WIDE_KB)
		ASSERT_EQ(0, widen_window(&self->fs, self->fd))
			TH_LOG("%s", self->fs.why);

	/*
	 * The kernel reads the mapping: O_DIRECT writes from it fault it in
	 * through get_user_pages. Each chunk overwrites the first MiB of
	 * the sink.
	 */
	start = ra_majflt();
	for (done = 0; done < self->seq_size && majflt <= ra_limit(bound);
	     done += chunk) {
		char *from = self->map + self->seq_off + done;

		ASSERT_EQ((ssize_t)chunk, pwrite(sink, from, chunk, 0))
			TH_LOG("O_DIRECT write from the mapping: %s",
			       strerror(errno));
		/* Unmapped and dropped: the page cache stays small. */
		ra_drop_range(self->fd, self->map, self->seq_off + done, chunk);
		majflt = ra_majflt() - start;
	}
	close(sink);

	RA_EXPECT_FIGURE(&self->fs, "O_DIRECT write from the mapping after random faults",
			 majflt, "major faults", bound, SUSPECT,
			 "after %zu of %zu MiB", done >> 20, self->seq_size >> 20);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, &ra_btrfs_4k,
		&ra_f2fs_4k, NULL
	});
	return test_harness_run(argc, argv);
}
