// SPDX-License-Identifier: GPL-2.0
/*
 * A thrashing reader's faults that wait on a folio locked for another
 * thread's read: once mmap_miss has passed MMAP_LOTSAMISS, they must not
 * count as mmap hits (do_async_mmap_readahead()), or seven of them per
 * miss take the counter back under the limit and read-around comes back
 * for a file whose reads only add to memory pressure. Measured: pages
 * brought into the page cache per round, each round one cold folio at a
 * random spot, read by one thread while seven wait for it. Healthy: the
 * round reads its folio. Broken: read-around, ra_pages a round. Bound:
 * ra_thrash_bound() per round. Every round has its seven waiters by
 * construction: the read is held (io.max) until all of them sleep on the
 * folio. All threads run on one CPU, so that their retries come one
 * after the other: what is guarded is the waits. Retries racing on many
 * CPUs for the folio just read each count a hit in filemap_fault() on
 * 7.3 as well (they carry no FAULT_FLAG_TRIED); this test does not claim
 * that case.
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"
#include "cgroup_util.h"
#include "ra_cgroup.h"

#define ROUNDS		30
#define FAULTERS	8	/* one reader, seven waiters, each round */
#define DEV_LEN	32	/* "major:minor" */
#define STATE_WAIT_S	5	/* a held read never ends: only a bound */
#define SUSPECT \
	"faults waiting on a locked folio counted as mmap hits (do_async_mmap_readahead()); if random_reader fails too, the mmap_miss gate itself (kernels before 0b9c0aeba938, 7.2, or MMAP_LOTSAMISS raised past 110)"

/* One thread faulting the round's spot when told to. */
struct faulter {
	pthread_t thread;
	sem_t go;
	sem_t *done;
	const char **target;
	pid_t tid;
	long faults;	/* minor and major faults of its last access */
};

/*
 * At least ten times the case's slowest run in QEMU under TCG, past the
 * harness's default of 30 s: time for a debug kernel (KASAN, lockdep)
 * under emulation.
 */
#define TIMEOUT_S	75

/**
 * hold_reads() - hold or release the cgroup's reads of the test's disk
 * @fs: filesystem whose disk is read; @fs->why on skip or failure
 * @cg: cgroup entered with ra_cgroup_enter(@fs, @cg, "io")
 * @dev: the disk's "major:minor", read from sysfs here when empty
 * @hold: true to hold every read from now on, false to release them
 *
 * Holding writes "<major>:<minor> rbps=1" to io.max: blk-throttle queues
 * each read bio of this cgroup's tasks on the disk until one byte per
 * second of budget covers it, which for the smallest bio (a page) is over
 * an hour. The folio under such a read stays locked until the test
 * releases it: releasing writes "rbps=max", and a change of io.max
 * dispatches what is queued at once (tg_conf_updated()). Removing the
 * cgroup, however the test ends, dispatches it too. Only this cgroup is
 * held, and the limit goes with the cgroup.
 *
 * Return: 0; KSFT_SKIP with @fs->why set when the kernel has no
 * blk-throttle (no io.max) or the disk is unknown; -1 with @fs->why set
 * when the write fails.
 */
static int hold_reads(struct ra_fs *fs, struct ra_cgroup *cg, char *dev, bool hold)
{
	char path[3 * RA_PATH_LEN], buf[64];
	size_t n = strlen(fs->sysfs_ra);
	const char *tail = "queue/read_ahead_kb";
	FILE *f;

	if (!dev[0]) {
		if (n < strlen(tail) || strcmp(fs->sysfs_ra + n - strlen(tail), tail))
			return ra_fs_skip(fs, "no block device known for %s", fs->dir);
		snprintf(path, sizeof(path), "%.*sdev",
			 (int)(n - strlen(tail)), fs->sysfs_ra);
		f = fopen(path, "re");
		if (!f || !fgets(dev, DEV_LEN, f)) {
			if (f)
				fclose(f);
			return ra_fs_skip(fs, "cannot read %s", path);
		}
		fclose(f);
		dev[strcspn(dev, "\n")] = '\0';
	}
	snprintf(path, sizeof(path), "%s/io.max", cg->path);
	if (access(path, W_OK))
		return ra_fs_skip(fs, "kernel without blk-throttle: no io.max");
	snprintf(buf, sizeof(buf), "%s rbps=%s", dev, hold ? "1" : "max");
	if (cg_write(cg->path, "io.max", buf))
		return ra_fs_fail(fs, hold ? "holding reads in io.max" :
				  "releasing reads in io.max");
	return 0;
}

