// SPDX-License-Identifier: GPL-2.0
/*
 * Sticky mmap_miss: readahead must come back after random faults.
 *
 * Every page cache miss in do_sync_mmap_readahead() adds one to
 * file->f_ra.mmap_miss; above MMAP_LOTSAMISS (100) a fault reads only its
 * own folio, no read-around and no PG_readahead marker. Hits take the
 * counter down again. When only the faulting address counts as a hit
 * (not the neighbours fault-around maps, not FAULT_FLAG_TRIED retries),
 * nothing can take it down once it is over the limit and nothing is read
 * ahead: every later fault through that struct file reads one folio, even
 * a plain in-order scan. Restarting readahead needs a PG_readahead marker
 * on a folio after the faulting one, which on a min folio order mapping
 * means a second min-size folio, not a second page.
 *
 * File layout (one struct file, one mapping):
 *
 *   0                              random region               seq region
 *   |-x------x------x---- ... -----x------|================================|
 *     ^ 300 single-page faults, shuffled,  ^ 128 MiB read in order, one
 *       8 readahead windows apart            touch per page (or 4 threads,
 *       (each one a real miss)               32 MiB each, in order)
 *
 * Bound: major faults of the in-order part <= folios in it / 12.
 *   broken: one major fault per folio (32768 at 4 KiB, 8192 at 16 KiB,
 *           2048 at 64 KiB folios): 12x the bound.
 *   healthy: one synchronous read-around, then PG_readahead keeps async
 *           readahead ahead of the reader: 1; with 4 threads interleaving
 *           on one readahead state, 4 to 8. Kernels without per-VMA locks
 *           (6.1) drop mmap_lock for each async readahead and retry the
 *           fault, and a retried fault counts as major: one per ra window,
 *           256 at read_ahead_kb 512, still 10x under the 4 KiB bound.
 *
 * gup_after_random: the same random phase, then the kernel reads the
 * in-order region through the mapping: it is written with O_DIRECT, 1 MiB
 * at a time, to another file, so get_user_pages faults each page in. A
 * GUP fault holds mmap_lock, not a per-VMA lock, drops it for each async
 * readahead and retries, and a retried fault counts as major. The window
 * is widened to read_ahead_kb 16384 after the random phase
 * (POSIX_FADV_NORMAL copies the disk's new ra_pages into the struct file
 * and leaves mmap_miss alone), so that one retry per window stays far
 * under the bound on 64 KiB folios.
 *   Bound: folios / 12, as above.
 *   healthy: about one per ra window: 8 windows, 9 to 10 measured.
 *   broken: one per folio, as above.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_util.h"

#define RANDOM_FAULTS	(3 * RA_MMAP_LOTSAMISS)
#define SEQ_SIZE	(128UL << 20)
#define RA_KB		512UL
#define THREADS		4
#define GUP_RA_KB	16384UL
#define GUP_CHUNK	(1024 * 1024UL)
#define SUSPECT \
	"suspected: mmap_miss stuck above MMAP_LOTSAMISS, read-around and async readahead never restart (sticky mmap_miss)"
#define FMT_SEQ \
	"%ld major faults after %zu of %lu pages, bound %ld, ra_pages %lu, folio %lu bytes; "
#define FMT_GUP \
	"%ld major faults after %zu of %lu MiB, bound %ld, ra_pages %lu, folio %lu bytes; "
#define FMT_THREADS \
	"%ld major faults, bound %ld, ra_pages %lu, folio %lu bytes; "

FIXTURE(sticky_miss) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
	size_t spacing;		/* bytes between two random faults */
	size_t seq_off;		/* file offset of the in-order region */
	long bound;
};

