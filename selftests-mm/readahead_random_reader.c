// SPDX-License-Identifier: GPL-2.0
/*
 * Random readers: past MMAP_LOTSAMISS misses, a random fault must read
 * only the folio it needs, not a read-around window of ra_pages.
 *
 * The gate in do_sync_mmap_readahead() fails open when fault-around or
 * retried faults count as mmap hits (the counter stays near zero), when
 * it is missing, or when hits on what a readahead restart read for short
 * in-order runs take the counter back under the limit; and a restart
 * must not take pages another opener cached for a stream of this reader
 * (after_cached_runs). Each test is an access pattern (restart_costs and
 * after_cached_runs several), measured at read_ahead_kb 128 and 8192 on
 * a fresh open after a warm-up past the limit: pages brought into the
 * page cache per run. Healthy: the folios a run touches. Bound per run:
 * sqrt(healthy * ra_pages), the geometric mean of healthy and one
 * read-around (broken), which at read_ahead_kb 8192 on 4 KiB pages is
 * 45x healthy for single pages, 16x for runs of 8, 11x for 16 and 8x for
 * 32. A window is judged only where it holds 16 healthy runs, so that
 * both sides lie at least 4x from the bound.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define WARMUP		(RA_MMAP_LOTSAMISS + 10)
#define RUNS		50
#define WARM_KB		128UL
#define BIG_KB		8192UL
#define SLOT_WINDOWS	4
#define STRIDE_ACCESSES	50
#define CACHED_EVERY	3	/* after_cached: every third folio cached */
#define CACHED_RUN	4	/* after_cached: accesses per slot */
#define FOLIO_ALIGN	(2UL << 20)	/* no page cache folio here is larger */
#define JUDGE_RUNS	16	/* healthy runs a judged window holds */
#define FMT_NOT_JUDGED \
	"%s, read_ahead_kb %lu: not judged by design, a window of %lu pages holds fewer than %d runs of %lu pages\n"
#define FMT_RUNS \
	"%ld runs%s, %ld.%02ld pages per run, bound %lu per run (healthy %lu); warm-up %ld major faults"
#define SUSPECT \
	"random faults past MMAP_LOTSAMISS still read around (mmap_miss back at or under the limit, or no mmap_miss gate, or MMAP_LOTSAMISS raised past the warm-up's 110 faults); kernels before 0b9c0aeba938 (7.2) fail by design: fault-around hits keep mmap_miss low"
#define SUSPECT_TRACE \
	"a readahead restart past MMAP_LOTSAMISS takes pages another opener cached for a stream of this mapping (do_sync_mmap_readahead()), or read-around is back (mmap_miss at or under the limit)"

static const unsigned long stride_pages[] = { 1021, 1024, 2053, 4099 };

/* How a pattern is measured. */
enum measurement {
	IN_SLOTS,	/* one run per slot, slot by slot: measure_runs() */
	STRIDE_WALKS,	/* one access per stride step: measure_strides() */
};

/*
 * An access pattern, one test each. A run is @accesses accesses of @pages
 * adjacent pages, each from a folio boundary: a healthy kernel reads the
 * folios they touch (healthy_pages()).
 */
struct pattern {
	const char *name;	/* what the figure lines call it */
	unsigned int pages;	/* adjacent pages per access */
	unsigned int accesses;	/* accesses per run, CACHED_EVERY folios apart */
	bool after_cached;	/* each access on the folio after a cached one */
	unsigned int cached_below;	/* pages another opener caches below */
	enum measurement measure;
};

static const struct pattern single_pages = {
	.name = "random single pages",
	.pages = 1, .accesses = 1, .after_cached = false, .measure = IN_SLOTS,
};

static const struct pattern runs_of_2 = {
	.name = "random runs of 2 pages",
	.pages = 2, .accesses = 1, .after_cached = false, .measure = IN_SLOTS,
};

/* A readahead restart after a cached page hits here. */
static const struct pattern runs_of_4 = {
	.name = "random runs of 4 pages",
	.pages = 4, .accesses = 1, .after_cached = false, .measure = IN_SLOTS,
};

static const struct pattern runs_of_8 = {
	.name = "random runs of 8 pages",
	.pages = 8, .accesses = 1, .after_cached = false, .measure = IN_SLOTS,
};

