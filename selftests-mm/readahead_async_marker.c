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
 * Measured: major faults of 100 end-first pieces of one ra window each.
 * Bound: pieces / 10. Broken: one fault per piece, 10x over. Healthy:
 * async readahead stays a piece ahead and the end-first touch of every
 * piece finds it cached: no fault.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_util.h"

/*
 * One window per piece: a healthy async readahead stays a piece ahead.
 * With a window smaller than a piece no readahead can reach the next
 * piece's end before it is touched, and every kernel takes one major
 * fault per piece: such a window tells nothing, it is not tested.
 */
#define RA_KB		8192UL
#define PIECE		(8UL << 20)
#define PIECES		100
#define WARMUP		2
#define SKIPPED		(64UL << 20)
#define SUSPECT \
	"read-around overtook the PG_readahead marker, async readahead found no hole within one window"

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
	 *   | skipped  | warm-up 0 | warm-up 1 | piece 0  | ... | piece 99 |
	 *
	 * The first read-around of a walk that starts at offset 0 is
	 * clamped to the start of the file, which hides the bug when the
	 * first fault is within half a window of it (a memcpy() that loads
	 * the head of its source first): the walk starts SKIPPED in.
	 */
	self->size = SKIPPED + (WARMUP + PIECES) * PIECE;
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
 * Touch a piece's last page, then each page forwards; unmap it after, and
 * drop the piece before it from the page cache: a piece behind, outside
 * every window the kernel looks at for the pieces still to come.
 *
 *   piece   | 2 ------------------------------------------------> 1 |
 *            (1: last page, 2..: every page forwards)
 *
 * The touch of the last page reads around it, past the marker of the
 * window the forward walk is in. From the marker the forward walk meets
 * first, the next hole then lies 10 MiB ahead: out of reach of a
 * one-window look-up, within reach of a two-window one.
 */
static long end_first_piece(const char *p, size_t ps, long limit,
			    long *end_faults)
{
	struct ra_walk walk;
	long start = ra_majflt();

	FORCE_READ(p[PIECE - ps]);
	*end_faults += ra_majflt() - start;
	ra_walk_pages(p, PIECE / ps, false, limit, &walk);
	madvise((void *)p, PIECE, MADV_DONTNEED);
	ra_uncache(p - PIECE, PIECE);
	return ra_majflt() - start;
}

TEST_F_TIMEOUT(async_marker, end_first_pieces, 180)
{
	/*
	 * Broken: one major fault per piece, on its end-first touch: 10x
	 * the bound. Healthy: async readahead is a piece ahead before the
	 * measured pieces start, none.
	 */
	long bound = PIECES / 10, limit = ra_limit(bound), total = 0;
	long end_faults = 0, warmup = 0;
	size_t ps = self->fs.page_size;
	const char *p = self->map + SKIPPED;
	int piece;

	/* Warm-up: the synchronous start of the stream, not measured. */
	for (piece = 0; piece < WARMUP; piece++, p += PIECE)
		warmup += end_first_piece(p, ps, LONG_MAX, &end_faults);
	end_faults = 0;
	/* The measured pieces, stopped once the bound is passed. */
	for (piece = 0; piece < PIECES && total <= limit; piece++, p += PIECE)
		total += end_first_piece(p, ps, limit - total, &end_faults);

	ksft_print_msg("%ld major faults in %d warm-up pieces; %ld on measured end-first touches\n",
		       warmup, WARMUP, end_faults);
	RA_EXPECT_FIGURE(&self->fs, "end-first 8 MiB pieces", total,
			 "major faults", bound, SUSPECT, "after %d of %d pieces",
			 piece, PIECES);
	ASSERT_LE(1, warmup) TH_LOG("no major fault: the file was not cold");
}

TEST_HARNESS_MAIN
