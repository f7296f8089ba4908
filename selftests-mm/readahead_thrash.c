// SPDX-License-Identifier: GPL-2.0
/*
 * Thrashing readers: once mmap_miss has passed MMAP_LOTSAMISS, two kinds
 * of page cache hit must not take it back under the limit, or read-around
 * comes back for a file whose reads only add to memory pressure: faults
 * that wait on a folio locked for another thread's read (concurrent_faults,
 * do_async_mmap_readahead()), and fault-around hits on folios that
 * refaulted with PG_workingset (refaulting_workingset, filemap_map_pages()).
 * Measured: pages brought into the page cache per round, each round one
 * cold folio faulted at a random spot far from the others, plus the hits.
 * Healthy: the counter only grows, each round reads its folio. Broken: the
 * hits outnumber the misses, the counter falls under the limit and every
 * later round reads ra_pages. Bound per round: sqrt(folio pages *
 * ra_pages), their geometric mean; at read_ahead_kb 16384 ra_pages is at
 * least 256 folios, so both lie 16x or more from it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <linux/mman.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"
#include "ra_cgroup.h"

#define WARMUP		(RA_MMAP_LOTSAMISS + 10)
#define WARM_KB		128UL
#define RA_KB		16384UL
#define WARM_SLOT	(2UL << 20)	/* no page cache folio is larger */
#define ROUNDS		30
#define FAULTERS	8	/* one miss, seven waiters, each round */
#define RIOPS		10	/* a throttled read takes about 100 ms */
#define HITS		3	/* refaulted folios hit per round */
#define BALLAST		(8UL << 20)
#define ACCESSES	8	/* reads that make a folio working set */
#define SUSPECT_LOCKED \
	"faults waiting on a locked folio counted as mmap hits (do_async_mmap_readahead()); if random_reader fails too, the mmap_miss gate itself"
#define SUSPECT_WORKINGSET \
	"fault-around hits on PG_workingset folios counted as mmap hits (filemap_map_pages()); if random_reader fails too, the mmap_miss gate itself"

/* One thread faulting the round's spot when told to. */
struct faulter {
	pthread_t thread;
	sem_t go;
	sem_t *done;
	const char **target;
	pid_t tid;
	bool busy;	/* set while it is faulting (atomic) */
	long faults;	/* minor and major faults of its last access */
};

/* What a test works on: its filesystem, cgroup, file and mappings. */
struct thrash {
	struct ra_fs fs;
	struct ra_cgroup cg;
	int fd;
	int fd_prep;
	char *map;
	char *map_prep;
	size_t size;
	size_t slot;		/* bytes per round: two read-around windows */
	size_t rounds_off;	/* file offset of the rounds' slots */
	struct faulter faulter[FAULTERS];
	sem_t done;
	const char *target;
	int nr_threads;
};

/* Slowest case measured x15; all readahead cases fit mm's settings timeout */
#define TIMEOUT_S	5

FIXTURE(thrash) {
	struct thrash t;
};