static const struct pattern runs_of_16 = {
	.name = "random runs of 16 pages",
	.pages = 16, .accesses = 1, .after_cached = false, .measure = IN_SLOTS,
};

static const struct pattern runs_of_32 = {
	.name = "random runs of 32 pages",
	.pages = 32, .accesses = 1, .after_cached = false, .measure = IN_SLOTS,
};

#define FMT_RUN_NOT_JUDGED \
	"%s, read_ahead_kb %lu: not judged by design, a run of %u pages fills half a slot\n"
/*
 * Another opener caches a run just below each access (a file partly
 * cached by others): a trace of a stream this reader never made. Past
 * the limit 7.3 reads the folio, whatever the run.
 */
#define CACHED_RUN_PATTERN(n) {						\
	.name = "accesses just after " #n " pages another file cached",	\
	.pages = 1, .accesses = 1, .after_cached = false,		\
	.cached_below = n, .measure = IN_SLOTS,				\
}

static const struct pattern after_4_cached = CACHED_RUN_PATTERN(4);
static const struct pattern after_16_cached = CACHED_RUN_PATTERN(16);
static const struct pattern after_64_cached = CACHED_RUN_PATTERN(64);
static const struct pattern after_256_cached = CACHED_RUN_PATTERN(256);

static const struct pattern after_cached = {
	.name = "accesses just after a cached folio",
	.pages = 1, .accesses = CACHED_RUN, .after_cached = true,
	.measure = IN_SLOTS,
};

static const struct pattern strides = {
	.name = "strides of 1021, 1024, 2053, 4099 pages",
	.pages = 1, .accesses = 1, .after_cached = false,
	.measure = STRIDE_WALKS,
};

/* What one test works on: its filesystem, file and current mapping. */
struct reader {
	struct ra_fs fs;
	int fd;
	int fd_precache;
	char *map;
	size_t size;
	size_t slot;		/* bytes per measured slot */
	size_t runs_off;	/* file offset of the measured slots */
	size_t strides_off;	/* file offset of the stride walks */
};

/*
 * restart_costs and after_cached_runs walk three and four patterns: at
 * least ten times their slowest run
 * in QEMU under TCG, past the harness's default of 30 s, so that a debug
 * kernel (KASAN, lockdep) under emulation has the time.
 */
#define RESTART_COSTS_TIMEOUT_S	50

FIXTURE(random_reader) {
	struct reader r;
};

