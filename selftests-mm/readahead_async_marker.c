// SPDX-License-Identifier: GPL-2.0
/*
 * Async readahead marker overtaken by read-around.
 *
 * A copy that loads the end of each piece before copying it forwards
 * faults on the piece's last page first; read-around centred there fills
 * more than a window past the PG_readahead marker the forward copy has
 * yet to reach. At the marker, page_cache_async_ra() looks for a hole
 * within one window only, finds none, reads nothing, and the next piece
 * starts with a synchronous fault again.
 * Measured: of 20 end-first pieces of one ra window each, those whose
 * next piece's end was not read ahead by the time the forward walk is
 * done (mincore()). Each piece starts from the same page cache state,
 * so that one piece read ahead by chance does not carry the rest.
 * Bound: pieces / 10. Broken: every piece, 10x over. Healthy: none.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

/*
 * One window per piece: a healthy async readahead stays a piece ahead.
 * With a window smaller than a piece no readahead can reach the next
 * piece's end before it is touched, and every kernel takes one major
 * fault per piece: such a window tells nothing, it is not tested.
 */
#define RA_KB		8192UL
#define PIECE		(8UL << 20)
#define PIECES		20
#define WARMUP		2
#define SKIPPED		(64UL << 20)
#define TAIL		4	/* pieces: read-around and two windows ahead */
#define SUSPECT \
	"read-around overtook the PG_readahead marker, async readahead found no hole within one window (since 901a269ff3d5 \"filemap: fix page_cache_next_miss() when no hole found\", 6.11)"

/*
 * At least ten times the case's slowest run in QEMU under TCG, past the
 * harness's default of 30 s: time for a debug kernel (KASAN, lockdep)
 * under emulation.
 */
#define TIMEOUT_S	80

FIXTURE(async_marker) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
};

FIXTURE_VARIANT(async_marker) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(async_marker, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(async_marker, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(async_marker, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(async_marker, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(async_marker)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * One struct file, one mapping, walked piece after piece:
	 *
	 *   0          SKIPPED
	 *   | skipped  | warm-up 0 | warm-up 1 | piece 0  | ... | piece 19 | tail |
	 *
	 * The first read-around of a walk that starts at offset 0 is
	 * clamped to the start of the file, which hides the bug when the
	 * first fault is within half a window of it (a memcpy() that loads
	 * the head of its source first): the walk starts SKIPPED in. The
	 * tail holds what the last piece reads and drops ahead of it.
	 */
	self->size = SKIPPED + (WARMUP + PIECES + TAIL) * PIECE;
	/* The walk drops each piece once the next one is walked. */
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_map(&self->fs, self->size, RA_KB, &self->fd, &self->map);
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(async_marker)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

/*
 * Touch a piece's last page, then each page forwards, and tell whether
 * the next piece's last page was read ahead meanwhile.
 *
 *   piece   | 2 ------------------------------------------------> 1 |
 *            (1: last page, 2..: every page forwards)
 *
 * The touch of the last page misses and reads around it, half a window
 * into the next piece, past the marker of the window the forward walk is
 * in. From the marker the forward walk meets, set by the previous
 * piece's read-around, the next hole lies 10 MiB ahead: out of reach of
 * a one-window look-up, within reach of a two-window one, which reads
 * the window holding the next piece's last page.
 *
 *   | piece i-1   | piece i           | piece i+1          |
 *            [---- read-around i-1 ----]
 *                       [------ read-around i -------]
 *                  ^ marker i-1                ^ hole: async readahead
 *                    (met by walk i)             from here holds the
 *                                                end of piece i+1
 *
 * Then every piece starts alike: unmap the piece, drop the one before it
 * and what async readahead read past read-around i, so that the next
 * last-page touch misses on every kernel and the next piece is judged on
 * its own. What is dropped lies behind the walk or past every window the
 * kernel looks at for the next piece.
 *
 * Return: true when the next piece's last page was read ahead.
 */
static bool end_first_piece(int fd, const char *map, size_t off, size_t ps,
			    long *end_faults)
{
	const char *p = map + off;
	const char *next_end = p + 2 * PIECE - ps;
	size_t past_ra = off + PIECE + RA_KB * 1024 / 2;
	struct ra_walk walk;
	long start = ra_majflt();
	bool ahead;

	FORCE_READ(p[PIECE - ps]);
	*end_faults += ra_majflt() - start;
	ra_walk_pages(fd, p, off, PIECE / ps, false, LONG_MAX, &walk);
	ahead = ra_resident_pages(next_end, ps) == 1;
	madvise((void *)p, PIECE, MADV_DONTNEED);
	ra_drop_range(fd, map, off - PIECE, PIECE);
	ra_drop_range(fd, map, past_ra, 2 * RA_KB * 1024);
	return ahead;
}

TEST_F_TIMEOUT(async_marker, end_first_pieces, TIMEOUT_S)
{
	long bound = PIECES / 10, limit = ra_limit(bound), missed = 0;
	long end_faults = 0;
	size_t ps = self->fs.page_size;
	size_t off = SKIPPED;
	int piece;

	/* Warm-up: the first piece has no marker of a piece before it. */
	for (piece = 0; piece < WARMUP; piece++, off += PIECE)
		end_first_piece(self->fd, self->map, off, ps, &end_faults);
	ASSERT_LE(1, end_faults) TH_LOG("no major fault: the file was not cold");
	/* The measured pieces, stopped once the bound is passed. */
	end_faults = 0;
	for (piece = 0; piece < PIECES && missed <= limit; piece++, off += PIECE)
		missed += !end_first_piece(self->fd, self->map, off, ps,
					   &end_faults);

	/* Every last-page touch was dropped before: one miss per piece. */
	ksft_print_msg("%ld major faults on %d end-first touches\n",
		       end_faults, piece);
	RA_EXPECT_FIGURE(&self->fs, "end-first 8 MiB pieces", missed,
			 "pieces with the next end not read ahead", bound,
			 SUSPECT, "after %d of %d pieces", piece, PIECES);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
