// SPDX-License-Identifier: GPL-2.0
/*
 * Readahead under a memory limit smaller than its window: an in-order
 * reader of a mapping, in a memory cgroup whose memory.max leaves it a
 * quarter of one ra window, reads the file to its end and is not
 * OOM-killed. Readahead allocates with __GFP_NORETRY (readahead_gfp_mask()):
 * a folio the cgroup cannot charge after its reclaim attempts ends the
 * readahead, which submits what it has, and the reader's next fault
 * reads on. The folios readahead has added but not yet submitted are
 * locked, so reclaim cannot take them: a charge that insisted would find
 * little to reclaim and call the memcg OOM killer on the reader. The
 * window is 512 pages on every page size, so that the per-CPU charge
 * stock (MEMCG_CHARGE_BATCH, 64 pages a CPU) stays well inside it. The test
 * and its reader run in a cgroup of their own under the cgroup v2 root,
 * out of the limits of the caller's cgroup. Measured: the reader's OOM
 * kills (memory.events oom_kill) and whether it reached the end, once
 * the limit was met (memory.events max), or nothing is tested. Bound:
 * none of either. Broken (readahead charged without __GFP_NORETRY): the
 * reader killed in its first window. Healthy: a window cut short each
 * time, every page read. A readahead that loops on -ENOMEM (a hang)
 * shows as the harness's timeout only: a stall has no other sign. Only
 * order <= 3 folios (PAGE_ALLOC_COSTLY_ORDER) can meet an OOM kill at a
 * memcg charge (mm/memcontrol.c), so only windows read in such folios
 * can show the defect: the first ones (async readahead raises the order
 * by 2 a window up to the window's size), and no 64 KiB-block variant,
 * whose folios are of order 4 on 4 KiB pages. The file is sparse, so
 * that reads complete as soon as they are submitted.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"
#include "cgroup_util.h"
#include "ra_fs.h"
#include "ra_cache.h"
#include "ra_cgroup.h"

/* The ra window in pages, four times the room; the walk is four windows. */
#define RA_PAGES	512UL
#define WINDOWS		4
#define OOM_SCORE_ADJ	"/proc/self/oom_score_adj"
#define SUSPECT \
	"readahead charges its folios without __GFP_NORETRY (readahead_gfp_mask()), or does not stop at -ENOMEM (0fd44ab213bc)"

FIXTURE(memory_limit) {
	struct ra_fs fs;
	struct ra_cgroup cg;
	int fd;
	char *map;
	size_t size;
};

FIXTURE_VARIANT(memory_limit) {
	const struct ra_fs_kind *fs;
};

FIXTURE_VARIANT_ADD(memory_limit, ext4_4k) { .fs = &ra_ext4_4k };
FIXTURE_VARIANT_ADD(memory_limit, xfs_4k) { .fs = &ra_xfs_4k };
FIXTURE_VARIANT_ADD(memory_limit, xfs_16k) { .fs = &ra_xfs_16k };

FIXTURE_SETUP(memory_limit)
{
	int ret;

	self->fd = -1;
	ret = ra_fs_setup(&self->fs, variant->fs);
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	ret = ra_cgroup_enter(&self->fs, &self->cg, "memory");
	if (!ra_ready(_metadata, ret, &self->fs))
		return;
	self->size = WINDOWS * RA_PAGES * self->fs.page_size;
	ret = ra_file_map(&self->fs, self->size,
			  RA_PAGES * self->fs.page_size / 1024, &self->fd,
			  &self->map);
	ra_ready(_metadata, ret, &self->fs);
}

FIXTURE_TEARDOWN(memory_limit)
{
	ra_teardown(&self->fs, self->map, self->size, self->fd);
	ra_cgroup_leave(&self->cg);
}

TEST_F(memory_limit, in_order)
{
	size_t ps = self->fs.page_size, room = RA_PAGES / 4 * ps;
	char adj[16];
	long oom, met;
	int status;
	pid_t pid;

	/*
	 * The reader is a child, alone in line for the OOM killer: the test
	 * is out of its reach (OOM_SCORE_ADJ_MIN), the reader first
	 * (OOM_SCORE_ADJ_MAX), set before the limit so that no charge can
	 * meet the limit while the test is the likelier victim.
	 */
	ASSERT_LT(0, read_text(OOM_SCORE_ADJ, adj, sizeof(adj)));
	ASSERT_LT(0, write_text(OOM_SCORE_ADJ, "-1000", 5));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char buf[32];
		long base;

		/*
		 * The reader is in the test's process group, which a
		 * harness timeout kills. The limit counts from what the
		 * cgroup holds now: the reader's own pages (its stack,
		 * page tables) fit, one window does not:
		 *
		 *   memory.max = memory.current + room (RA_PAGES / 4 pages)
		 *   0                                              size
		 *   |== ra window ==|== ra window ==| ... 4 windows ...|
		 *    ^ a read-around or async readahead wants RA_PAGES
		 */
		base = cg_read_long(self->cg.path, "memory.current");
		snprintf(buf, sizeof(buf), "%ld", base + (long)room);
		if (write_text(OOM_SCORE_ADJ, "1000", 4) < 0 || base < 0 ||
		    cg_write(self->cg.path, "memory.max", buf))
			_exit(2);
		force_read_pages(self->map, self->size / ps, ps);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, cg_write(self->cg.path, "memory.max", "max"));
	ASSERT_LT(0, write_text(OOM_SCORE_ADJ, adj, strlen(adj)));
	oom = cg_read_key_long(self->cg.path, "memory.events", "oom_kill ");
	met = cg_read_key_long(self->cg.path, "memory.events", "max ");
	ASSERT_LE(0, oom);
	ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 2)
		TH_LOG("the reader could not set up its limit");
	ASSERT_LE(1, met)
		TH_LOG("memory.max was never met: the limit tested nothing");
	RA_EXPECT_FIGURE(&self->fs, "in-order reader under memory.max of a quarter window",
			 oom, "OOM kills", 0, SUSPECT,
			 "room %zu KiB, walk %zu KiB, reader %s %d",
			 room >> 10, self->size >> 10,
			 WIFSIGNALED(status) ? "killed by signal" : "exited",
			 WIFSIGNALED(status) ? WTERMSIG(status) :
			 WEXITSTATUS(status));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("the reader did not read to the end; suspected: %s", SUSPECT);
}

int main(int argc, char **argv)
{
	/* The filesystems of every variant, shared by their tests */
	ra_fs_init(argc, argv, (const struct ra_fs_kind *const []){
		&ra_ext4_4k, &ra_xfs_4k, &ra_xfs_16k, NULL
	});
	return test_harness_run(argc, argv);
}
