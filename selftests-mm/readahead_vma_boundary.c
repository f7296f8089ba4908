// SPDX-License-Identifier: GPL-2.0
/*
 * VMA boundaries: readahead state lives in the struct file, not in the
 * VMA, so a reader that maps consecutive ranges of a file as separate
 * VMAs keeps one readahead stream across them. Clamping mmap readahead
 * (read-around and async readahead) to the faulting VMA makes every VMA
 * start with a synchronous read: one major fault per VMA.
 * Measured: major faults of an in-order read across 24 mappings of one
 * plane each (per_frame_mmaps) and across the 32 VMAs of one mapping
 * split by mprotect() (mprotect_split), beyond those of a control: the
 * same bytes read in order through one mapping, cold, on a fresh open
 * file. Bound: VMAs / 10 beyond the control. Broken: at least one more
 * per VMA, 10x the margin or more. Healthy: as many as the control, which
 * is 1 where a file fault runs under a per-VMA lock, and one per window
 * where it runs under mmap_lock (no ARCH_SUPPORTS_PER_VMA_LOCK):
 * there a fault that starts async readahead drops the lock, is retried,
 * and the retry is counted as a major fault too.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		512UL
#define FRAMES		8
#define LUMA_SIZE	(1920UL * 1080)
#define CHROMA_SIZE	(960UL * 540)
#define FRAME_SIZE	(LUMA_SIZE + 2 * CHROMA_SIZE)
#define CHUNK_SIZE	(1024UL * 1024)
#define CHUNKS		32
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
 * The control: the first @size bytes of the file read in order through
 * one mapping, after which the file is dropped from the page cache again
 * and opened afresh (a new file->f_ra). @control gets its major faults.
 * Return: 0, or KSFT_SKIP or -1 with @fs->why set.
 */
static int one_vma_walk(struct ra_fs *fs, int *fd, size_t size, long *control)
{
	struct ra_walk walk;
	char *map = mmap(NULL, size, PROT_READ, MAP_SHARED, *fd, 0);
	int ret;

	if (map == MAP_FAILED)
		return ra_fs_fail(fs, "mapping the control");
	ra_walk_pages(*fd, map, 0, size / fs->page_size, false, LONG_MAX, &walk);
	munmap(map, size);
	close(*fd);
	*fd = open(fs->file, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return ra_fs_fail(fs, "opening the test file again");
	ret = ra_drop_cache(fs, *fd, size);
	if (ret)
		return ret;
	ksft_print_msg("control: %ld major faults reading %zu MiB in order in one VMA\n",
		       walk.majflt, size >> 20);
	*control = walk.majflt;
	return 0;
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
	long bound, limit, control, total = 0, n;
	int frame, plane, vmas = 0, ret;

	ret = ra_file_prepare(&self->fs, FRAMES * FRAME_SIZE, RA_KB,
			      &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = one_vma_walk(&self->fs, &self->fd, FRAMES * FRAME_SIZE, &control);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ASSERT_LE(1, control) TH_LOG("control walk: no major fault, the file was not cold");
	/* A tenth of a fault per VMA beyond the control: 2 for 24 planes. */
	bound = control + 3 * FRAMES / 10;
	limit = ra_limit(bound);
	/*
	 * Frames laid out like 1080p YUV420 video, each plane mapped on its
	 * own, read in order and unmapped, as a video encoder does:
	 *
	 *   file |  Y 1920x1080  |  U 960x540  |  V 960x540  |  Y  | U | V | ...
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
			 "major faults", bound, SUSPECT, "in %d VMAs; control %ld",
			 vmas, control);
	ASSERT_LE(1, total) TH_LOG("no major fault: the file was not cold");
}

TEST_F(vma_boundary, mprotect_split)
{
	size_t ps = self->fs.page_size;
	long bound, control;
	struct ra_walk walk;
	int i, ret;

	self->size = CHUNKS * CHUNK_SIZE;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = one_vma_walk(&self->fs, &self->fd, self->size, &control);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ASSERT_LE(1, control) TH_LOG("control walk: no major fault, the file was not cold");
	/* A tenth of a fault per VMA beyond the control: 3 for 32 chunks. */
	bound = control + CHUNKS / 10;
	/*
	 * One mapping of 32 chunks of 1 MiB, every other chunk made
	 * writable (MAP_PRIVATE) so that no two neighbours merge, read in
	 * order in one walk:
	 *
	 *   VMAs  [ r ][ rw ][ r ][ rw ] ... 32 VMAs ... [ rw ]
	 */
	self->map = mmap(NULL, self->size, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	for (i = 1; i < CHUNKS; i += 2)
		ASSERT_EQ(0, mprotect(self->map + i * CHUNK_SIZE, CHUNK_SIZE,
				      PROT_READ | PROT_WRITE));

	ra_walk_pages(self->fd, self->map, 0, self->size / ps, false,
		      ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "mapping split by mprotect", walk.majflt,
			 "major faults", bound, SUSPECT,
			 "in %d VMAs, after %zu of %zu pages; control %ld",
			 CHUNKS, walk.touched, self->size / ps, control);
	ASSERT_LE(1, walk.missed) TH_LOG("no page missed: the file was not cold");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