FIXTURE_VARIANT(thrash) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(thrash, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(thrash, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(thrash, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(thrash, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(thrash)
{
	struct thrash *t = &self->t;
	int ret;

	t->fd = -1;
	t->fd_prep = -1;
	ret = ra_fs_setup(&t->fs, variant->fs);
	if (!ra_ready(_metadata, ret, &t->fs))
		return;
	/* A round's slot is dropped after it; the ballast stays. */
	t->slot = 2 * RA_KB * 1024;
	ret = ra_need_memory(&t->fs, 2 * t->slot + BALLAST);
	if (!ra_ready(_metadata, ret, &t->fs))
		return;
	t->rounds_off = WARMUP * WARM_SLOT;
	t->size = t->rounds_off + ROUNDS * t->slot + BALLAST;
}

FIXTURE_TEARDOWN(thrash)
{
	struct thrash *t = &self->t;
	int i;

	/* Threads still waiting for a round are told there is none. */
	t->target = NULL;
	for (i = 0; i < t->nr_threads; i++)
		sem_post(&t->faulter[i].go);
	for (i = 0; i < t->nr_threads; i++)
		pthread_join(t->faulter[i].thread, NULL);
	if (t->map_prep && t->map_prep != MAP_FAILED)
		munmap(t->map_prep, t->size);
	if (t->fd_prep >= 0)
		close(t->fd_prep);
	ra_teardown(&t->fs, t->map, t->size, t->fd);
	ra_cgroup_leave(&t->cg);
}

/*
 * The test file, opened cold at read_ahead_kb WARM_KB (ra_file_prepare()),
 * is mapped and faulted at WARMUP single pages, each in its own slot, so
 * that mmap_miss passes MMAP_LOTSAMISS at the cost of reads of 32 pages;
 * then the window widens to RA_KB (POSIX_FADV_NORMAL copies the disk's
 * ra_pages into the struct file, mmap_miss stays).
 */
static void warm_up(struct __test_metadata *_metadata,
		    struct thrash *t)
{
	t->map = mmap(NULL, t->size, PROT_READ, MAP_SHARED, t->fd, 0);
	ASSERT_NE(MAP_FAILED, t->map);
	ra_assert_random_phase(_metadata, t->map, WARMUP, WARM_SLOT);
	ASSERT_EQ(0, ra_set_read_ahead_kb(&t->fs, RA_KB))
		TH_LOG("%s", t->fs.why);
	ASSERT_EQ(0, posix_fadvise(t->fd, 0, 0, POSIX_FADV_NORMAL));
	ASSERT_EQ(0, ra_uncache(t->map, t->rounds_off));
}

/* The bound per round, in pages (see the top of the file). */
static long round_bound(struct thrash *t)
{
	size_t ps = t->fs.page_size;

	return ra_isqrt(ra_folio_size(&t->fs) / ps * ra_pages(&t->fs));
}

static void *faulter_main(void *arg)
{
	struct faulter *f = arg;
	struct rusage before, after;

	f->tid = gettid();
	sem_post(f->done);
	for (;;) {
		sem_wait(&f->go);
		if (!*f->target)
			return NULL;
		getrusage(RUSAGE_THREAD, &before);
		FORCE_READ(**f->target);
		getrusage(RUSAGE_THREAD, &after);
		__atomic_store_n(&f->busy, false, __ATOMIC_RELEASE);
		f->faults = after.ru_majflt - before.ru_majflt +
			    after.ru_minflt - before.ru_minflt;
		sem_post(f->done);
	}
}

/*
 * Wait until @f sleeps in uninterruptible state ('D' in its stat) with
 * the folio at @off in the page cache, where cachestat() can tell (it
 * counts folios still under read, which mincore() does not): the
 * reading thread then holds the folio locked for its throttled read. A
 * read that blk-throttle let through at once (the first of a time slice)
 * ends the wait too: that round has no waiters, and the count says so.
 */
static bool wait_reading(struct faulter *f, int fd, size_t off, size_t ps)
{
	struct timespec start, now;
	char path[64], buf[512], *p;
	bool cached;
	ssize_t n;
	int stat;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", f->tid);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		cached = ra_cachestat(fd, off, ps) != 0;
		stat = open(path, O_RDONLY | O_CLOEXEC);
		if (stat < 0)
			return false;
		n = read(stat, buf, sizeof(buf) - 1);
		close(stat);
		buf[n > 0 ? n : 0] = '\0';
		p = strrchr(buf, ')');
		if ((cached && p && p[1] == ' ' && p[2] == 'D') ||
		    !__atomic_load_n(&f->busy, __ATOMIC_ACQUIRE))
			return true;
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 10);
	return false;
}

/*
 * Eight threads of one process fault the same cold folio each round:
 *
 *   round i: |------------ slot: 2 read-around windows ------------|
 *                              ^ spot: one folio of data, rest a hole
 *   thread 0:  fault, miss ----[ read, held by io.max ~100 ms ]-->
 *   main:         mincore() sees the folio in the page cache
 *   threads 1-7:     fault, find it locked, wait ------------------>
 *
 * The reading thread counts the miss. The others would count hits, the
 * guard aside: seven hits for one miss a round. They are let go only once
 * the folio is in the page cache, and the read takes a blk-throttle turn
 * (riops RIOPS, in the test's own cgroup), so they find it locked; how
 * many waited is counted from their own fault counts and printed. Threads
 * that come after the page is mapped take no fault: threads of one
 * process share page tables.
 */
TEST_F_TIMEOUT(thrash, concurrent_faults, TIMEOUT_S)
{
	struct thrash *t = &self->t;
	size_t ps = t->fs.page_size, folio = ra_folio_size(&t->fs);
	long bound, pages = 0, waiters = 0;
	unsigned int seed = 31337, i;
	cpu_set_t cpus;
	char *data;
	int ret, w, n;

	ret = ra_cgroup_enter(&t->fs, &t->cg, "io");
	if (!ra_ready(_metadata, ret, &t->fs))
		return;
	/*
	 * The spots hold data, so that reading one is a real bio that
	 * io.max can hold; everything else is a hole, read without I/O.
	 */
	ret = ra_file_prepare(&t->fs, t->size, WARM_KB, &t->fd);
	if (!ra_ready(_metadata, ret, &t->fs))
		return;
	data = malloc(folio);
	ASSERT_NE(NULL, data);
	memset(data, 0x5a, folio);
	t->fd_prep = open(t->fs.file, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, t->fd_prep);
	for (i = 0; i < ROUNDS; i++) {
		size_t base = t->rounds_off + i * t->slot;
		size_t spot = ra_slot_spot(base, t->slot, folio, &seed);

		ASSERT_EQ((ssize_t)folio, pwrite(t->fd_prep, data, folio, spot));
	}
	free(data);
	ASSERT_EQ(0, fdatasync(t->fd_prep));
	/* Written through another struct file: the tested one is still cold. */
	ASSERT_EQ(0, ra_drop_cache(t->fd_prep, t->size))
		TH_LOG("the file did not leave the page cache");

	warm_up(_metadata, t);
	ret = ra_cgroup_throttle_reads(&t->fs, &t->cg, RIOPS);
	if (!ra_ready(_metadata, ret, &t->fs))
		return;

	/*
	 * All threads on one CPU: when the read ends, the waiters' retries
	 * run one after the other, and only the first finds the page
	 * unmapped. Retries racing on many CPUs would each count a hit in
	 * filemap_fault() (they carry no FAULT_FLAG_TRIED), a healthy
	 * kernel's counter would fall, and the figure would depend on the
	 * machine. The threads inherit the mask.
	 */
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu(), &cpus);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(cpus), &cpus));
	ASSERT_EQ(0, sem_init(&t->done, 0, 0));
	for (w = 0; w < FAULTERS; w++) {
		struct faulter *f = &t->faulter[w];

		ASSERT_EQ(0, sem_init(&f->go, 0, 0));
		f->done = &t->done;
		f->target = &t->target;
		ASSERT_EQ(0, pthread_create(&f->thread, NULL, faulter_main, f));
		t->nr_threads++;
		sem_wait(&t->done);
	}

	bound = round_bound(t);
	seed = 31337;
	for (i = 0; i < ROUNDS && pages <= ra_limit(bound * ROUNDS); i++) {
		size_t base = t->rounds_off + i * t->slot;
		size_t spot = ra_slot_spot(base, t->slot, folio, &seed);
		long before;

		before = ra_cached_pages(t->fd, t->map, base, t->slot);
		ASSERT_LE(0, before);
		t->target = t->map + spot;
		__atomic_store_n(&t->faulter[0].busy, true, __ATOMIC_RELEASE);
		sem_post(&t->faulter[0].go);
		ASSERT_TRUE(wait_reading(&t->faulter[0], t->fd, spot, ps))
			TH_LOG("round %u: the reading thread never waited for its read", i);
		for (w = 1; w < FAULTERS; w++)
			sem_post(&t->faulter[w].go);
		for (w = 0; w < FAULTERS; w++)
			sem_wait(&t->done);
		for (w = 1, n = 0; w < FAULTERS; w++)
			n += t->faulter[w].faults > 0;
		waiters += n;
		n = ra_cached_pages(t->fd, t->map, base, t->slot);
		ASSERT_LE(0, n);
		pages += n - before;
		ra_drop_range(t->fd, t->map, base, t->slot);
	}
	ksft_print_msg("faulters: %ld of %u waited for the reading thread (%ld.%02ld per round)\n",
		       waiters, i * (FAULTERS - 1), waiters / i,
		       waiters * 100 / i % 100);
	/*
	 * Read-around back is a FAIL whatever the overlap. Within the
	 * bound, under two waiters a round the hits could not have
	 * outnumbered the misses even where every one counts: not judged.
	 */
	if (pages / i <= bound && waiters < 2 * (long)i)
		SKIP(return, "%ld waits in %u rounds: reads too fast to judge",
		     waiters, i);
	RA_EXPECT_FIGURE(&t->fs, "concurrent faults on locked folios",
			 pages / i, "pages per round", bound, SUSPECT_LOCKED,
			 "%ld pages in %u rounds of %d threads, %ld.%02ld waiters per round",
			 pages, i, FAULTERS, waiters / i, waiters * 100 / i % 100);
}

