// SPDX-License-Identifier: GPL-2.0
/*
 * Exec mappings: read-around must keep running for a PROT_EXEC mapping
 * after random faults, whatever mmap_miss says.
 *
 * Program text is read at random, so since the exec readahead change
 * (7.3) a VM_EXEC fault neither adds to nor takes from file->f_ra.mmap_miss
 * and always reads from the faulting folio up to ra_pages forwards (no
 * PG_readahead marker: async_size is 0). A kernel in which VM_EXEC faults
 * go through the mmap_miss gate again, and in which only the faulting
 * address counts as a hit (7.2 on), reads one folio per fault once the
 * counter is past MMAP_LOTSAMISS, and nothing brings it back down.
 *
 * File layout (one struct file, one MAP_PRIVATE PROT_READ|PROT_EXEC
 * mapping):
 *
 *   0                               random region          in-order region
 *   |-x------x------x--- ... ---x------|=============================|
 *     ^ 300 single-page faults through   ^ 128 MiB read in order through
 *       the exec mapping, 8 windows        the exec mapping, one touch
 *       apart at read_ahead_kb 512         per page, at read_ahead_kb 8192
 *
 * The window is widened after the random phase (POSIX_FADV_NORMAL copies
 * the disk's new ra_pages into the struct file, mmap_miss stays): random
 * faults 8 windows apart at 512 KiB are real misses, and at 8192 KiB the
 * in-order part has 16 windows, few enough to be far from one fault per
 * folio on every folio size.
 *
 * Bound: sqrt(windows * folios) major faults in the in-order part, the
 * geometric mean of the two outcomes (724, 362, 181 at 4, 16, 64 KiB).
 *   healthy: one synchronous read of ra_pages per window: 16, on 7.3
 *            and on 6.18, which already reads VM_EXEC faults forwards
 *            without a marker but has no bypass: 6.18 passes because
 *            every page fault-around maps still counts as a hit, which
 *            keeps mmap_miss low. Kernels without the VM_EXEC read path
 *            read around with a marker: 1.
 *   broken:  one major fault per folio, 32768, 8192, 2048: 45x, 22x and
 *            11x the bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_util.h"

#define RANDOM_FAULTS	(3 * RA_MMAP_LOTSAMISS)
#define SEQ_SIZE	(128UL << 20)
#define RANDOM_KB	512UL
#define SEQ_KB		8192UL
#define FMT_RANDOM \
	"random phase through the exec mapping: %ld major faults, at least %d needed\n"
#define FMT_WALK \
	"%ld major faults after %zu of %zu pages, bound %ld, ra_pages %lu, folio %zu bytes; "
#define SUSPECT \
	"suspected: VM_EXEC faults gated by mmap_miss, which random faults left above MMAP_LOTSAMISS (no exec bypass)"

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
	if (self->map && self->map != MAP_FAILED)
		munmap(self->map, self->size);
	if (self->fd >= 0)
		close(self->fd);
	ra_fs_teardown(&self->fs);
}

TEST_F_TIMEOUT(exec_mapping, in_order_after_random, 180)
{
	size_t ps = self->fs.page_size, folio = ra_folio_size(&self->fs);
	size_t spacing = 8 * RANDOM_KB * 1024, seq_off;
	unsigned int order[RANDOM_FAULTS], i;
	long bound, start, random;
	struct ra_walk walk;
	int ret;

	if (spacing < 2 * folio)
		spacing = 2 * folio;
	seq_off = RANDOM_FAULTS * spacing;
	self->size = seq_off + SEQ_SIZE;
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

	ra_shuffle(order, RANDOM_FAULTS, 12345);
	start = ra_majflt();
	for (i = 0; i < RANDOM_FAULTS; i++)
		FORCE_READ(self->map[order[i] * spacing]);
	random = ra_majflt() - start;
	ksft_print_msg(FMT_RANDOM, random, 2 * RA_MMAP_LOTSAMISS);
	ASSERT_GE(random, 2 * RA_MMAP_LOTSAMISS)
		TH_LOG("random faults were not page cache misses: the test proves nothing");

	ASSERT_EQ(0, ra_set_read_ahead_kb(&self->fs, SEQ_KB))
		TH_LOG("%s", self->fs.why);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_NORMAL));

	ra_walk_pages(self->map + seq_off, SEQ_SIZE / ps, false,
		      ra_limit(bound), &walk);
	ra_report(&self->fs, "in-order read through the exec mapping",
		  walk.majflt, bound);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
	EXPECT_LE(walk.majflt, bound)
		TH_LOG(FMT_WALK SUSPECT, walk.majflt, walk.touched, SEQ_SIZE / ps, bound,
		       ra_pages(&self->fs), folio);
}

TEST_HARNESS_MAIN
