// SPDX-License-Identifier: GPL-2.0
/*
 * Exec mappings, by the rules of do_sync_mmap_readahead()'s VM_EXEC
 * branch (its comments): read-around keeps running after random faults,
 * whatever mmap_miss says, and never reads past the VMA (stays_in_vma).
 * Program text is read at random, so a VM_EXEC fault neither adds to nor
 * takes from file->f_ra.mmap_miss and reads from the faulting folio up to
 * ra_pages forwards. A kernel that gates VM_EXEC faults by mmap_miss
 * again, and counts only the faulting address as a hit, reads one folio
 * per fault once the counter is past MMAP_LOTSAMISS, for good.
 * Measured: major faults of an in-order read through the exec mapping
 * after a random phase. Bound: sqrt(ra windows * folios) of the read, the
 * geometric mean of healthy (one fault per window, or 1 where read-around
 * sets a marker) and broken (one per folio): 11x (64 KiB folios) to 45x
 * (4 KiB) from either.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RANDOM_FAULTS	(3 * RA_MMAP_LOTSAMISS)
#define SEQ_SIZE	(32UL << 20)
#define RANDOM_KB	512UL
#define SEQ_KB		8192UL
#define VMA_KB		16384UL
#define SUSPECT \
	"VM_EXEC faults gated by mmap_miss, which random faults left above MMAP_LOTSAMISS (no exec bypass)"

/*
 * At least ten times the case's slowest run in QEMU under TCG, past the
 * harness's default of 30 s: time for a debug kernel (KASAN, lockdep)
 * under emulation.
 */
#define TIMEOUT_S	40

FIXTURE(exec_mapping) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
};

FIXTURE_VARIANT(exec_mapping) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(exec_mapping, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(exec_mapping, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(exec_mapping, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(exec_mapping, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(exec_mapping)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
}

FIXTURE_TEARDOWN(exec_mapping)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

TEST_F_TIMEOUT(exec_mapping, in_order_after_random, TIMEOUT_S)
{
	size_t ps = self->fs.page_size, folio = ra_folio_size(&self->fs);
	size_t spacing = 8 * RANDOM_KB * 1024, seq_off;
	struct ra_walk walk;
	long bound;
	int ret;

	/*
	 * One struct file, one MAP_PRIVATE PROT_READ|PROT_EXEC mapping:
	 *
	 *   0                 random region              seq_off
	 *   |-x------x------x--- ... ---x------|=============================|
	 *     ^ RANDOM_FAULTS single pages,      ^ SEQ_SIZE read in order,
	 *       8 windows apart at RANDOM_KB       one touch per page, at SEQ_KB
	 *
	 * Eight windows apart, each random fault is a real miss.
	 */
	if (spacing < 2 * folio)
		spacing = 2 * folio;
	seq_off = RANDOM_FAULTS * spacing;
	self->size = seq_off + SEQ_SIZE;
	/*
	 * 4 windows of SEQ_KB: bounds of 181, 90 and 45 for 8192, 2048
	 * and 512 folios of 4, 16 and 64 KiB.
	 */
	bound = ra_isqrt(SEQ_SIZE / (SEQ_KB * 1024) * (SEQ_SIZE / folio));

	/* Each random fault reads around RANDOM_KB; then one walk. */
	ret = ra_need_memory(&self->fs, RANDOM_FAULTS * RANDOM_KB * 1024 +
			     ra_walk_bytes(SEQ_KB));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, self->size, RANDOM_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->map = mmap(NULL, self->size, PROT_READ | PROT_EXEC, MAP_PRIVATE,
			 self->fd, 0);
	if (self->map == MAP_FAILED && (errno == EPERM || errno == EACCES))
		SKIP(return, "%s is mounted noexec", self->fs.dir);
	ASSERT_NE(MAP_FAILED, self->map);

	/* The random phase, through the exec mapping. */
	ra_assert_random_phase(_metadata, self->map, RANDOM_FAULTS, spacing);

	/*
	 * Widen the window for the in-order part. POSIX_FADV_NORMAL copies
	 * the disk's new ra_pages into the struct file; mmap_miss stays.
	 */
	ASSERT_EQ(0, ra_set_read_ahead_kb(&self->fs, SEQ_KB))
		TH_LOG("%s", self->fs.why);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_NORMAL));

	ra_walk_pages(self->fd, self->map + seq_off, seq_off, SEQ_SIZE / ps,
		      false, ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "in-order read through the exec mapping",
			 walk.majflt, "major faults", bound, SUSPECT,
			 "after %zu of %zu pages", walk.touched, SEQ_SIZE / ps);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

/*
 * The VM_EXEC read-around reads ra_pages from the faulting folio forwards
 * and stops at the end of the VMA ("Limit to the boundaries of the VMA to
 * avoid reading in any pad that might exist between sections"). Measured:
 * pages cached past the end of an exec mapping of one ra window of the
 * file after a fault three quarters into it. Bound: ra_pages / 20.
 * Healthy: none. Broken (no clamp, or a read-around centred on the
 * fault): three quarters or a quarter of a window, 5x to 15x
 * over; no bound can be 10x from both kinds. A fault that read nothing
 * past its own folio proves nothing, and fails.
 */
static void stays_in_vma(struct __test_metadata *_metadata, struct ra_fs *fs,
			 int *fd, char **map, size_t *size)
{
	size_t ra = VMA_KB * 1024, fault = 3 * ra / 4;
	unsigned long ra_pages = ra / fs->page_size;
	long ahead, past;
	char *vma;
	int ret;

	*size = 4 * ra;
	/* At most the window and what a broken kernel reads past the VMA. */
	ret = ra_need_memory(fs, 2 * ra);
	if (!ra_ready(_metadata, ret, fs))
		return;
	ret = ra_file_map(fs, *size, VMA_KB, fd, map);
	if (!ra_ready(_metadata, ret, fs))
		return;
	/*
	 * A MAP_PRIVATE PROT_READ|PROT_EXEC mapping of the file's second
	 * window, as a loader maps a text segment; the rest of the file
	 * stands for what lies between segments:
	 *
	 *   file  0        1 ra                  2 ra              4 ra
	 *         |--------|==============x=====|-----------------|
	 *   VMA            [ exec mapping  ^     ]  past the VMA: cold
	 *                                  fault, 0.75 ra into it
	 */
	vma = mmap(NULL, ra, PROT_READ | PROT_EXEC, MAP_PRIVATE, *fd, ra);
	if (vma == MAP_FAILED && (errno == EPERM || errno == EACCES))
		SKIP(return, "%s is mounted noexec", fs->dir);
	ASSERT_NE(MAP_FAILED, vma);
	FORCE_READ(vma[fault]);
	past = ra_cached_pages(*fd, *map, 2 * ra, 2 * ra);
	ahead = ra_cached_pages(*fd, *map, ra + fault + ra_folio_size(fs),
				ra - fault - ra_folio_size(fs));
	munmap(vma, ra);
	RA_EXPECT_FIGURE(fs, "exec read-around past its VMA", past,
			 "pages cached", ra_pages / 20,
			 "VM_EXEC read-around not limited to the faulting VMA (limited since \"mm/filemap: allow arch to request folio size for exec memory\", 6.17)",
			 "fault %zu pages before the VMA end",
			 (ra - fault) / fs->page_size);
	ASSERT_LE(1, ahead)
		TH_LOG("nothing read past the faulting folio: no exec read-around");
}

TEST_F_TIMEOUT(exec_mapping, stays_in_vma, TIMEOUT_S)
{
	stays_in_vma(_metadata, &self->fs, &self->fd, &self->map, &self->size);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
