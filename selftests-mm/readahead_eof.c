// SPDX-License-Identifier: GPL-2.0
/*
 * The end of a file, as a program mapping it sees it.
 *
 * SIGBUS past EOF: "Use of a mapped region can result in these signals:
 * SIGBUS Attempted access to a page of the buffer that lies beyond the
 * end of the mapped file" (mmap(2), SIGNALS). A page cache folio can
 * reach past the last page of the file (a block larger than the page,
 * or a dirty large folio that a truncate could not split), and then
 * fault-around (filemap_map_pages(), for a PMD too) and the fault path
 * (finish_fault(), which a shared write fault reaches without
 * fault-around) must map only its pages inside the file. Measured: the
 * pages of the mapping wholly past EOF, to its end, that a read (a
 * write, through a shared writable mapping) reaches without SIGBUS,
 * after the last page of the file was touched: cold, cached, written,
 * after a truncate inside a large folio and inside a PMD-sized one.
 * Bound: 0. Healthy: 0. Broken (a folio reaching past EOF mapped
 * whole): its pages past EOF, 2 (16 KiB blocks) to 14 (64 KiB) on 4 KiB
 * pages, 30 for a truncated folio of 32 pages, 510 for a PMD. Where no
 * folio reaches past EOF (4 KiB blocks, or 64 KiB pages, without a
 * truncate) a test is a control that cannot fail.
 *
 * Page cache past EOF: readahead allocates no folio reaching past the
 * last page of the file further than the min folio forces. Measured:
 * pages cached past EOF after an in-order walk to the end of the file at
 * a window of 32 pages (async readahead grows its folios toward it) and
 * after a MADV_HUGEPAGE fault near EOF (forced THP readahead asks for
 * 2 MiB folios). Bound and healthy: the pages past EOF of the min folio
 * holding the last page (0 where it is a page, 14 on 64 KiB blocks).
 * Broken (folios across EOF): the rest of a folio of the window's order,
 * 30 pages for the walk and 254 after the MADV_HUGEPAGE fault on 4 KiB
 * pages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		128UL
/*
 * The in-order walks: their window in pages (read_ahead_kb 128 on 4 KiB
 * pages), so that folios grow alike on every page size; the file of
 * cached_after_walk, and in pages the file sigbus_truncated shrinks.
 */
#define WALK_PAGES	32UL
#define WALK_FILE	(8UL << 20)
#define TRUNC_PAGES	512UL

#define SUSPECT_MAP \
	"a folio reaching past EOF mapped whole (the i_size checks of filemap_map_pages() and filemap_map_folio_range())"
#define SUSPECT_PMD \
	"a PMD-sized folio reaching past EOF mapped by a PMD (the i_size check of filemap_map_pages())"
#define SUSPECT_WRITE \
	"a folio reaching past EOF mapped whole by a write fault (the i_size check of finish_fault())"
#define SUSPECT_CACHE \
	"readahead allocates folios across EOF (the order clamp at the file's last page in page_cache_ra_order())"

FIXTURE(eof) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;	/* length of the mapping, past EOF */
	size_t eof;	/* file size */
	size_t folio;
};

