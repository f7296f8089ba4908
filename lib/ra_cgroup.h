/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cgroup v2 an mmap readahead selftest runs in (ra_cgroup.c). A test
 * that includes this header is linked with ra_cgroup.c and the cgroup
 * selftests' cgroup_util.c; the others are not.
 */
#ifndef __RA_CGROUP_H__
#define __RA_CGROUP_H__

#include "ra_fs.h"

/**
 * struct ra_cgroup - a cgroup v2 a test runs in, created for it
 * @root: the cgroup v2 root directory
 * @path: the cgroup's directory, "" when none was created
 * @dev: "major:minor" of the disk whose reads the test holds in io.max,
 *	or ""
 */
struct ra_cgroup {
	char root[RA_PATH_LEN];
	char path[2 * RA_PATH_LEN];
	char dev[32];
};

int ra_cgroup_enter(struct ra_fs *fs, struct ra_cgroup *cg,
		    const char *controller);
void ra_cgroup_leave(struct ra_cgroup *cg);

#endif /* __RA_CGROUP_H__ */
