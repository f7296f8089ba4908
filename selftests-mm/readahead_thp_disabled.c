// SPDX-License-Identifier: GPL-2.0
/*
 * PMD mappings where THP is disabled: readahead for a MADV_HUGEPAGE
 * mapping fills the page cache with PMD-sized folios; another mapping of
 * the same file range in a process with prctl(PR_SET_THP_DISABLE), or in
 * a VMA with MADV_NOHUGEPAGE, must map them with PTEs. do_set_pmd()
 * refuses a PMD there, whatever folio the page cache holds (some
 * hypervisors cannot take PMD mappings at all). Measured: after one
 * fault in each PMD of the second mapping, whether smaps' FilePmdMapped
 * of its VMA is not 0 (1 if so). Bound 0: no PMD mapping is ever right
 * there. Broken: every PMD faulted is PMD-mapped. Skips where readahead
 * builds no PMD-sized folio (no THP, PMD above 2 MiB as on 64 KiB pages,
 * filesystems without large folios).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define NR_PMD		8
#define RA_KB		128UL
#define SUSPECT \
	"do_set_pmd() maps a PMD-sized folio by a PMD where THP is disabled (no vma_thp_disabled() check)"

/*
 * Per case, over twice its slowest under TCG, so that the timeouts of the
 * category's cases add up to less than mm's settings timeout (900 s).
 */
#define TIMEOUT_S	4

FIXTURE(thp_disabled) {
	struct ra_fs fs;
	int fd;
	char *map;
	size_t size;
	unsigned long pmd;
};

FIXTURE_VARIANT(thp_disabled) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(thp_disabled, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(thp_disabled, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(thp_disabled, xfs_16k) { .fs = &ra_xfs_16k };
FIXTURE_VARIANT_ADD(thp_disabled, xfs_64k) { .fs = &ra_xfs_64k };

/* One read in each PMD of @map, PMD-aligned, @len bytes. */
static void touch_pmds(const char *map, size_t len, unsigned long pmd)
{
	size_t off;

	for (off = 0; off < len; off += pmd)
		FORCE_READ(map[off + pmd / 2]);
}

/*
 *   file     |  PMD 0  |  PMD 1  | ... |  PMD 7  |
 *   map      MADV_HUGEPAGE: a fault in each reads and maps a PMD folio
 *   second   THP disabled: a fault in each must map PTEs only
 */
FIXTURE_SETUP(thp_disabled)
{
	int ret;

	self->fd = -1;
	self->pmd = read_pmd_pagesize();
	if (!self->pmd)
		SKIP(return, "transparent hugepages not available");
	if (self->pmd > RA_THP_FOLIO_MAX)
		SKIP(return, "PMD size %lu bytes: readahead builds no PMD-sized folio",
		     self->pmd);
	ret = ra_fs_setup(&self->fs, variant->fs);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->size = NR_PMD * self->pmd;
	/* The folios of both mappings are the same: one file's worth. */
	ret = ra_need_memory(&self->fs, 2 * self->size);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_file_prepare(&self->fs, self->size, RA_KB, &self->fd);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	/* MADV_HUGEPAGE sets VM_HUGEPAGE whatever the global THP mode. */
	self->map = ra_map_pmd_aligned(self->fd, 0, self->size, self->pmd);
	ASSERT_NE(MAP_FAILED, self->map);
	ASSERT_EQ(0, madvise(self->map, self->size, MADV_HUGEPAGE));
	touch_pmds(self->map, self->size, self->pmd);
	/* smaps' FilePmdMapped, once: every PMD, or nothing to test. */
	if (!check_huge_file(self->map, self->size, NR_PMD, self->pmd))
		SKIP(return, "%s: readahead did not build and PMD-map a folio in each of %d PMDs",
		     self->fs.type, NR_PMD);
}

FIXTURE_TEARDOWN(thp_disabled)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
}

/*
 * Map the file again, fault each PMD: 1 when smaps' FilePmdMapped of the
 * new VMA is not 0 (read once), 0 when it is, -1 on error.
 */
static long map_again(int fd, size_t size, unsigned long pmd, int advice)
{
	char *map = ra_map_pmd_aligned(fd, 0, size, pmd);
	long n;

	if (map == MAP_FAILED)
		return -1;
	if (advice && madvise(map, size, advice)) {
		munmap(map, size);
		return -1;
	}
	touch_pmds(map, size, pmd);
	n = !check_huge_file(map, size, 0, pmd);
	munmap(map, size);
	return n;
}

/* A child process disables THP for itself, then maps and faults. */
TEST_F_TIMEOUT(thp_disabled, prctl, TIMEOUT_S)
{
	int pipefd[2], status;
	long n = -1;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pipefd[0]);
		if (!prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
			n = map_again(self->fd, self->size, self->pmd, 0);
		else
			n = -2;
		_exit(write(pipefd[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
	}
	close(pipefd[1]);
	ASSERT_EQ((ssize_t)sizeof(n), read(pipefd[0], &n, sizeof(n)));
	close(pipefd[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (n == -2)
		SKIP(return, "prctl(PR_SET_THP_DISABLE) not supported");
	ASSERT_LE(0, n) TH_LOG("mapping the file again failed");
	RA_EXPECT_FIGURE(&self->fs, "PMD-mapped after prctl(PR_SET_THP_DISABLE)",
			 n, "VMAs with FilePmdMapped", 0, SUSPECT,
			 "%d PMDs faulted, each a PMD-sized folio in the page cache",
			 NR_PMD);
}

/* The same process, a second VMA with MADV_NOHUGEPAGE. */
TEST_F_TIMEOUT(thp_disabled, madv_nohugepage, TIMEOUT_S)
{
	long n = map_again(self->fd, self->size, self->pmd, MADV_NOHUGEPAGE);

	ASSERT_LE(0, n) TH_LOG("mapping the file again failed");
	RA_EXPECT_FIGURE(&self->fs, "PMD-mapped in a MADV_NOHUGEPAGE VMA",
			 n, "VMAs with FilePmdMapped", 0, SUSPECT,
			 "%d PMDs faulted, each a PMD-sized folio in the page cache",
			 NR_PMD);
}

TEST_HARNESS_MAIN