#define FAULT_AROUND_ATTR	"/sys/kernel/debug/fault_around_bytes"

/* The fault-around window in bytes: debugfs, else the default (64 KiB). */
static unsigned long fault_around_window(void)
{
	return access(FAULT_AROUND_ATTR, R_OK) ? 65536UL :
	       read_num(FAULT_AROUND_ATTR);
}

/*
 * Make the folio at @off of the file a refaulted working-set folio:
 * read it ACCESSES times through the preparing struct file (in turn with
 * the other folios of the round, so that every read marks it accessed:
 * active on the classic LRU, PG_workingset on MGLRU), map it, evict it
 * with MADV_PAGEOUT (which marks an active folio PG_workingset, and
 * leaves a shadow entry that records it), and read it back: the refault
 * finds the shadow recent and sets PG_workingset on the new folio.
 */
static void prepare_hits(struct __test_metadata *_metadata,
			 struct thrash *t, const size_t *off)
{
	size_t folio = ra_folio_size(&t->fs);
	int a, h;
	char c;

	for (a = 0; a < ACCESSES; a++)
		for (h = 0; h < HITS; h++)
			ASSERT_EQ(1, pread(t->fd_prep, &c, 1, off[h]));
	for (h = 0; h < HITS; h++) {
		FORCE_READ(t->map_prep[off[h]]);
		ASSERT_EQ(0, madvise(t->map_prep + off[h], folio,
				     MADV_PAGEOUT));
		ASSERT_EQ(0, ra_resident_pages(t->map_prep + off[h], folio))
			TH_LOG("MADV_PAGEOUT left the folio cached");
		ASSERT_EQ(1, pread(t->fd_prep, &c, 1, off[h]));
	}
}

