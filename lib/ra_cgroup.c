// SPDX-License-Identifier: GPL-2.0
/* A cgroup v2 of a test's own; linked, with cgroup_util.c, into its users only */
#define _GNU_SOURCE
#include <glob.h>
#include <signal.h>
#include "kselftest.h"
#include "cgroup_util.h"
#include "ra_cgroup.h"

/*
 * At the main process's exit, on a SIGTERM too (the runner's timeout signals it),
 * remove the cgroups of killed tests, whose limits would hold their I/O or memory.
 */
static void ra_cgroup_exit(int sig __maybe_unused)
{
	exit(KSFT_FAIL);
}

static void __attribute__((constructor)) ra_cgroup_signals(void)
{
	signal(SIGTERM, ra_cgroup_exit);
}

static void __attribute__((destructor)) ra_cgroup_sweep(void)
{
	char root[RA_PATH_LEN], pattern[2 * RA_PATH_LEN];
	size_t i, tries;
	glob_t g;

	if (getpid() != ra_main_pid || cg_find_unified_root(root, sizeof(root), NULL))
		return;
	snprintf(pattern, sizeof(pattern), "%s/readahead_test.%d.*", root, ra_main_pid);
	if (glob(pattern, GLOB_ONLYDIR, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++)
		for (tries = 0; rmdir(g.gl_pathv[i]) && errno == EBUSY && tries < 100; tries++)
			usleep(10000);
	globfree(&g);
}

/**
 * ra_cgroup_enter() - move the calling process into a new cgroup v2
 * @fs: filesystem of the test; @fs->why gets the reason on skip or failure
 * @cg: the cgroup, filled in here
 * @controller: cgroup v2 controller the test needs, such as "memory"
 *
 * Under the root, which must already enable @controller in
 * cgroup.subtree_control (no global setting changes): a cgroup holding
 * processes, as the test's own does, cannot give its children controllers.
 * Return: 0; KSFT_SKIP with @fs->why set when no cgroup v2 root enables
 * @controller or it is not writable; -1 with @fs->why set on failure.
 */
int ra_cgroup_enter(struct ra_fs *fs, struct ra_cgroup *cg, const char *controller)
{
	char *root = cg->root;

	memset(cg, 0, sizeof(*cg));
	if (cg_find_unified_root(root, sizeof(cg->root), NULL))
		return ra_fs_skip(fs, "no cgroup v2 hierarchy mounted");
	if (cg_read_strstr(root, "cgroup.controllers", controller))
		return ra_fs_skip(fs, "no %s controller in cgroup v2 at %s (bound to v1?)",
				  controller, root);
	if (cg_read_strstr(root, "cgroup.subtree_control", controller))
		return ra_fs_skip(fs, "%s controller not enabled in %s/cgroup.subtree_control",
				  controller, root);
	snprintf(cg->path, sizeof(cg->path), "%s/readahead_test.%d.%d", root, ra_main_pid,
		 getpid());
	if (cg_create(cg->path)) {
		cg->path[0] = '\0';
		if (errno == EACCES || errno == EPERM || errno == EROFS)
			return ra_fs_skip(fs, "cgroup v2 root not writable");
		return ra_fs_fail(fs, "creating a cgroup");
	}
	if (cg_enter_current(cg->path))
		return ra_fs_fail(fs, "entering the test cgroup");
	return 0;
}

/**
 * ra_cgroup_leave() - move to the root cgroup and remove the test's
 * @cg: cgroup from ra_cgroup_enter(), or zeroed; its page cache moves up
 */
void ra_cgroup_leave(struct ra_cgroup *cg)
{
	if (!cg->path[0])
		return;
	cg_enter_current(cg->root);
	rmdir(cg->path);
	cg->path[0] = '\0';
}
