// SPDX-License-Identifier: GPL-2.0
/*
 * VMA boundaries: readahead state lives in the struct file, not in the
 * VMA, so a reader that maps consecutive ranges of a file as separate
 * VMAs keeps one readahead stream across them. Clamping mmap readahead
 * (read-around and async readahead) to the faulting VMA makes every VMA
 * start with a synchronous read: one major fault per VMA.
 * Measured: major faults of an in-order read across 72 mappings of one
 * plane each (per_frame_mmaps) and across the 128 VMAs of one mapping
 * split by mprotect() (mprotect_split). Bound: VMAs / 10. Broken: at
 * least one per VMA, 10x the bound or more. Healthy: 1, the first fault
 * of the stream.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		512UL
#define FRAMES		24
#define LUMA_SIZE	(3840UL * 2160)
#define CHROMA_SIZE	(1920UL * 1080)
#define FRAME_SIZE	(LUMA_SIZE + 2 * CHROMA_SIZE)
#define CHUNK_SIZE	(2UL << 20)
#define CHUNKS		128
#define SUSPECT \
	"mmap readahead clamped to the faulting VMA, each VMA starts with a synchronous read"

FIXTURE(vma_boundary) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
};

FIXTURE_VARIANT(vma_boundary) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(vma_boundary, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(vma_boundary, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(vma_boundary, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(vma_boundary, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(vma_boundary)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* per_frame_mmaps keeps two frames cached, less than a walk. */
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
}

FIXTURE_TEARDOWN(vma_boundary)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

/*
 * Map the pages covering file bytes [off, off + len), read them in order,
 * unmap. Returns the major faults taken, or -1 if mmap() failed.
 */
static long read_plane(int fd, size_t off, size_t len, size_t ps, long limit)
{
	size_t start = off & ~(ps - 1);
	size_t maplen = ((off + len + ps - 1) & ~(ps - 1)) - start;
	struct ra_walk walk;
	char *p;

	p = mmap(NULL, maplen, PROT_READ, MAP_SHARED, fd, start);
	if (p == MAP_FAILED)
		return -1;
	ra_walk_pages(fd, p, start, maplen / ps, false, limit, &walk);
	munmap(p, maplen);
	return walk.majflt;
}

TEST_F(vma_boundary, per_frame_mmaps)
{
	const size_t planes[] = { LUMA_SIZE, CHROMA_SIZE, CHROMA_SIZE };
	size_t ps = self->fs.page_size, off = 0;
	/* A tenth of a fault per VMA: 7 for 72 planes. */
	long bound = 3 * FRAMES / 10, limit = ra_limit(bound);
	long total = 0, n;
	int frame, plane, vmas = 0, ret;

	ret = ra_file_prepare(&self->fs, FRAMES * FRAME_SIZE, RA_KB,
			      &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * Frames laid out like 4K YUV420 video, each plane mapped on its
	 * own, read in order and unmapped, as a video encoder does:
	 *
	 *   file |  Y 3840x2160  | U 1920x1080 | V 1920x1080 |  Y  | U | V | ...
	 *   VMAs  [-- mmap 1 ---][-- mmap 2 --][-- mmap 3 --][ 4 ][ 5 ][ 6 ]...
	 *
	 * Planes are not page aligned: each mapping covers the pages its
	 * plane touches, so neighbours share a page at the seam.
	 */
	for (frame = 0; frame < FRAMES && total <= limit; frame++) {
		for (plane = 0; plane < 3; plane++) {
			n = read_plane(self->fd, off, planes[plane], ps,
				       limit - total);
			ASSERT_LE(0, n) TH_LOG("mmap of plane at %zu failed", off);
			total += n;
			off += planes[plane];
			vmas++;
		}
		/* Drop the frame before this one, a frame behind the reader. */
		if (frame)
			posix_fadvise(self->fd, off - 2 * FRAME_SIZE, FRAME_SIZE,
				      POSIX_FADV_DONTNEED);
	}
	RA_EXPECT_FIGURE(&self->fs, "per-frame plane mmaps", total,
			 "major faults", bound, SUSPECT, "in %d VMAs", vmas);
	ASSERT_LE(1, total) TH_LOG("no major fault: the file was not cold");
}

TEST_F(vma_boundary, mprotect_split)
{
	size_t ps = self->fs.page_size;
	/* A tenth of a fault per VMA: 12 for 128 chunks. */
	long bound = CHUNKS / 10;
	struct ra_walk walk;
	int i, ret;

	self->size = CHUNKS * CHUNK_SIZE;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/*
	 * One mapping of 128 chunks of 2 MiB, every other chunk made
	 * writable (MAP_PRIVATE) so that no two neighbours merge, read in
	 * order in one walk:
	 *
	 *   VMAs  [ r ][ rw ][ r ][ rw ] ... 128 VMAs ... [ rw ]
	 */
	self->map = mmap(NULL, self->size, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	for (i = 1; i < CHUNKS; i += 2)
		ASSERT_EQ(0, mprotect(self->map + i * CHUNK_SIZE, CHUNK_SIZE,
				      PROT_READ | PROT_WRITE));

	ra_walk_pages(self->fd, self->map, 0, self->size / ps, false,
		      ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "mapping split by mprotect", walk.majflt,
			 "major faults", bound, SUSPECT, "in %d VMAs, after %zu of %zu pages",
			 CHUNKS, walk.touched, self->size / ps);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init((const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
