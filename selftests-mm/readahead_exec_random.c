// SPDX-License-Identifier: GPL-2.0
/*
 * MADV_RANDOM on a PROT_EXEC mapping: the VM_EXEC read-around, meant for
 * random access, still reads ra_pages from each fault. The rule is a
 * comment of do_sync_mmap_readahead() ("VM_EXEC case below is
 * already intended for random access"): the exec read-around is sized
 * for code, read at random anyway, so MADV_RANDOM, a hint that "read
 * ahead may be less useful than normally" (madvise(2)), has nothing to
 * take from it; a change of that rule should be a decision this test
 * makes visible, not a side effect.
 * Measured: major faults of an in-order walk of 32 MiB. Bound:
 * sqrt(windows * folios) of the walk, 32 (64 KiB folios) to 128 (4 KiB).
 * Healthy: one per ra window, 2, 16x under or more. Broken (VM_RAND_READ
 * stops it): one per folio, 16x over or more.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_KB		16384UL
#define WALK		(32UL << 20)

FIXTURE(exec_random) {
	struct ra_fs fs;
	int fd;
	char *map;
};

FIXTURE_VARIANT(exec_random) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(exec_random, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(exec_random, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(exec_random, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(exec_random, xfs_64k) { .fs = &ra_xfs_64k };

FIXTURE_SETUP(exec_random)
{
	int ret = ra_fs_setup(&self->fs, variant->fs);

	self->fd = -1;
	self->map = MAP_FAILED;
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_need_memory(&self->fs, ra_walk_bytes(RA_KB));
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, WALK, RA_KB, &self->fd);
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(exec_random)
{
	ra_teardown(&self->fs, self->map, WALK, self->fd);
}

TEST_F(exec_random, madv_random)
{
	size_t ps = self->fs.page_size, folio = ra_folio_size(&self->fs);
	struct ra_walk walk;
	long bound;

	/* One MAP_PRIVATE PROT_READ|PROT_EXEC mapping, MADV_RANDOM, in order */
	self->map = mmap(NULL, WALK, PROT_READ | PROT_EXEC, MAP_PRIVATE, self->fd, 0);
	if (self->map == MAP_FAILED && (errno == EPERM || errno == EACCES))
		SKIP(return, "%s is mounted noexec", self->fs.dir);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, madvise(self->map, WALK, MADV_RANDOM));
	bound = ra_isqrt(WALK / (RA_KB * 1024) * (WALK / folio));

	ra_walk_pages(self->fd, self->map, 0, WALK / ps, false, ra_limit(bound), &walk);
	RA_EXPECT_FIGURE(&self->fs, "in-order walk, PROT_EXEC and MADV_RANDOM",
			 walk.majflt, "major faults", bound,
			 "VM_RAND_READ stops the VM_EXEC read-around (kept since \"mm/filemap: allow arch to request folio size for exec memory\", 6.17)",
			 "after %zu of %zu pages", walk.touched, WALK / ps);
	ASSERT_LE(1, walk.majflt) TH_LOG("no major fault: the file was not cold");
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, &ra_xfs_64k, NULL
	});
	return test_harness_run(argc, argv);
}