FIXTURE_VARIANT(eof) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(eof, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(eof, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(eof, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(eof, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(eof)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	self->map = MAP_FAILED;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->folio = ra_folio_size(&self->fs);
}

FIXTURE_TEARDOWN(eof)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

/*
 * A file size that ends inside the second page of a min folio, @base
 * bytes (whole folios) into the file:
 *
 *   base                      eof
 *   |-- page --|-- page --|...|....|.... rest of the min folio ....|
 *                          ^ the last page of the file
 */
static size_t eof_at(const struct ra_fs *fs, size_t base)
{
	return base + fs->page_size + fs->page_size / 2;
}

/*
 * Make the cold test file, @eof bytes long, at read_ahead_kb @ra_kb, and
 * map it from offset 0 for @len bytes, past EOF.
 */
static int eof_file(struct ra_fs *fs, size_t eof, unsigned long ra_kb,
		    size_t len, int *fd, char **map)
{
	int ret = ra_file_prepare(fs, eof, ra_kb, fd);

	if (ret)
		return ret;
	*map = mmap(NULL, len, PROT_READ, MAP_SHARED, *fd, 0);
	if (*map == MAP_FAILED)
		return ra_fs_fail(fs, "mapping the test file past EOF");
	return 0;
}

/* First page-aligned offset wholly past EOF. */
static size_t past_eof(const struct ra_fs *fs, size_t eof)
{
	return (eof + fs->page_size - 1) & ~(fs->page_size - 1);
}

/* Pages past EOF the min folio holding the last page forces. */
static long forced_past_eof(const struct ra_fs *fs, size_t eof,
			    size_t folio)
{
	size_t end = (eof + folio - 1) & ~(folio - 1);

	return (end - past_eof(fs, eof)) / fs->page_size;
}

static sigjmp_buf sigbus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(sigbus_jmp, sig);
}

/*
 * Read one byte at @p, or write one if @write: false if that raised
 * SIGBUS. A function of its own (GCC and clang never inline one that
 * calls sigsetjmp()), so that the caller's counters are not live across
 * the jump.
 */
static bool touch(char *p, bool write)
{
	if (sigsetjmp(sigbus_jmp, 1))
		return false;
	if (write) {
		*p = 1;
		/* The store, before the function returns true. */
		asm volatile("" : : : "memory");
	} else {
		FORCE_READ(*p);
	}
	return true;
}

/*
 * Touch the last page of the file, which must work, then every page of
 * [@map, @map + @len) from the first one wholly past EOF, which must
 * raise SIGBUS; figure: those that did not. Reads go through
 * fault-around; writes (@write, a shared writable @map) do not.
 */
static void expect_sigbus(struct __test_metadata *_metadata,
			  struct ra_fs *fs, char *map, size_t len, size_t eof,
			  size_t folio, bool write, const char *what,
			  const char *suspect)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	size_t ps = fs->page_size, from = past_eof(fs, eof), off;
	bool last;
	long nr = 0;

	ASSERT_EQ(0, sigaction(SIGBUS, &sa, &old));
	last = touch(map + from - ps, write);
	for (off = from; off < len; off += ps)
		nr += touch(map + off, write);
	sigaction(SIGBUS, &old, NULL);
	RA_EXPECT_FIGURE(fs, what, nr, write ? "pages past EOF written" :
			 "pages past EOF read", 0, suspect,
			 "of %zu touched, %ld in the min folio at EOF",
			 (len - from) / ps, forced_past_eof(fs, eof, folio));
	ASSERT_TRUE(last)
		TH_LOG("SIGBUS on the file's last page; suspected: an i_size check a page short");
}

/*
 * A cold file that ends a page and a half into its fifth min folio,
 * mapped for eight min folios: the pages past EOF that a min folio
 * holds, and three folios more.
 */
static int small_file(struct ra_fs *fs, size_t folio, int *fd, char **map,
		      size_t *eof, size_t *size)
{
	*eof = eof_at(fs, 4 * folio);
	*size = 8 * folio;
	return eof_file(fs, *eof, RA_KB, *size, fd, map);
}

/* Cold: the fault on the last page reads the EOF folio and maps it. */
TEST_F(eof, sigbus_cold)
{
	int ret;

	ret = small_file(&self->fs, self->folio, &self->fd, &self->map,
			 &self->eof, &self->size);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	expect_sigbus(_metadata, &self->fs, self->map, self->size, self->eof,
		      self->folio, false, "cold file, touched past EOF", SUSPECT_MAP);
}

/* Read whole by read(): a cached file whose pages nothing maps yet. */
static void read_whole(struct __test_metadata *_metadata, int fd, size_t len)
{
	char *buf = malloc(len);

	ASSERT_NE(NULL, buf);
	ASSERT_EQ((ssize_t)len, pread(fd, buf, len, 0));
	free(buf);
}

/* Cached: fault-around maps the EOF folio. */
TEST_F(eof, sigbus_cached)
{
	int ret;

	ret = small_file(&self->fs, self->folio, &self->fd, &self->map,
			 &self->eof, &self->size);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	read_whole(_metadata, self->fd, self->eof);
	expect_sigbus(_metadata, &self->fs, self->map, self->size, self->eof,
		      self->folio, false, "cached file, touched past EOF", SUSPECT_MAP);
}

/*
 * Writes through a shared writable mapping: a shared write fault has no
 * fault-around, finish_fault() maps what filemap_fault() returns.
 */
TEST_F(eof, sigbus_write)
{
	int ret, fd;

	ret = small_file(&self->fs, self->folio, &self->fd, &self->map,
			 &self->eof, &self->size);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	fd = open(self->fs.file, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, munmap(self->map, self->size));
	self->map = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
	close(fd);
	ASSERT_NE(MAP_FAILED, self->map);
	expect_sigbus(_metadata, &self->fs, self->map, self->size, self->eof,
		      self->folio, true, "cold file, written past EOF",
		      SUSPECT_WRITE);
}

/*
 * Hold the page at @p in a pipe: vmsplice() takes a reference on it, so
 * that a truncate cannot split its folio. Returns the pipe's read end,
 * to be closed after the test, or -1.
 */
static int hold_page(const char *p, size_t ps)
{
	struct iovec iov = { .iov_base = (void *)p, .iov_len = ps };
	int fds[2];

	if (pipe(fds))
		return -1;
	if (vmsplice(fds[1], &iov, 1, 0) != (ssize_t)ps) {
		close(fds[0]);
		fds[0] = -1;
	}
	close(fds[1]);
	return fds[0];
}

/*
 * Truncate the file of @fs (@fd, mapped at @map, @old bytes long) to end
 * a page and a half into the folio at @off, after dirtying that folio and
 * holding one of its pages, so that it stays whole across the new EOF
 * (*@eof): truncation splits a folio it cuts, and where the split fails
 * unmaps it, then drops it whole if it is clean, keeps it whole if dirty.
 *
 * Return: the read end of the pipe holding the page, to close once the
 * test is done with the folio; -1 after a SKIP, when nothing is cached
 * past the new EOF (the folio there was split or dropped all the same).
 */
static int truncate_held(struct __test_metadata *_metadata,
			 struct ra_fs *fs, int fd, const char *map,
			 size_t off, size_t old, size_t *eof)
{
	size_t from;
	long kept;
	int rw, held;

	rw = open(fs->file, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rw);
	ASSERT_EQ(1, pwrite(rw, "x", 1, off));
	close(rw);
	held = hold_page(map + off, fs->page_size);
	ASSERT_LE(0, held);
	*eof = eof_at(fs, off);
	ASSERT_EQ(0, truncate(fs->file, *eof));
	from = past_eof(fs, *eof);
	kept = ra_cached_pages(fd, map, from, old - from);
	ASSERT_LE(0, kept);
	if (!kept) {
		close(held);
		SKIP(return -1, "truncation split or dropped the folio at EOF");
	}
	ksft_print_msg("%ld pages past the new EOF still cached\n", kept);
	return held;
}

/*
 * A file of TRUNC_PAGES read in order through its mapping at a window of
 * WALK_PAGES (async readahead builds folios up to the window), then
 * truncated a page and a half into the folio half way:
 *
 *   0              half   new eof                             end
 *   |==============|==|==|.....................................|
 *    cached, mapped       every page from here must SIGBUS
 */
TEST_F(eof, sigbus_truncated)
{
	size_t ps = self->fs.page_size, len = TRUNC_PAGES * ps;
	int ret, held;

	self->size = len;
	ret = eof_file(&self->fs, len, WALK_PAGES * ps / 1024, self->size,
		       &self->fd, &self->map);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	force_read_pages(self->map, len / ps, ps);
	held = truncate_held(_metadata, &self->fs, self->fd, self->map,
			     len / 2, len, &self->eof);
	if (held < 0)
		return;
	expect_sigbus(_metadata, &self->fs, self->map, self->size, self->eof,
		      self->folio, false, "truncated inside a cached folio, touched past EOF",
		      SUSPECT_MAP);
	close(held);
}

/*
 * MADV_HUGEPAGE on a PMD-aligned mapping of a file of two PMDs: a fault
 * at the second reads it as one PMD-sized folio, mapped by a PMD; then
 * the file is truncated inside that folio:
 *
 *   0               pmd  new eof                         2 pmd
 *   |---------------|==|==|...............................|
 *                    PMD folio: every page from here must SIGBUS
 */
TEST_F(eof, sigbus_pmd)
{
	unsigned long pmd = read_pmd_pagesize();
	int ret, held;

	if (!pmd || pmd > RA_THP_FOLIO_MAX)
		SKIP(return, "PMD of %lu bytes: forced THP readahead reads folios of %lu at most",
		     pmd, RA_THP_FOLIO_MAX);
	self->size = 2 * pmd;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = ra_map_pmd_aligned(self->fd, 0, self->size, pmd);
	ASSERT_NE(MAP_FAILED, self->map);
	if (madvise(self->map, self->size, MADV_HUGEPAGE))
		SKIP(return, "MADV_HUGEPAGE: %s", strerror(errno));
	FORCE_READ(self->map[pmd]);
	if (ra_cached_pages(self->fd, self->map, pmd, pmd) !=
	    (long)(pmd / self->fs.page_size))
		SKIP(return, "%s: no PMD-sized folio for a MADV_HUGEPAGE fault",
		     self->fs.type);
	held = truncate_held(_metadata, &self->fs, self->fd, self->map, pmd,
			     2 * pmd, &self->eof);
	if (held < 0)
		return;
	expect_sigbus(_metadata, &self->fs, self->map, self->size, self->eof,
		      self->folio, false, "truncated inside a PMD-sized folio, touched past EOF",
		      SUSPECT_PMD);
	close(held);
}

/* Pages cached in the 2 MiB past EOF, checked against the min folio's. */
static void expect_cached_past_eof(struct __test_metadata *_metadata,
				   struct ra_fs *fs, int fd, const char *map,
				   size_t eof, size_t folio, const char *what)
{
	size_t from = past_eof(fs, eof);
	long cached = ra_cached_pages(fd, map, from, RA_THP_FOLIO_MAX);
	long bound = forced_past_eof(fs, eof, folio);

	ASSERT_LE(0, cached);
	RA_EXPECT_FIGURE(fs, what, cached, "pages cached past EOF", bound,
			 SUSPECT_CACHE, "the min folio forces %ld", bound);
}

/*
 * An in-order walk of a file of 8 MiB and a page and a half, at a window
 * of WALK_PAGES: async readahead, its folios grown to the window,
 * reaches the end of the file.
 */
TEST_F(eof, cached_after_walk)
{
	size_t ps = self->fs.page_size;
	struct ra_walk walk;
	int ret;

	self->eof = eof_at(&self->fs, WALK_FILE);
	self->size = past_eof(&self->fs, self->eof) + RA_THP_FOLIO_MAX;
	ret = eof_file(&self->fs, self->eof, WALK_PAGES * ps / 1024,
		       self->size, &self->fd, &self->map);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ra_walk_pages(self->fd, self->map, 0, past_eof(&self->fs, self->eof) / ps,
		      false, LONG_MAX, &walk);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
	expect_cached_past_eof(_metadata, &self->fs, self->fd, self->map,
			       self->eof, self->folio,
			       "in-order walk to the end of the file");
}

/*
 * One MADV_HUGEPAGE fault on the last page of a cold file that ends a
 * page and a half past 3 MiB, inside the second 2 MiB of the file:
 *
 *   0          2 MiB          3 MiB  eof                   4 MiB
 *   |----------|--------------|==|==|......................|
 *                ^ forced THP readahead from here: folios up to
 *                  2 MiB, cut at EOF
 */
TEST_F(eof, cached_after_hugepage_fault)
{
	size_t thp = RA_THP_FOLIO_MAX;
	int ret;

	self->eof = eof_at(&self->fs, thp + thp / 2);
	/* Room for 2 MiB past EOF, where the cached pages are counted. */
	self->size = 3 * thp;
	ret = eof_file(&self->fs, self->eof, RA_KB, self->size, &self->fd,
		       &self->map);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	if (madvise(self->map, self->size, MADV_HUGEPAGE))
		SKIP(return, "MADV_HUGEPAGE: %s", strerror(errno));
	FORCE_READ(self->map[past_eof(&self->fs, self->eof) - self->fs.page_size]);
	expect_cached_past_eof(_metadata, &self->fs, self->fd, self->map,
			       self->eof, self->folio,
			       "MADV_HUGEPAGE fault on the last page");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
