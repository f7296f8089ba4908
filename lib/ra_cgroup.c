// SPDX-License-Identifier: GPL-2.0
/*
 * The cgroup v2 an mmap readahead selftest runs in, made for it: its page
 * cache charged to a memcg of its own, its reads held by io.max on the
 * test's disk until it releases them, memory.stat counters. Built on the
 * cgroup selftests' cgroup_util.c, which only the tests that include
 * ra_cgroup.h link.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest.h"
#include "vm_util.h"
#include "cgroup_util.h"
#include "ra_cgroup.h"

/* The binary's main process: its tests' cgroups are named after it. */
static pid_t main_pid;

static void __attribute__((constructor)) ra_cgroup_main(void)
{
	main_pid = getpid();
}

/*
 * When the main process exits, remove the cgroups of its tests that a
 * test killed before its teardown (a timeout) left; their processes are
 * gone with the test's process group.
 */
static void __attribute__((destructor)) ra_cgroup_leftovers(void)
{
	char root[RA_PATH_LEN], prefix[64], *path;
	struct dirent *d;
	DIR *dp;

	if (getpid() != main_pid || cg_find_unified_root(root, sizeof(root), NULL))
		return;
	snprintf(prefix, sizeof(prefix), "readahead_test.%d.", main_pid);
	dp = opendir(root);
	while (dp && (d = readdir(dp))) {
		if (strncmp(d->d_name, prefix, strlen(prefix)))
			continue;
		path = cg_name(root, d->d_name);
		if (path)
			cg_destroy(path);
		free(path);
	}
	if (dp)
		closedir(dp);
}

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
 * changes no global setting. Why the root, not below the test's own
 * cgroup: a cgroup that holds processes (the test's does) cannot give
 * its children controllers (cgroup v2's no-internal-process rule), and
 * the root is the one cgroup exempt from it. The cgroup is removed by
 * ra_cgroup_leave(), or when the binary's main process exits.
 *
 * Return: 0; KSFT_SKIP with @fs->why set when there is no cgroup v2 root
 * with @controller enabled or it is not writable; -1 with @fs->why set
 * when entering fails.
 */
int ra_cgroup_enter(struct ra_fs *fs, struct ra_cgroup *cg,
		    const char *controller)
{
	char *root = cg->root, self[2 * RA_PATH_LEN], *rel;
	FILE *f;

	memset(cg, 0, sizeof(*cg));
	if (cg_find_unified_root(root, sizeof(cg->root), NULL))
		return ra_fs_skip(fs, "no cgroup v2 hierarchy mounted");
	if (cg_read_strstr(root, "cgroup.controllers", controller))
		return ra_fs_skip(fs,
				  "no %s controller in cgroup v2 at %s (bound to a v1 hierarchy?)",
				  controller, root);
	if (cg_read_strstr(root, "cgroup.subtree_control", controller))
		return ra_fs_skip(fs,
				  "cgroup v2 %s controller not enabled in %s/cgroup.subtree_control",
				  controller, root);
	/* Where this process is now: the "0::<path>" line. */
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return ra_fs_fail(fs, "reading /proc/self/cgroup");
	rel = NULL;
	while (!rel && fgets(self, sizeof(self), f))
		if (!strncmp(self, "0::", 3))
			rel = self + 3;
	fclose(f);
	if (!rel)
		return ra_fs_skip(fs, "this process is in no cgroup v2");
	rel[strcspn(rel, "\n")] = '\0';
	snprintf(cg->home, sizeof(cg->home), "%s%s", root,
		 strcmp(rel, "/") ? rel : "");
	snprintf(cg->path, sizeof(cg->path), "%s/readahead_test.%d.%d", root,
		 main_pid, getpid());
	if (cg_create(cg->path)) {
		int err = errno;

		cg->path[0] = '\0';
		if (err == EACCES || err == EPERM || err == EROFS)
			return ra_fs_skip(fs, "cgroup v2 root not writable");
		errno = err;
		return ra_fs_fail(fs, "creating a cgroup");
	}
	if (cg_enter_current(cg->path))
		return ra_fs_fail(fs, "entering the test cgroup");
	return 0;
}

/**
 * ra_cgroup_hold_reads() - hold or release the cgroup's reads of the test's disk
 * @fs: filesystem whose disk is read; @fs->why on skip or failure
 * @cg: cgroup entered with ra_cgroup_enter(@fs, @cg, "io")
 * @hold: true to hold every read from now on, false to release them
 *
 * Holding writes "<major>:<minor> rbps=1" to io.max: blk-throttle queues
 * each read bio of this cgroup's tasks on the disk until one byte per
 * second of budget covers it, which for the smallest bio (a page) is over
 * an hour. The folio under such a read stays locked until the test
 * releases it: releasing writes "rbps=max", and a change of io.max
 * dispatches what is queued at once (tg_conf_updated()). Removing the
 * cgroup, however the test ends, dispatches it too. Only this cgroup is
 * held, and the limit goes with the cgroup.
 *
 * Return: 0; KSFT_SKIP with @fs->why set when the kernel has no
 * blk-throttle (no io.max) or the disk is unknown; -1 with @fs->why set
 * when the write fails.
 */
int ra_cgroup_hold_reads(struct ra_fs *fs, struct ra_cgroup *cg, bool hold)
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
		return ra_fs_skip(fs, "kernel without blk-throttle: no io.max");
	snprintf(buf, sizeof(buf), "%s rbps=%s", cg->dev, hold ? "1" : "max");
	if (cg_write(cg->path, "io.max", buf))
		return ra_fs_fail(fs, hold ? "holding reads in io.max" :
				  "releasing reads in io.max");
	return 0;
}

/**
 * ra_memcg_flush() - make the next memory.stat reads exact
 * @fd: a file of the test, read by a task of the cgroup
 * @off: file offset of a range of it the caller is done with, in bytes
 * @len: length of that range in bytes
 *
 * memcg statistics are kept per CPU and summed (flushed) lazily: reading
 * memory.stat flushes only once more than MEMCG_CHARGE_BATCH (64) updates
 * per online CPU are pending (mem_cgroup_flush_stats()), else a worker
 * does it every two seconds. Rather than wait for the worker, this makes
 * the updates: it reads and drops 64 pages per possible CPU of the range
 * (up to @len), each page at least four updates (file pages and LRU size,
 * up and down), so that the next read of the cgroup's memory.stat, or an
 * ancestor's, flushes.
 *
 * Return: 0, or -1 on error (errno set).
 */
int ra_memcg_flush(int fd, size_t off, size_t len)
{
	size_t ps = psize(), pages = 64 * sysconf(_SC_NPROCESSORS_CONF);
	size_t i;
	char *buf;
	int err;

	if (pages > len / ps)
		pages = len / ps;
	buf = malloc(ps);
	if (!buf)
		return -1;
	for (i = 0; i < pages; i++)
		if (pread(fd, buf, ps, off + i * ps) != (ssize_t)ps)
			break;
	free(buf);
	if (i < pages)
		return -1;
	err = posix_fadvise(fd, off, pages * ps, POSIX_FADV_DONTNEED);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/**
 * ra_memcg_stat() - a counter of a cgroup's memory.stat
 * @cgroup: directory of the cgroup, a test's (&ra_cgroup.path) or the
 *	root (&ra_cgroup.root)
 * @key: name of the counter, e.g. "workingset_restore_file", any but the
 *	file's first ("anon")
 *
 * The counter as last flushed: after ra_memcg_flush(), exact to within
 * the updates of other CPUs that are still batched (under 64 per CPU).
 *
 * Return: the counter (in pages for the workingset counters, in bytes
 * for the LRU sizes), or -1 when it cannot be read.
 */
long ra_memcg_stat(const char *cgroup, const char *key)
{
	char name[64];

	/* At a line's start: "active_file " is also the end of another. */
	snprintf(name, sizeof(name), "\n%s ", key);
	return cg_read_key_long(cgroup, "memory.stat", name);
}

/**
 * ra_mglru() - whether reclaim uses the multi-gen LRU
 *
 * Return: true when /sys/kernel/mm/lru_gen/enabled has its main switch
 * (0x0001) on; false on the classic active/inactive LRU.
 */
bool ra_mglru(void)
{
	FILE *f = fopen("/sys/kernel/mm/lru_gen/enabled", "re");
	unsigned int caps = 0;

	if (!f)
		return false;
	if (fscanf(f, "%x", &caps) != 1)
		caps = 0;
	fclose(f);
	return caps & 1;
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
