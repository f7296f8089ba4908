/* SPDX-License-Identifier: GPL-2.0 */
/* A cgroup v2 of a test's own (ra_cgroup.c, on the cgroup selftests' lib) */
#ifndef __RA_CGROUP_H__
#define __RA_CGROUP_H__

#include "ra_fs.h"

struct ra_cgroup {			/* a cgroup v2 a test runs in, made for it */
	char root[RA_PATH_LEN];		/* the cgroup v2 root directory */
	char path[2 * RA_PATH_LEN];	/* its directory, "" when none was made */
};

int ra_cgroup_enter(struct ra_fs *fs, struct ra_cgroup *cg, const char *controller);
void ra_cgroup_leave(struct ra_cgroup *cg);

#endif /* __RA_CGROUP_H__ */
