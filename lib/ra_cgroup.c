// SPDX-License-Identifier: GPL-2.0
/*
 * The cgroup v2 an mmap readahead selftest runs in, made for it: its page
 * cache charged to a memcg of its own, its reads held by an io.max limit
 * on the test's disk, memory.stat counters. Built on the cgroup
 * selftests' cgroup_util.c, which only the tests that include
 * ra_cgroup.h link.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>

#include "kselftest.h"
#include "cgroup_util.h"
#include "ra_cgroup.h"

/**
 * ra_cgroup_enter() - move the calling process into a new cgroup v2
 * @fs: filesystem of the test; @fs->why gets the reason on skip or failure
 * @cg: the cgroup, filled in here
 * @controller: cgroup v2 controller the test needs, "memory" or "io"
 *
 * Creates a cgroup under the cgroup v2 root and moves the whole process
 * (all its threads) into it, so that its page cache is charged there
 * (memory: its own LRU lists, workingset counters in memory.stat) or its
 * reads pass its own blk-throttle limits (io). The root must already
 * list @controller in cgroup.subtree_control, as systemd sets it up: this
 * changes no global setting. The cgroup is removed by ra_cgroup_leave(),
 * or once the process has exited, however it exits; the process is
 * killed when its parent dies (PR_SET_PDEATHSIG), so that it does not
 * outlive a job killed through the job's own cgroup.
 *
 * Return: 0; KSFT_SKIP with @fs->why set when there is no cgroup v2 root
 * with @controller enabled or it is not writable; -1 with @fs->why set
 * when entering fails.
 */
int ra_cgroup_enter(struct ra_fs *fs, struct ra_cgroup *cg,
		    const char *controller)
{
	char *root = cg->root, self[2 * RA_PATH_LEN], *rel;
	pid_t watcher;
	FILE *f;

	memset(cg, 0, sizeof(*cg));
	if (cg_find_unified_root(root, sizeof(cg->root), NULL))
		return ra_fs_skip(fs, "%s", "no cgroup v2 hierarchy mounted");
	if (cg_read_strstr(root, "cgroup.controllers", controller)) {
		snprintf(fs->why, sizeof(fs->why),
			 "no %s controller in cgroup v2 at %s (bound to a v1 hierarchy?)",
			 controller, root);
		return KSFT_SKIP;
	}
	if (cg_read_strstr(root, "cgroup.subtree_control", controller)) {
		snprintf(fs->why, sizeof(fs->why),
			 "cgroup v2 %s controller not enabled in %s/cgroup.subtree_control",
			 controller, root);
		return KSFT_SKIP;
	}
	/* Where this process is now: the "0::<path>" line. */
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return ra_fs_fail(fs, "reading /proc/self/cgroup");
	rel = NULL;
	while (fgets(self, sizeof(self), f))
		if (!strncmp(self, "0::", 3)) {
			rel = self + 3;
			rel[strcspn(rel, "\n")] = '\0';
			break;
		}
	fclose(f);
	if (!rel)
		return ra_fs_skip(fs, "%s", "this process is in no cgroup v2");
	snprintf(cg->home, sizeof(cg->home), "%s%s", root,
		 strcmp(rel, "/") ? rel : "");
	snprintf(cg->path, sizeof(cg->path), "%s/readahead_test.%d", root,
		 getpid());
	/*
	 * The watcher, forked before the cgroup exists, removes it however
	 * this process dies. It moves to the root with the test, so that
	 * killing the caller's cgroup (cgroup.kill, a service stop) leaves
	 * it alive to do so, while the test follows its parent through
	 * PR_SET_PDEATHSIG.
	 */
	watcher = ra_on_exit_of_caller(cg->path, -1);
	if (cg_create(cg->path)) {
		int err = errno;

		cg->path[0] = '\0';
		if (err == EACCES || err == EPERM || err == EROFS)
			return ra_fs_skip(fs, "%s", "cgroup v2 root not writable");
		errno = err;
		return ra_fs_fail(fs, "creating a cgroup");
	}
	if (watcher > 0)
		cg_enter(root, watcher);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
		return ra_fs_fail(fs, "following the parent's death");
	if (cg_enter_current(cg->path))
		return ra_fs_fail(fs, "entering the test cgroup");
	return 0;
}

