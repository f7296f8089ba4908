// SPDX-License-Identifier: GPL-2.0
/*
 * The cgroup v2 an mmap readahead selftest runs in, made for it: its page
 * cache charged to a memcg of its own, or its reads throttled by io.max
 * on the test's disk. Built on the cgroup selftests' cgroup_util.c,
 * which only the tests that include ra_cgroup.h link.
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
 * test killed before its teardown (a harness timeout) left: their
 * processes died with the test's process group, and a cgroup empties a
 * little after its last process has died (up to a second here). A
 * cgroup whose main process was killed too stays.
 */
static void __attribute__((destructor)) ra_cgroup_leftovers(void)
{
	char root[RA_PATH_LEN], prefix[64], path[2 * RA_PATH_LEN];
	struct dirent *d;
	int tries;
	DIR *dp;

	if (getpid() != main_pid || cg_find_unified_root(root, sizeof(root), NULL))
		return;
	snprintf(prefix, sizeof(prefix), "readahead_test.%d.", main_pid);
	dp = opendir(root);
	while (dp && (d = readdir(dp))) {
		if (strncmp(d->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, d->d_name);
		for (tries = 0; rmdir(path) && errno == EBUSY && tries < 100; tries++)
			usleep(10000);
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
	char *root = cg->root;

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
 * ra_cgroup_leave() - move to the root cgroup and remove the test's
 * @cg: cgroup from ra_cgroup_enter(), or zeroed
 *
 * Called as the test ends. The page cache charged to the cgroup moves to
 * its parent on removal.
 */
void ra_cgroup_leave(struct ra_cgroup *cg)
{
	if (!cg->path[0])
		return;
	cg_enter_current(cg->root);
	rmdir(cg->path);
	cg->path[0] = '\0';
}