FIXTURE(thrash_locked) {
	struct ra_fs fs;
	struct ra_cgroup cg;
	char dev[DEV_LEN];	/* "major:minor" io.max throttles, or "" */
	int fd;
	char *map;
	size_t size;
	size_t slot;		/* bytes per round: two read-around windows */
	size_t rounds_off;	/* file offset of the rounds' slots */
	struct faulter faulter[FAULTERS];
	sem_t done;
	const char *target;
	int nr_threads;
};

FIXTURE_VARIANT(thrash_locked) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(thrash_locked, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(thrash_locked, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(thrash_locked, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(thrash_locked, xfs_64k) { .fs = &ra_xfs_64k };

/*
 * The rounds' spots hold data, so that reading one is a real bio that
 * io.max can hold; everything else is a hole, read without I/O. They are
 * written through a struct file of their own: the tested one stays cold.
 */
static int write_spots(struct __test_metadata *_metadata, struct ra_fs *fs,
		       size_t first, size_t slot, size_t size)
{
	size_t folio = ra_folio_size(fs);
	unsigned int seed = 31337, i;
	char *data = malloc(folio);
	int fd, ret;

	ASSERT_NE(NULL, data);
	memset(data, 0x5a, folio);
	fd = open(fs->file, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < ROUNDS; i++) {
		size_t base = first + i * slot;
		size_t spot = ra_slot_spot(base, slot, folio, &seed);

		ASSERT_EQ((ssize_t)folio, pwrite(fd, data, folio, spot));
	}
	free(data);
	ASSERT_EQ(0, fdatasync(fd));
	ret = ra_drop_cache(fs, fd, size);
	close(fd);
	return ret;
}

FIXTURE_SETUP(thrash_locked)
{
	int ret;

	self->fd = -1;
	ret = ra_fs_setup(&self->fs, variant->fs);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->slot = 2 * RA_THRASH_KB * 1024;
	ret = ra_need_memory(&self->fs, 2 * self->slot);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->rounds_off = RA_THRASH_FAULTS * RA_THRASH_SPACING;
	self->size = self->rounds_off + ROUNDS * self->slot;
	ret = ra_cgroup_enter(&self->fs, &self->cg, "io");
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, self->size, RA_THRASH_WARM_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = write_spots(_metadata, &self->fs, self->rounds_off, self->slot,
			  self->size);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	ra_assert_thrashing(_metadata, &self->fs, self->fd, self->map);
}

FIXTURE_TEARDOWN(thrash_locked)
{
	int i;

	/* A held read ends first, then threads waiting for a round stop. */
	if (self->dev[0])
		hold_reads(&self->fs, &self->cg, self->dev, false);
	self->target = NULL;
	for (i = 0; i < self->nr_threads; i++)
		sem_post(&self->faulter[i].go);
	for (i = 0; i < self->nr_threads; i++)
		pthread_join(self->faulter[i].thread, NULL);
	ra_teardown(&self->fs, self->map, self->size, self->fd);
	ra_cgroup_leave(&self->cg);
}

static void *faulter_main(void *arg)
{
	struct faulter *f = arg;
	struct rusage before, after;

	f->tid = syscall(SYS_gettid);
	sem_post(f->done);
	for (;;) {
		sem_wait(&f->go);
		if (!*f->target)
			return NULL;
		getrusage(RUSAGE_THREAD, &before);
		FORCE_READ(**f->target);
		getrusage(RUSAGE_THREAD, &after);
		f->faults = after.ru_majflt - before.ru_majflt +
			    after.ru_minflt - before.ru_minflt;
		sem_post(f->done);
	}
}

/* Whether @f sleeps uninterruptibly: 'D' in its stat, after the ')'. */
static bool sleeping(struct faulter *f)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", f->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'D';
}

/*
 * Poll, within STATE_WAIT_S, until the @nr faulters at @f all sleep and
 * the folio at @off of @fd is in the page cache, where cachestat() counts
 * it from its insertion, still locked under its read (mincore() would
 * not; without cachestat(), the sleep alone tells). With the read held, a
 * faulter sleeps there only on that folio: the reader under its read, the
 * others on the folio lock.
 */
static bool wait_asleep(struct faulter *f, int nr, int fd, size_t off)
{
	struct timespec start, now;
	int w;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (w = 0; w < nr && sleeping(&f[w]); w++)
			;
		if (w == nr && ra_cached_pages(fd, NULL, off, 1) != 0)
			return true;
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < STATE_WAIT_S);
	return false;
}

/*
 * Eight threads of one process fault the same cold folio each round:
 *
 *   round i: |------------ slot: 2 read-around windows ------------|
 *                              ^ spot: one folio of data, rest a hole
 *   thread 0:  fault, miss ---[ read, held by io.max ]-----+-->
 *   threads 1-7:  fault, find it locked, sleep on it ------+-->
 *   main:      all eight asleep: release the read ---------^
 *
 * The reader counts the miss; the others would count hits, the guard
 * aside: seven hits for one miss a round. Threads that come after the
 * page is mapped take no fault: threads of one process share page tables.
 */
TEST_F_TIMEOUT(thrash_locked, concurrent_faults, TIMEOUT_S)
{
	size_t folio = ra_folio_size(&self->fs);
	long bound, pages = 0, waiters = 0;
	unsigned int seed = 31337, i;
	cpu_set_t cpus;
	int ret, w, n;

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
	ASSERT_EQ(0, sem_init(&self->done, 0, 0));
	for (w = 0; w < FAULTERS; w++) {
		struct faulter *f = &self->faulter[w];

		ASSERT_EQ(0, sem_init(&f->go, 0, 0));
		f->done = &self->done;
		f->target = &self->target;
		ASSERT_EQ(0, pthread_create(&f->thread, NULL, faulter_main, f));
		self->nr_threads++;
		sem_wait(&self->done);
	}

	bound = ra_thrash_bound(&self->fs);
	for (i = 0; i < ROUNDS && pages <= ra_limit(bound * ROUNDS); i++) {
		size_t base = self->rounds_off + i * self->slot;
		size_t spot = ra_slot_spot(base, self->slot, folio, &seed);
		long before;

		before = ra_cached_pages(self->fd, self->map, base, self->slot);
		ASSERT_LE(0, before);
		ret = hold_reads(&self->fs, &self->cg, self->dev, true);
		if (!ra_ready(_metadata, ret, &self->fs))
			return;
		/* The reader misses and sleeps under its held read... */
		self->target = self->map + spot;
		sem_post(&self->faulter[0].go);
		if (!wait_asleep(self->faulter, 1, self->fd, spot))
			SKIP(return,
			     "round %u: the reading thread never slept under its held read",
			     i);
		/* ...the others find the folio locked and sleep on it. */
		for (w = 1; w < FAULTERS; w++)
			sem_post(&self->faulter[w].go);
		if (!wait_asleep(self->faulter + 1, FAULTERS - 1, self->fd,
				 spot))
			SKIP(return,
			     "round %u: not all %d waiters slept on the locked folio",
			     i, FAULTERS - 1);
		ret = hold_reads(&self->fs, &self->cg, self->dev, false);
		ASSERT_EQ(0, ret) TH_LOG("%s", self->fs.why);
		for (w = 0; w < FAULTERS; w++)
			sem_wait(&self->done);
		for (w = 1, n = 0; w < FAULTERS; w++)
			n += self->faulter[w].faults > 0;
		waiters += n;
		n = ra_cached_pages(self->fd, self->map, base, self->slot);
		ASSERT_LE(0, n);
		pages += n - before;
		ra_drop_range(self->fd, self->map, base, self->slot);
	}
	RA_EXPECT_FIGURE(&self->fs, "concurrent faults on locked folios",
			 pages / i, "pages per round", bound, SUSPECT,
			 "%ld pages in %u rounds of %d threads, %ld of %u waiters faulted",
			 pages, i, FAULTERS, waiters, i * (FAULTERS - 1));
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