/**
 * ra_cgroup_throttle_reads() - limit the cgroup's reads from the test's disk
 * @fs: filesystem whose disk is throttled; @fs->why on skip or failure
 * @cg: cgroup entered with ra_cgroup_enter(@fs, @cg, "io")
 * @iops: read I/Os per second allowed; 0 lifts the limit
 *
 * Writes "<major>:<minor> riops=@iops" to io.max: blk-throttle then holds
 * each read bio of this cgroup's tasks until its turn, about 1/@iops
 * seconds after the previous one. The folio under that read stays locked
 * the whole time, so that other faults on it really wait for it. Only
 * this cgroup is slowed, and the limit goes with the cgroup.
 *
 * Return: 0; KSFT_SKIP with @fs->why set when the kernel has no
 * blk-throttle (no io.max) or the disk is unknown; -1 with @fs->why set
 * when the write fails.
 */
int ra_cgroup_throttle_reads(struct ra_fs *fs, struct ra_cgroup *cg,
			     unsigned int iops)
{
	char path[3 * RA_PATH_LEN], buf[64];
	size_t n = strlen(fs->sysfs_ra);
	const char *tail = "queue/read_ahead_kb";
	FILE *f;

	if (!cg->dev[0]) {
		if (n < strlen(tail) || strcmp(fs->sysfs_ra + n - strlen(tail), tail))
			return ra_fs_skip(fs, "no block device known for %s", fs->dir);
		snprintf(path, sizeof(path), "%.*sdev",
			 (int)(n - strlen(tail)), fs->sysfs_ra);
		f = fopen(path, "re");
		if (!f || !fgets(cg->dev, sizeof(cg->dev), f)) {
			if (f)
				fclose(f);
			return ra_fs_skip(fs, "cannot read %s", path);
		}
		fclose(f);
		cg->dev[strcspn(cg->dev, "\n")] = '\0';
	}
	snprintf(path, sizeof(path), "%s/io.max", cg->path);
	if (access(path, W_OK))
		return ra_fs_skip(fs, "%s", "kernel without blk-throttle: no io.max");
	if (iops)
		snprintf(buf, sizeof(buf), "%s riops=%u", cg->dev, iops);
	else
		snprintf(buf, sizeof(buf), "%s riops=max", cg->dev);
	if (cg_write(cg->path, "io.max", buf))
		return ra_fs_fail(fs, "writing io.max");
	return 0;
}

/**
 * ra_memcg_stat() - a counter of a cgroup's memory.stat
 * @cgroup: directory of the cgroup, a test's (&ra_cgroup.path) or the
 *	root (&ra_cgroup.root)
 * @key: name of the counter, e.g. "workingset_restore_file"
 * @at_least: value the caller expects the counter to have reached
 *
 * memcg statistics are flushed lazily: reading memory.stat flushes them
 * once enough updates are pending, a worker at least every two seconds.
 * A fresh count may lag, so this reads again for up to four seconds
 * while the counter stays below @at_least.
 *
 * Return: the counter (in pages for the workingset counters, in bytes
 * for the LRU sizes), or -1 when it cannot be read.
 */
long ra_memcg_stat(const char *cgroup, const char *key, long at_least)
{
	char name[64];
	long val;
	int tries = 40;

	snprintf(name, sizeof(name), "%s ", key);
	do {
		val = cg_read_key_long(cgroup, "memory.stat", name);
		if (val < 0 || val >= at_least)
			return val;
		usleep(100000);
	} while (--tries);
	return val;
}

/**
 * ra_cgroup_leave() - go back to the original cgroup and remove the new one
 * @cg: cgroup from ra_cgroup_enter(), or zeroed
 *
 * The page cache charged to the cgroup moves to its parent on removal.
 */
void ra_cgroup_leave(struct ra_cgroup *cg)
{
	if (!cg->path[0])
		return;
	cg_enter_current(cg->home);
	rmdir(cg->path);
	cg->path[0] = '\0';
}