FIXTURE_VARIANT(random_reader) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(random_reader, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(random_reader, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(random_reader, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(random_reader, xfs_64k) { .fs = &ra_xfs_64k };
FIXTURE_VARIANT_ADD(random_reader, btrfs_4k) { .fs = &ra_btrfs_4k };
FIXTURE_VARIANT_ADD(random_reader, f2fs_4k) { .fs = &ra_f2fs_4k };

FIXTURE_SETUP(random_reader)
{
	int ret;

	self->r.fd = -1;
	self->r.fd_precache = -1;
	ret = ra_fs_setup(&self->r.fs, variant->fs);
	if (!ra_ready(_metadata, ret, &self->r.fs))
		return;
	/* Every slot is dropped after its run: one slot and two windows. */
	ret = ra_need_memory(&self->r.fs,
			     (SLOT_WINDOWS + 2) * BIG_KB * 1024);
	if (!ra_ready(_metadata, ret, &self->r.fs))
		return;
}

static void unmap_and_close(struct reader *r)
{
	if (r->map && r->map != MAP_FAILED)
		munmap(r->map, r->size);
	r->map = NULL;
	if (r->fd >= 0)
		close(r->fd);
	if (r->fd_precache >= 0)
		close(r->fd_precache);
	r->fd = -1;
	r->fd_precache = -1;
}

FIXTURE_TEARDOWN(random_reader)
{
	unmap_and_close(&self->r);
	ra_teardown(&self->r.fs, NULL, 0, -1);
}

struct figure {
	long warm_majflt;	/* major faults of the warm-up */
	long pages;		/* pages brought in by the measured runs */
	long runs;		/* measured runs done */
	bool stopped;		/* stopped early: bound exceeded */
};

/*
 * Open the file at read_ahead_kb 128, drop it from the page cache and
 * fault WARMUP single pages, each in the middle of its own 2 MiB slot of
 * the warm-up region, in shuffled order, dropping each slot after its
 * fault. Then widen the window to @ra_kb: POSIX_FADV_NORMAL copies the
 * disk's ra_pages into this struct file and leaves mmap_miss alone. The
 * warm-up thus costs 110 reads of 32 pages, not of @ra_kb.
 */
static void warm_up(struct __test_metadata *_metadata,
		    struct reader *r, unsigned long ra_kb,
		    struct figure *fig)
{
	unsigned int order[WARMUP], seed = 4242, i;
	size_t folio = ra_folio_size(&r->fs);
	long start;

	ASSERT_EQ(0, ra_set_read_ahead_kb(&r->fs, WARM_KB))
		TH_LOG("%s", r->fs.why);
	r->fd = open(r->fs.file, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, r->fd);
	ASSERT_EQ(0, posix_fadvise(r->fd, 0, 0, POSIX_FADV_DONTNEED));
	/* Another struct file that reads exactly the folio asked for. */
	r->fd_precache = open(r->fs.file, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, r->fd_precache);
	ASSERT_EQ(0, posix_fadvise(r->fd_precache, 0, 0,
				   POSIX_FADV_RANDOM));
	r->map = mmap(NULL, r->size, PROT_READ, MAP_SHARED, r->fd, 0);
	ASSERT_NE(MAP_FAILED, r->map);

	ra_shuffle(order, WARMUP, seed);
	start = ra_majflt();
	for (i = 0; i < WARMUP; i++) {
		size_t base = order[i] * FOLIO_ALIGN;
		size_t off = ra_slot_spot(base, FOLIO_ALIGN, folio, &seed);

		FORCE_READ(r->map[off]);
		ra_drop_range(r->fd, r->map, base, FOLIO_ALIGN);
	}
	fig->warm_majflt = ra_majflt() - start;
	ASSERT_GT(fig->warm_majflt, RA_MMAP_LOTSAMISS)
		TH_LOG("warm-up faults were not page cache misses: the test proves nothing");

	if (ra_kb == WARM_KB)
		return;
	ASSERT_EQ(0, ra_set_read_ahead_kb(&r->fs, ra_kb))
		TH_LOG("%s", r->fs.why);
	ASSERT_EQ(0, posix_fadvise(r->fd, 0, 0, POSIX_FADV_NORMAL));
}

/*
 * One run of @p per measured slot, slots in shuffled order; each slot is
 * counted before and after its run, then dropped. Stops once more than
 * @bound pages per run came in.
 *
 *   slot (4 windows)                  slot
 *   |---------xxxx---------------|----------x x x x---------|
 *             ^ a run of 1, 2 or 4 pages  ^ after_cached: 4 accesses,
 *               at a random folio in        each on the folio after one
 *               the middle half             cached through @fd_precache
 *
 *   slot
 *   |-----ccccccccx--------------|
 *         ^ cached_below: a run cached through @fd_precache, then one
 *           access on the page after it (at least its length from the
 *           slot's start)
 */
static void measure_runs(struct __test_metadata *_metadata,
			 struct reader *r, const struct pattern *p,
			 unsigned long bound, struct figure *fig)
{
	size_t ps = r->fs.page_size, folio = ra_folio_size(&r->fs);
	size_t apart = CACHED_EVERY * folio;
	unsigned int order[RUNS], seed = 777, i, j;
	long limit = ra_limit(bound * RUNS);
	size_t below = (size_t)p->cached_below * ps;
	char c, *buf = NULL;

	if (below) {
		buf = malloc(below);
		ASSERT_NE(NULL, buf);
	}

	ra_shuffle(order, RUNS, seed);
	for (i = 0; i < RUNS && fig->pages <= limit; i++) {
		size_t base = r->runs_off + order[i] * r->slot;
		size_t off = ra_slot_spot(base, r->slot, folio, &seed);
		long before, after;

		if (p->after_cached) {
			for (j = 0; j < p->accesses; j++)
				ASSERT_EQ(1, pread(r->fd_precache, &c, 1,
						   off + j * apart));
			off += folio;
		}
		if (below) {
			if (off < base + below)
				off = base + below;
			ASSERT_EQ((ssize_t)below,
				  pread(r->fd_precache, buf, below, off - below));
		}
		before = ra_cached_pages(r->fd, r->map, base, r->slot);
		ASSERT_LE(0, before);
		for (j = 0; j < p->accesses; j++)
			force_read_pages(r->map + off + j * apart, p->pages, ps);
		fig->runs++;
		after = ra_cached_pages(r->fd, r->map, base, r->slot);
		ASSERT_LE(0, after);
		fig->pages += after - before;
		ra_drop_range(r->fd, r->map, base, r->slot);
	}
	free(buf);
	fig->stopped = i < RUNS;
}

/*
 * Ascending accesses at each stride. Nothing more than a window behind
 * the walk can still change: it is counted and dropped as the walk goes.
 */
static void measure_strides(struct __test_metadata *_metadata,
			    struct reader *r, unsigned long bound,
			    struct figure *fig)
{
	size_t ps = r->fs.page_size, counted, off, end;
	size_t window = ra_pages(&r->fs) * ps;
	long limit = ra_limit(bound * STRIDE_ACCESSES *
			      ARRAY_SIZE(stride_pages));
	unsigned int s, i = 0;
	long n;

	off = r->strides_off;
	for (s = 0; s < ARRAY_SIZE(stride_pages) && fig->pages <= limit; s++) {
		counted = off;
		for (i = 0; i < STRIDE_ACCESSES && fig->pages <= limit; i++) {
			size_t at = off + window + i * stride_pages[s] * ps;
			size_t behind = (at - window) & ~(FOLIO_ALIGN - 1);

			FORCE_READ(r->map[at]);
			fig->runs++;
			if (behind <= counted)
				continue;
			n = ra_cached_pages(r->fd, r->map, counted,
					    behind - counted);
			ASSERT_LE(0, n);
			fig->pages += n;
			ra_drop_range(r->fd, r->map, counted,
				      behind - counted);
			counted = behind;
		}
		end = off + STRIDE_ACCESSES * stride_pages[s] * ps + 2 * window;
		end = (end + FOLIO_ALIGN - 1) & ~(FOLIO_ALIGN - 1);
		n = ra_cached_pages(r->fd, r->map, counted, end - counted);
		ASSERT_LE(0, n);
		fig->pages += n;
		ra_drop_range(r->fd, r->map, counted, end - counted);
		off = end;
	}
	fig->stopped = s < ARRAY_SIZE(stride_pages) || i < STRIDE_ACCESSES;
}

/* Pages a healthy kernel reads for one run of @p: the folios it touches. */
static unsigned long healthy_pages(const struct pattern *p,
				   unsigned long folio_pages)
{
	unsigned long access = p->pages > folio_pages ? p->pages : folio_pages;

	return access * p->accesses;
}

/* Windows of one test: cheap, and wide enough to judge every pattern. */
static const unsigned long windows_kb[] = { WARM_KB, BIG_KB };

/*
 * Measure @p at @ra_kb on a fresh open of the file after a warm-up.
 * Return: false when the window cannot judge @p (nothing measured).
 */
static bool one_window(struct __test_metadata *_metadata, struct reader *r,
		       const struct pattern *p, unsigned long ra_kb)
{
	size_t ps = r->fs.page_size;
	unsigned long folio_pages = ra_folio_size(&r->fs) / ps;
	unsigned long healthy = healthy_pages(p, folio_pages), bound;
	unsigned long window = ra_kb * 1024 / ps;
	struct figure fig = { 0 };
	char what[96];

	if (window < JUDGE_RUNS * healthy) {
		ksft_print_msg(FMT_NOT_JUDGED, p->name, ra_kb, window, JUDGE_RUNS,
			       healthy);
		return false;
	}
	warm_up(_metadata, r, ra_kb, &fig);
	bound = ra_isqrt(healthy * ra_pages(&r->fs));
	/*
	 * A slot of 4 windows: a read-around never reaches the next slot.
	 * It holds a cached run below each access, past the middle half
	 * where a run is longer than a quarter slot.
	 */
	r->slot = SLOT_WINDOWS * ra_kb * 1024;
	if (r->slot < FOLIO_ALIGN)
		r->slot = FOLIO_ALIGN;
	if (p->cached_below * ps > r->slot / 2) {
		ksft_print_msg(FMT_RUN_NOT_JUDGED, p->name, ra_kb,
			       p->cached_below);
		return false;
	}

	if (p->measure == STRIDE_WALKS)
		measure_strides(_metadata, r, bound, &fig);
	else
		measure_runs(_metadata, r, p, bound, &fig);
	unmap_and_close(r);

	/* The bound is per run: all runs done, or those before the stop. */
	snprintf(what, sizeof(what), "%s, read_ahead_kb %lu", p->name, ra_kb);
	RA_EXPECT_FIGURE(&r->fs, what, fig.pages, "pages",
			 (long)(bound * fig.runs),
			 p->cached_below ? SUSPECT_TRACE : SUSPECT,
			 FMT_RUNS, fig.runs, fig.stopped ? " (stopped early)" : "",
			 fig.pages / fig.runs, fig.pages * 100 / fig.runs % 100,
			 bound, healthy, fig.warm_majflt);
	return true;
}

/*
 * Create the file, then measure each of the @n patterns @ps in each
 * window that can judge it.
 */
static void measure_patterns(struct __test_metadata *_metadata,
			     struct reader *r,
			     const struct pattern *const *ps, unsigned int n)
{
	size_t page = r->fs.page_size, strides_len = 0;
	unsigned int s, i, k, judged = 0;
	int fd, ret;

	/*
	 * File layout, cold and sparse:
	 *
	 *   0          runs_off                          strides_off
	 *   | warm-up  | RUNS measured slots             | stride walks  |
	 *   | 2 MiB x  | of 4 windows at 8192 KiB each,  | one per       |
	 *   | WARMUP   | one run in the middle of each   | stride        |
	 */
	for (s = 0; s < ARRAY_SIZE(stride_pages); s++)
		strides_len += STRIDE_ACCESSES * stride_pages[s] * page +
			       2 * BIG_KB * 1024 + FOLIO_ALIGN;
	r->runs_off = WARMUP * FOLIO_ALIGN;
	r->strides_off = r->runs_off + RUNS * SLOT_WINDOWS * BIG_KB * 1024;
	r->size = r->strides_off + strides_len;
	ret = ra_file_prepare(&r->fs, r->size, WARM_KB, &fd);
	if (!ra_ready(_metadata, ret, &r->fs))
		return;
	close(fd);

	for (i = 0; i < n; i++)
		for (k = 0; k < ARRAY_SIZE(windows_kb); k++)
			judged += one_window(_metadata, r, ps[i],
					     windows_kb[k]);
	if (!judged)
		SKIP(return, "not judged by design: no window holds %d runs of %lu pages",
		     JUDGE_RUNS,
		     healthy_pages(ps[0], ra_folio_size(&r->fs) / page));
}

static void measure_pattern(struct __test_metadata *_metadata,
			    struct reader *r, const struct pattern *p)
{
	measure_patterns(_metadata, r, &p, 1);
}

TEST_F(random_reader, single_pages)
{
	measure_pattern(_metadata, &self->r, &single_pages);
}

TEST_F(random_reader, runs_of_2)
{
	measure_pattern(_metadata, &self->r, &runs_of_2);
}

TEST_F(random_reader, runs_of_4)
{
	measure_pattern(_metadata, &self->r, &runs_of_4);
}

/*
 * What a readahead restart past the limit may cost a random reader: runs
 * of 8, 16 and 32 pages. One case, one filesystem for the three patterns.
 */
TEST_F_TIMEOUT(random_reader, restart_costs, RESTART_COSTS_TIMEOUT_S)
{
	static const struct pattern *const patterns[] = {
		&runs_of_8, &runs_of_16, &runs_of_32,
	};

	measure_patterns(_metadata, &self->r, patterns, ARRAY_SIZE(patterns));
}

/*
 * A random reader of a file partly cached by others: runs of 4, 16, 64
 * and 256 pages another opener cached, one access just after each. The
 * runs are not this reader's stream, so each access reads its folio.
 */
TEST_F_TIMEOUT(random_reader, after_cached_runs, RESTART_COSTS_TIMEOUT_S)
{
	static const struct pattern *const patterns[] = {
		&after_4_cached, &after_16_cached, &after_64_cached,
		&after_256_cached,
	};

	measure_patterns(_metadata, &self->r, patterns, ARRAY_SIZE(patterns));
}

TEST_F(random_reader, after_cached)
{
	measure_pattern(_metadata, &self->r, &after_cached);
}

TEST_F(random_reader, strides)
{
	measure_pattern(_metadata, &self->r, &strides);
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