/*
 * A file whose folios are evicted and read again, in a memory cgroup of
 * its own: each round, three folios are made refaulted working-set
 * folios (prepare_hits()), then the tested struct file misses once at the
 * spot and hits each of the three once, through fault-around:
 *
 *   round i: |H|..|H|..|H|....|------ read-around window ------|....|
 *            one PMD apart     ^ spot, a miss, in the window's middle
 *
 * Healthy: one miss, no hit counted. Broken: three hits for one miss. The
 * memcg's workingset_restore_file shows that the hits were refaults of
 * working-set folios; the BALLAST, read twice and kept active, keeps the
 * refault distance within the memcg's active list on the classic LRU.
 */
TEST_F_TIMEOUT(thrash, refaulting_workingset, TIMEOUT_S)
{
	struct thrash *t = &self->t;
	size_t ps = t->fs.page_size, folio = ra_folio_size(&t->fs);
	size_t ballast = t->size - BALLAST, pmd = read_pmd_pagesize();
	long bound, pages = 0, restored, expected;
	unsigned int seed = 4711, i, pass;
	int ret, h;
	char *buf;

	if (!pmd || pmd > t->slot / 8)
		pmd = WARM_SLOT;
	/*
	 * The guard lives in fault-around (filemap_map_pages()). Where a
	 * fault-around window is one page (64 KiB pages, or
	 * fault_around_bytes lowered), a hit goes through filemap_fault()
	 * and do_async_mmap_readahead(), which counts it whatever the folio.
	 */
	if (fault_around_window() <= ps)
		SKIP(return, "fault-around window of %lu bytes is one page: no hit to judge",
		     fault_around_window());
	ret = ra_cgroup_enter(&t->fs, &t->cg, "memory");
	if (!ra_ready(_metadata, ret, &t->fs))
		return;
	ret = ra_file_prepare(&t->fs, t->size, WARM_KB, &t->fd);
	if (!ra_ready(_metadata, ret, &t->fs))
		return;
	warm_up(_metadata, t);

	/* A struct file of its own, so that the tested one's state stays. */
	t->fd_prep = open(t->fs.file, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, t->fd_prep);
	ASSERT_EQ(0, posix_fadvise(t->fd_prep, 0, 0, POSIX_FADV_RANDOM));
	t->map_prep = mmap(NULL, t->size, PROT_READ, MAP_SHARED, t->fd_prep, 0);
	ASSERT_NE(MAP_FAILED, t->map_prep);
	ASSERT_EQ(0, madvise(t->map_prep, t->size, MADV_RANDOM));
	buf = malloc(BALLAST);
	ASSERT_NE(NULL, buf);
	for (pass = 0; pass < 2; pass++)
		ASSERT_EQ((ssize_t)BALLAST,
			  pread(t->fd_prep, buf, BALLAST, ballast));
	free(buf);
	/*
	 * MADV_PAGEOUT evicts for no target memcg, against the root memcg's
	 * LRU age: on the classic LRU a refault is recent when its distance
	 * is within the root's active file list as last flushed. Unless the
	 * root already shows that much, wait (up to 4 s) for the periodic
	 * memcg stats flush (every 2 s) to count the ballast.
	 */
	ra_memcg_stat(t->cg.root, "active_file", BALLAST);
	restored = ra_memcg_stat(t->cg.path, "workingset_restore_file", 0);
	ASSERT_LE(0, restored) TH_LOG("no workingset_restore_file in memory.stat");

	bound = round_bound(t);
	for (i = 0; i < ROUNDS && pages <= ra_limit(bound * ROUNDS); i++) {
		size_t base = t->rounds_off + i * t->slot;
		size_t spot = ra_slot_spot(base, t->slot, folio, &seed);
		size_t hit[HITS];
		long before, after;

		for (h = 0; h < HITS; h++)
			hit[h] = base + h * pmd;
		prepare_hits(_metadata, t, hit);
		before = ra_cached_pages(t->fd, t->map, base, t->slot);
		ASSERT_LE(0, before);
		FORCE_READ(t->map[spot]);
		for (h = 0; h < HITS; h++)
			FORCE_READ(t->map[hit[h]]);
		after = ra_cached_pages(t->fd, t->map, base, t->slot);
		ASSERT_LE(0, after);
		pages += after - before;
		ra_drop_range(t->fd, t->map, base, t->slot);
	}

	/* Every hit folio should have refaulted as working set. */
	expected = (long)i * HITS * (folio / ps);
	restored = ra_memcg_stat(t->cg.path, "workingset_restore_file",
				 restored + expected) - restored;
	ksft_print_msg("refaults: %ld pages restored as working set, of %ld refaulted\n",
		       restored, expected);
	RA_EXPECT_FIGURE(&t->fs, "misses among refaulted working-set hits",
			 pages / i, "pages per round", bound, SUSPECT_WORKINGSET,
			 "%ld pages in %u rounds of 1 miss and %d hits",
			 pages, i, HITS);
	/* A pass means something only if the hits were working set. */
	if (pages / i <= bound)
		ASSERT_GE(restored, expected / 2)
			TH_LOG("hits did not refault with PG_workingset: the test proves nothing");
}

TEST_HARNESS_MAIN