FIXTURE_VARIANT(sticky_miss) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(sticky_miss, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(sticky_miss, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(sticky_miss)
{
	size_t random_bytes = RANDOM_FAULTS * RA_KB * 1024;
	size_t seq_bytes = SEQ_SIZE + 2 * GUP_RA_KB * 1024;
	int ret = ra_fs_setup(&self->fs, variant->fs);

	if (!ra_ready(_metadata, ret, &self->fs))
		return;

	/* Eight read-around windows apart: no fault lands in another's. */
	self->spacing = 8 * RA_KB * 1024;
	if (self->spacing < 2 * ra_folio_size(&self->fs))
		self->spacing = 2 * ra_folio_size(&self->fs);
	self->seq_off = RANDOM_FAULTS * self->spacing;
	self->size = self->seq_off + SEQ_SIZE;
	self->bound = SEQ_SIZE / ra_folio_size(&self->fs) / 12;

	/*
	 * The random phase reads around each fault and is dropped after;
	 * the threads and gup_after_random keep the whole in-order region,
	 * gup_after_random with two GUP_RA_KB windows ahead.
	 */
	ret = ra_need_memory(&self->fs, random_bytes > seq_bytes ?
			     random_bytes : seq_bytes);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
}

FIXTURE_TEARDOWN(sticky_miss)
{
	if (self->map && self->map != MAP_FAILED)
		munmap(self->map, self->size);
	if (self->fd > 0)
		close(self->fd);
	ra_fs_teardown(&self->fs);
}

/*
 * Fault RANDOM_FAULTS single pages of the random region, @spacing bytes
 * apart, in a shuffled but fixed order, and check they were all misses:
 * without real misses mmap_miss never passes the limit.
 */
static void random_phase(struct __test_metadata *_metadata, const char *map,
			 size_t spacing)
{
	unsigned int order[RANDOM_FAULTS], seed = 12345;
	long start = ra_majflt(), random;
	int i, j, t;

	for (i = 0; i < RANDOM_FAULTS; i++)
		order[i] = i;
	for (i = RANDOM_FAULTS - 1; i > 0; i--) {
		seed = seed * 1103515245 + 12345;
		j = (seed >> 8) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < RANDOM_FAULTS; i++)
		FORCE_READ(map[order[i] * spacing]);
	random = ra_majflt() - start;
	/* Only mmap_miss matters from here on, not the pages read. */
	ra_uncache(map, RANDOM_FAULTS * spacing);
	ksft_print_msg("random phase: %ld major faults, at least %d needed\n",
		       random, 2 * RA_MMAP_LOTSAMISS);
	ASSERT_GE(random, 2 * RA_MMAP_LOTSAMISS)
		TH_LOG("random faults were not page cache misses: the test proves nothing");
}

TEST_F_TIMEOUT(sticky_miss, sequential_after_random, 180)
{
	size_t ps = self->fs.page_size;
	struct ra_walk walk;

	random_phase(_metadata, self->map, self->spacing);

	ra_walk_pages(self->map + self->seq_off, SEQ_SIZE / ps, false,
		      ra_limit(self->bound), &walk);
	ra_report(&self->fs, "in-order read after random faults",
		  walk.majflt, self->bound);
	EXPECT_LE(walk.majflt, self->bound)
		TH_LOG(FMT_SEQ SUSPECT, walk.majflt, walk.touched,
		       SEQ_SIZE / ps, self->bound,
		       ra_pages(&self->fs), ra_folio_size(&self->fs));
}

struct reader {
	const char *addr;
	size_t npages;
	long limit;
	struct ra_walk walk;
};

static void *read_range(void *arg)
{
	struct reader *r = arg;

	ra_walk_pages(r->addr, r->npages, false, r->limit, &r->walk);
	return NULL;
}

TEST_F_TIMEOUT(sticky_miss, threads_after_random, 180)
{
	size_t ps = self->fs.page_size, per = SEQ_SIZE / THREADS;
	struct reader readers[THREADS];
	pthread_t tids[THREADS];
	long start, total;
	int i;

	random_phase(_metadata, self->map, self->spacing);

	/*
	 * Each thread sees the whole process's major faults, so each may
	 * stop once the process passes the bound.
	 */
	start = ra_majflt();
	for (i = 0; i < THREADS; i++) {
		readers[i].addr = self->map + self->seq_off + i * per;
		readers[i].npages = per / ps;
		readers[i].limit = ra_limit(self->bound);
		ASSERT_EQ(0, pthread_create(&tids[i], NULL, read_range,
					    &readers[i]));
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(tids[i], NULL);
	total = ra_majflt() - start;

	ra_report(&self->fs, "4 threads reading in order after random faults",
		  total, self->bound);
	EXPECT_LE(total, self->bound)
		TH_LOG(FMT_THREADS SUSPECT, total, self->bound, ra_pages(&self->fs),
		       ra_folio_size(&self->fs));
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

TEST_F_TIMEOUT(sticky_miss, gup_after_random, 180)
{
	size_t chunk = GUP_CHUNK, done;
	long start, majflt = 0;
	int sink;

	sink = direct_sink(&self->fs);
	if (sink < 0)
		SKIP(return, "no O_DIRECT file on %s: %s", self->fs.dir,
		     strerror(errno));
	random_phase(_metadata, self->map, self->spacing);
	ASSERT_EQ(0, ra_set_read_ahead_kb(&self->fs, GUP_RA_KB))
		TH_LOG("%s", self->fs.why);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_NORMAL));

	/* Each chunk overwrites the first MiB of the sink. */
	start = ra_majflt();
	for (done = 0; done < SEQ_SIZE && majflt <= ra_limit(self->bound);
	     done += chunk) {
		char *from = self->map + self->seq_off + done;

		ASSERT_EQ((ssize_t)chunk, pwrite(sink, from, chunk, 0))
			TH_LOG("O_DIRECT write from the mapping: %s",
			       strerror(errno));
		/* Unmapped and dropped: the page cache stays small. */
		ra_uncache(from, chunk);
		majflt = ra_majflt() - start;
	}
	close(sink);

	ra_report(&self->fs, "in-order O_DIRECT write from the mapping after random faults",
		  majflt, self->bound);
	EXPECT_LE(majflt, self->bound)
		TH_LOG(FMT_GUP SUSPECT, majflt, done >> 20, SEQ_SIZE >> 20,
		       self->bound, ra_pages(&self->fs),
		       ra_folio_size(&self->fs));
}

TEST_HARNESS_MAIN
