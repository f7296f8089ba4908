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
 *     ^ 300 single-page faults, shuffled,  ^ 64 MiB read in order, one
 *       8 readahead windows apart            touch per page (or 4 threads,
 *       (each one a real miss)               16 MiB each, in order)
 *
 * Bound: major faults of the in-order part <= folios in it / 16.
 *   broken: one major fault per folio (16384 at 4 KiB, 4096 at 16 KiB,
 *           1024 at 64 KiB folios): 16x the bound.
 *   healthy: one synchronous read-around, then PG_readahead keeps async
 *           readahead ahead of the reader: 1 (one per thread with
 *           threads); the bound is at least 64.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "ra_util.h"

#define RANDOM_FAULTS	(3 * RA_MMAP_LOTSAMISS)
#define SEQ_SIZE	(64UL << 20)
#define RA_KB		512UL
#define THREADS		4
#define SUSPECT		"suspected: mmap_miss stuck above MMAP_LOTSAMISS, read-around and async readahead never restart (sticky mmap_miss)"

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
	const char *type;
	unsigned long block_size;
};

RA_FS_VARIANTS(sticky_miss);

FIXTURE_SETUP(sticky_miss)
{
	RA_SETUP_FS(&self->fs, variant);

	/* Eight read-around windows apart: no fault lands in another's. */
	self->spacing = 8 * RA_KB * 1024;
	if (self->spacing < 2 * ra_folio_size(&self->fs))
		self->spacing = 2 * ra_folio_size(&self->fs);
	self->seq_off = RANDOM_FAULTS * self->spacing;
	self->size = self->seq_off + SEQ_SIZE;
	self->bound = SEQ_SIZE / ra_folio_size(&self->fs) / 16;

	RA_PREPARE_FILE(&self->fs, self->size, RA_KB, &self->fd);
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
 * Fault RANDOM_FAULTS single pages of the random region in a shuffled
 * (but fixed) order. Returns the major faults taken.
 */
static long random_phase(FIXTURE_DATA(sticky_miss) *self)
{
	unsigned int order[RANDOM_FAULTS], seed = 12345;
	long start = ra_majflt();
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
		(void)*(volatile char *)(self->map + order[i] * self->spacing);
	return ra_majflt() - start;
}

TEST_F_TIMEOUT(sticky_miss, sequential_after_random, 180)
{
	size_t ps = self->fs.page_size;
	struct ra_walk walk;
	long random;

	random = random_phase(self);
	ra_report(&self->fs, "random phase", random, 2 * RA_MMAP_LOTSAMISS);
	/* Without real misses the counter never passes the limit. */
	ASSERT_GE(random, 2 * RA_MMAP_LOTSAMISS)
		TH_LOG("random faults were not page cache misses: the test proves nothing");

	ra_walk_pages(self->map + self->seq_off, SEQ_SIZE / ps, false,
		      ra_limit(self->bound), &walk);
	ra_report(&self->fs, "in-order read after random faults",
		  walk.majflt, self->bound);
	EXPECT_LE(walk.majflt, self->bound)
		TH_LOG("%ld major faults in %zu pages, bound %ld, ra_pages %lu, folio %lu bytes; "
		       SUSPECT, walk.majflt, walk.touched, self->bound,
		       ra_pages(&self->fs), ra_folio_size(&self->fs));
}

struct reader {
	const volatile char *addr;
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
	long random, start, total;
	int i;

	random = random_phase(self);
	ra_report(&self->fs, "random phase", random, 2 * RA_MMAP_LOTSAMISS);
	ASSERT_GE(random, 2 * RA_MMAP_LOTSAMISS)
		TH_LOG("random faults were not page cache misses: the test proves nothing");

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
		TH_LOG("%ld major faults, bound %ld, ra_pages %lu, folio %lu bytes; "
		       SUSPECT, total, self->bound, ra_pages(&self->fs),
		       ra_folio_size(&self->fs));
}

TEST_HARNESS_MAIN
