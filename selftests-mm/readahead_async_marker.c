// SPDX-License-Identifier: GPL-2.0
/*
 * Async readahead marker overtaken by read-around.
 *
 * A copy that loads the end of each piece before copying it forwards
 * faults on the piece's last page first. Read-around centred there fills
 * more than one window past the PG_readahead marker the forward copy has
 * yet to reach. When the copy reaches the marker, page_cache_async_ra()
 * finds the readahead state unexpected and looks for the first hole within
 * one window: everything there is cached, nothing is read, and the next
 * piece starts with a synchronous fault again.
 *
 *   file  | skipped | piece 0          | piece 1          | ...
 *   order             2 ---------->  1   4 ---------->  3
 *                     (1: last page, 2..: every page forwards)
 *
 * Pieces are 8 MiB, read_ahead_kb 8192: one window per piece, so a
 * healthy async readahead stays a piece ahead and the end-first touch of
 * the next piece finds it cached. From the marker the forward walk meets
 * first, the next hole lies 10 MiB ahead: out of reach of a one-window
 * look-up, within reach of a two-window one.
 *
 * end_first_pieces: 2 warm-up pieces from 64 MiB, then 100 measured.
 *   Bound: major faults <= measured pieces / 10 = 10.
 *   healthy: 0 (async readahead is already ahead when they start).
 *   broken: 1 per piece, on the end-first touch: 100.
 *
 * With a window smaller than a piece no readahead can reach the next
 * piece's end before it is touched, and every kernel takes one major
 * fault per piece there: such a window tells nothing, it is not tested.
 * The first read-around of a walk that starts at offset 0 is clamped to
 * the start of the file: that only hides the bug when the first fault is
 * within half a window of the start, as with a memcpy() that loads the
 * head of its source first.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_util.h"

#define RA_KB		8192UL
#define PIECE		(8UL << 20)
#define PIECES		100
#define WARMUP		2
#define SKIPPED		(64UL << 20)
#define FMT_SPLIT \
	"%ld major faults in %d warm-up pieces; %ld of the measured ones on end-first touches\n"
#define FMT_PIECES \
	"%ld major faults in %d pieces, bound %ld, ra_pages %lu, folio %lu bytes; "
#define SUSPECT \
	"suspected: read-around overtook the PG_readahead marker, async readahead found no hole within one window"

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

	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->size = SKIPPED + (WARMUP + PIECES) * PIECE;
	/* The walk drops each piece once the next one is walked. */
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
}

FIXTURE_TEARDOWN(async_marker)
{
	if (self->map && self->map != MAP_FAILED)
		munmap(self->map, self->size);
	if (self->fd > 0)
		close(self->fd);
	ra_fs_teardown(&self->fs);
}

/*
 * Touch a piece's last page, then each page forwards; unmap it after, and
 * drop the piece before it from the page cache: a piece behind, outside
 * every window the kernel looks at for the pieces still to come.
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
	long bound = PIECES / 10, limit = ra_limit(bound), total = 0;
	long end_faults = 0, warmup = 0;
	size_t ps = self->fs.page_size;
	const char *p = self->map + SKIPPED;
	int piece;

	for (piece = 0; piece < WARMUP; piece++, p += PIECE)
		warmup += end_first_piece(p, ps, LONG_MAX, &end_faults);
	end_faults = 0;
	for (piece = 0; piece < PIECES && total <= limit; piece++, p += PIECE)
		total += end_first_piece(p, ps, limit - total, &end_faults);

	ksft_print_msg(FMT_SPLIT, warmup, WARMUP, end_faults);
	ra_report(&self->fs, "end-first 8 MiB pieces", total, bound);
	ASSERT_LE(1, warmup) TH_LOG("no major fault: the file was not cold");
	EXPECT_LE(total, bound)
		TH_LOG(FMT_PIECES SUSPECT, total, piece, bound, ra_pages(&self->fs),
		       ra_folio_size(&self->fs));
}

TEST_HARNESS_MAIN
