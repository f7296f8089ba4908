// SPDX-License-Identifier: GPL-2.0
/*
 * The filesystem an mmap readahead selftest runs on.
 *
 * A test runs on a filesystem made for it: a sparse image on a tmpfs
 * mounted over /tmp, attached to a loop device with LO_FLAGS_AUTOCLEAR,
 * formatted and mounted in a private mount namespace. In a binary whose
 * main() calls ra_fs_reuse_init(), that namespace is the binary's: a test
 * that follows one of the same kind (filesystem type and block size)
 * finds its filesystem mounted, empties it and runs on it (mkfs is most
 * of a test's time under emulation); a test of another kind unmounts it
 * and makes its own. A test gets a new file, set read_ahead_kb first,
 * and a cold open that is checked (ra_file_prepare()); what persists
 * (metadata caches, the image) moves no page count. Else a test has its
 * own namespace. When the namespace's last process exits, even by
 * SIGKILL, the mounts go with it and the loop device detaches itself: no
 * mount, file or loop device is left behind. A free loop device keeps
 * the read_ahead_kb it was last set to (attaching never lowers it): a
 * test puts it back in its teardown, and so does ra_ready() when a
 * fixture's setup ends early (the harness runs no teardown then); what
 * a test killed before its teardown left, the next test of the kind, a
 * change of kind or, once the binary has ended however it ended, the
 * binary's watcher process puts back. A test is killed when its harness
 * process or the main one dies (by the watcher), never left running.
 * What a test changes outside it (read_ahead_kb of a disk of the user's,
 * a file there, a cgroup) is put back by a watcher process once the test
 * process is gone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/capability.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "vm_util.h"
#include "ra_fs.h"

const struct ra_fs_kind ra_ext4_4k = { .type = "ext4", .block_size = 4096 };
const struct ra_fs_kind ra_xfs_4k = { .type = "xfs", .block_size = 4096 };
const struct ra_fs_kind ra_xfs_16k = { .type = "xfs", .block_size = 16384 };
const struct ra_fs_kind ra_xfs_32k = { .type = "xfs", .block_size = 32768 };
const struct ra_fs_kind ra_xfs_64k = { .type = "xfs", .block_size = 65536 };
/*
 * btrfs tracks the blocks of a folio in bitmaps of an unsigned long
 * (BTRFS_MAX_BLOCKS_PER_FOLIO; 512 blocks with CONFIG_BTRFS_EXPERIMENTAL,
 * where this undercounts); f2fs builds large folios for immutable files
 * only, and the test file is not.
 */
const struct ra_fs_kind ra_btrfs_4k = {
	.type = "btrfs", .block_size = 4096, .max_folio_blocks = 8 * sizeof(long)
};

const struct ra_fs_kind ra_f2fs_4k = {
	.type = "f2fs", .block_size = 4096, .max_folio_blocks = 1
};

const struct ra_fs_kind ra_erofs_4k = { .type = "erofs", .block_size = 4096 };

/* Apparent size of the sparse image; only metadata is ever written. */
#define RA_IMAGE_SIZE		(2ULL << 30)
/* Where the private tmpfs holding the image and the mount point goes. */
#define RA_SCRATCH		"/tmp"
/*
 * How long a test waits for another one to leave a READAHEAD_TEST_DIR
 * disk, in ms: a few of its tests, well inside the harness's timeout.
 */
#define RA_LOCK_WAIT_MS		10000

static size_t mem_available(void);
/* memcg_room(): the cgroup's limit cannot be read where it is mounted. */
#define RA_ROOM_HIDDEN		(SIZE_MAX - 1)

/**
 * ra_fs_skip() - give the reason a test skips
 * @fs: filesystem state; @fs->why gets the reason
 * @fmt: printf format of the reason, with its arguments
 *
 * Return: KSFT_SKIP.
 */
int ra_fs_skip(struct ra_fs *fs, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fs->why, sizeof(fs->why), fmt, ap);
	va_end(ap);
	return KSFT_SKIP;
}

/**
 * ra_fs_fail() - give the reason a step of a test's setup failed
 * @fs: filesystem state; @fs->why gets "<@what>: <strerror(errno)>"
 * @what: the step that failed
 *
 * Return: -1.
 */
int ra_fs_fail(struct ra_fs *fs, const char *what)
{
	snprintf(fs->why, sizeof(fs->why), "%s: %s", what, strerror(errno));
	return -1;
}

static bool have_cap_sys_admin(void)
{
	cap_flag_value_t val = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return false;
	if (cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &val))
		val = CAP_CLEAR;
	cap_free(caps);
	return val == CAP_SET;
}

/*
 * Whether the task is in the initial user namespace, whose uid_map is
 * the identity over all 2^32 ids: mounting a block device and setting
 * up a loop device take CAP_SYS_ADMIN there, not in a user namespace
 * (a rootless container). Without user namespaces there is no uid_map.
 */
static bool in_initial_userns(void)
{
	unsigned long inside, outside, count;
	FILE *f = fopen("/proc/self/uid_map", "re");
	int n;

	if (!f)
		return true;
	n = fscanf(f, "%lu %lu %lu", &inside, &outside, &count);
	fclose(f);
	return n == 3 && !inside && !outside && count == 4294967295UL;
}

static bool says_error(const char *line)
{
	return strstr(line, "rror") || strstr(line, "<E>");
}

/*
 * Run argv[0] found in PATH (plus the sbin directories), its output
 * hidden; of what it wrote to stderr, the last line that says "rror" or
 * "<E>" (mkfs.erofs's mark), else the last line, goes to @err (@len
 * bytes): not a version banner or a warning before the error.
 */
static int run_quiet(char *const argv[], char *err, size_t len)
{
	int status, efd = memfd_create("ra-stderr", MFD_CLOEXEC);
	char buf[4096], *line, *pick = NULL, *next;
	ssize_t n = 0;
	pid_t pid;

	err[0] = '\0';
	pid = fork();
	if (pid < 0) {
		close(efd);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		dup2(efd >= 0 ? efd : null, STDERR_FILENO);
		setenv("PATH", "/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin", 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		status = -1;
	if (efd >= 0) {
		n = pread(efd, buf, sizeof(buf) - 1, 0);
		close(efd);
	}
	buf[n > 0 ? n : 0] = '\0';
	for (line = buf; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line && (!pick || !says_error(pick) || says_error(line)))
			pick = line;
	}
	n = pick ? strnlen(pick, len - 1) : 0;
	memcpy(err, pick ? pick : "", n);
	err[n] = '\0';
	if (status == -1)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Find the read_ahead_kb attribute of the disk behind device @dev. */
static void find_sysfs_ra(struct ra_fs *fs, dev_t dev)
{
	char base[96], real[RA_PATH_LEN], path[2 * RA_PATH_LEN];
	struct stat st;
	char *resolved;

	fs->sysfs_ra[0] = '\0';
	snprintf(base, sizeof(base), "/sys/dev/block/%u:%u",
		 major(dev), minor(dev));
	resolved = realpath(base, NULL);
	if (!resolved)
		return;
	snprintf(real, sizeof(real), "%s", resolved);
	free(resolved);
	snprintf(path, sizeof(path), "%s/partition", real);
	if (!stat(path, &st))
		snprintf(path, sizeof(path), "%s/../queue/read_ahead_kb", real);
	else
		snprintf(path, sizeof(path), "%s/queue/read_ahead_kb", real);
	if (!access(path, R_OK))
		snprintf(fs->sysfs_ra, sizeof(fs->sysfs_ra), "%s", path);
	snprintf(fs->bdev, sizeof(fs->bdev), "%s", strrchr(real, '/') + 1);
}

/*
 * The type of the filesystem mounted from @dev, from /proc/self/mountinfo
 * ("ext2", "ext3" and "ext4" share one magic), into @type; false when no
 * mount of @dev is listed.
 */
static bool mount_type(dev_t dev, char *type, size_t len)
{
	char line[3 * RA_PATH_LEN], *sep;
	unsigned int maj, min;
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		sep = strstr(line, " - ");
		if (sscanf(line, "%*u %*u %u:%u", &maj, &min) != 2 || !sep ||
		    maj != major(dev) || min != minor(dev))
			continue;
		sep += 3;
		sep[strcspn(sep, " ")] = '\0';
		snprintf(type, len, "%s", sep);
		found = true;
	}
	fclose(f);
	return found;
}

/*
 * Use the directory named by READAHEAD_TEST_DIR instead of a new fs. Only
 * the variant that matches its filesystem and block size runs there, so
 * that no result is reported twice or under a filesystem or block size
 * it did not have; on a filesystem other than ext4 and XFS every variant
 * skips, as it does on a directory it cannot write or whose mount it
 * cannot find. The disk's read_ahead_kb is one for all its users: one
 * test at a time uses the disk (a lock on that attribute, else on the
 * directory, held until the test process exits, and then by the watcher
 * that puts read_ahead_kb back, until it has); a test waits up to
 * RA_LOCK_WAIT_MS for it, then skips.
 */
static int fs_use_dir(struct ra_fs *fs, const char *dir,
		      const struct ra_fs_kind *kind)
{
	char type[16];
	unsigned long bsize;
	struct statfs sfs;
	struct stat st;
	int lock, waited;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return ra_fs_skip(fs, RA_ENV_DIR "=%s is not a directory", dir);
	if (statfs(dir, &sfs))
		return ra_fs_fail(fs, "statfs");
	if (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)
		return ra_fs_skip(fs, "%s is on tmpfs/ramfs, which has no readahead",
				  dir);
	/* btrfs reads with its own bdi's read_ahead_kb, not the disk's. */
	if (sfs.f_type != XFS_SUPER_MAGIC && sfs.f_type != EXT4_SUPER_MAGIC)
		return ra_fs_skip(fs, "%s is on %s: " RA_ENV_DIR " takes ext4 and XFS only",
				  dir, sfs.f_type == BTRFS_SUPER_MAGIC ? "btrfs" :
				  sfs.f_type == F2FS_SUPER_MAGIC ? "f2fs" :
				  sfs.f_type == EROFS_SUPER_MAGIC_V1 ? "erofs" :
				  "another filesystem");
	if (!mount_type(st.st_dev, type, sizeof(type)))
		return ra_fs_skip(fs, "%s: no mount of its device in /proc/self/mountinfo",
				  dir);
	if (strcmp(type, "xfs") && strcmp(type, "ext4"))
		return ra_fs_skip(fs, "%s is on %s, not ext4 or XFS", dir, type);
	bsize = sfs.f_bsize;
	if (strcmp(type, kind->type) || bsize != kind->block_size)
		return ra_fs_skip(fs, "%s is %s with %lu-byte blocks: only that variant runs",
				  dir, type, bsize);
	if (access(dir, W_OK))
		return ra_fs_skip(fs, "%s is not writable (%s)", dir,
				  strerror(errno));
	find_sysfs_ra(fs, st.st_dev);
	/* Kept open, not closed: the lock goes with the test process. */
	lock = open(fs->sysfs_ra[0] ? fs->sysfs_ra : dir, O_RDONLY | O_CLOEXEC);
	if (lock < 0)
		return ra_fs_fail(fs, "opening the lock of " RA_ENV_DIR);
	for (waited = 0; flock(lock, LOCK_EX | LOCK_NB); waited += 10) {
		if (errno != EWOULDBLOCK || waited >= RA_LOCK_WAIT_MS) {
			close(lock);
			return ra_fs_skip(fs, "another test held %s's disk for %d ms",
					  dir, waited);
		}
		usleep(10 * 1000);
	}
	snprintf(fs->dir, sizeof(fs->dir), "%s", dir);
	snprintf(fs->type, sizeof(fs->type), "%s", type);
	fs->block_size = bsize;
	fs->lock_fd = lock;
	return 0;
}

/*
 * Attach @img_fd to a free loop device that detaches on last close; its
 * open descriptor goes to @loop_fd. Returns 0, KSFT_SKIP or -1.
 */
static int loop_attach(struct ra_fs *fs, int img_fd, char *dev, size_t len,
		       int *loop_fd)
{
	struct loop_config cfg = {
		.fd = img_fd,
		.info.lo_flags = LO_FLAGS_AUTOCLEAR,
	};
	int ctl, nr, fd, tries;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return ra_fs_skip(fs, "cannot open /dev/loop-control: %s",
				  strerror(errno));
	for (tries = 0; tries < 16; tries++) {
		nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0)
			break;
		snprintf(dev, len, "/dev/loop%d", nr);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			break;
		if (!ioctl(fd, LOOP_CONFIGURE, &cfg)) {
			close(ctl);
			snprintf(fs->bdev, sizeof(fs->bdev), "loop%d", nr);
			*loop_fd = fd;
			return 0;
		}
		close(fd);
		if (errno != EBUSY)	/* EBUSY: another process took it */
			break;
	}
	close(ctl);
	return ra_fs_fail(fs, "attaching a loop device");
}

/*
 * What the tests of a binary that called ra_fs_reuse_init() know of the
 * filesystem left mounted over RA_SCRATCH, in a MAP_SHARED page mapped
 * before the harness forks: each test process reads what the one before
 * it wrote. The ready flag is cleared before that filesystem is
 * unmounted and set (release order: after the fields it vouches for) once
 * a new one is mounted, so a test killed in between leaves it clear;
 * sysfs_ra is the read_ahead_kb attribute that governs its files (its
 * loop device's, or btrfs's own bdi's) and ra_kb what that attribute
 * read once mounted, in KiB. test_pgid is the process group of the test
 * running now (the harness gives each its own), 0 between tests;
 * main_pgid the main process's, never a test's.
 */
struct ra_fs_kept {
	bool ready;
	char type[16];
	unsigned long block_size;
	char bdev[32];
	char sysfs_ra[2 * RA_PATH_LEN];
	unsigned long ra_kb;
	pid_t main_pgid;
	pid_t test_pgid;
};

/* NULL unless ra_fs_reuse_init() made the binary's namespace. */
static struct ra_fs_kept *kept;
/* RA_SCRATCH's device before any test ran. */
static dev_t ns_tmp_dev;
/* Why ra_fs_reuse_init() gave up, for each test to say. */
static const char *reuse_off;

/*
 * Whether the filesystem mounted at @path (the last mount there, which
 * hides those below) is on block device @bdev, by the source mountinfo
 * names ("/dev/loop3"): not by stat(), which a filesystem shut down by
 * an error answers with EIO, nor by device number, which btrfs makes
 * anonymous.
 */
static bool mounted_from(const char *path, const char *bdev)
{
	char line[3 * RA_PATH_LEN], where[RA_PATH_LEN], src[64], *sep;
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	/* "id parent maj:min root mount-point ... - type source ..." */
	while (fgets(line, sizeof(line), f)) {
		sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*u %*u %*s %*s %255s", where) != 1 ||
		    strcmp(where, path))
			continue;
		found = sscanf(sep + 3, "%*s %63s", src) == 1 &&
			!strncmp(src, "/dev/", 5) && !strcmp(src + 5, bdev);
	}
	fclose(f);
	return found;
}

/*
 * Put the kept filesystem's read_ahead_kb back to what it was once
 * mounted (a test killed before its teardown, or whose setup failed,
 * left its own), while its loop device is still the one mounted here; a
 * free loop device keeps what it was last set to. Plain stdio,
 * not vm_util's write_num(), which ends the process on an error: this
 * also runs in the binary's watcher.
 */
static void kept_put_back_ra(void)
{
	FILE *f;

	if (!kept || !__atomic_load_n(&kept->ready, __ATOMIC_ACQUIRE) ||
	    !mounted_from(RA_SCRATCH "/mnt", kept->bdev))
		return;
	f = fopen(kept->sysfs_ra, "we");
	if (!f)
		return;
	fprintf(f, "%lu\n", kept->ra_kb);
	fclose(f);
}

/* read_ahead_kb from @path into @kb; false when it cannot be read. */
static bool read_ra_kb(const char *path, unsigned long *kb)
{
	FILE *f = fopen(path, "re");
	int n;

	if (!f)
		return false;
	n = fscanf(f, "%lu", kb);
	fclose(f);
	return n == 1;
}

/*
 * The binary's watcher: forked by ra_fs_reuse_init() into the binary's
 * namespace, in a session of its own, deaf to the signals a runner sends
 * a test it stops and named apart (a kill by the test's name, pkill or
 * killall, spares it), it waits until no process of the binary holds
 * @rd's pipe open (the main process and the tests it forks do, however
 * they end, SIGKILL included), then puts the loop device back to the
 * read_ahead_kb it was attached with. Until it exits, its share of the
 * namespace keeps the filesystem mounted: the device is still the
 * binary's when it writes.
 */
/* Whether process @pid is in this process's mount namespace. */
static bool in_this_ns(pid_t pid)
{
	struct stat self, other;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	return !stat("/proc/self/ns/mnt", &self) && !stat(path, &other) &&
	       self.st_ino == other.st_ino && self.st_dev == other.st_dev;
}

static void kept_watch(int rd, int main_fd)
{
	struct pollfd p[2] = {
		{ .fd = STDIN_FILENO, .events = POLLIN },
		{ .fd = 3, .events = POLLIN },
	};
	int null = open("/dev/null", O_RDWR), np = main_fd >= 0 ? 2 : 1;
	ssize_t n;
	pid_t pg;
	char c;

	setsid();
	prctl(PR_SET_NAME, "ra_fs_watcher");
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	dup2(rd, STDIN_FILENO);
	if (null >= 0) {
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	if (main_fd >= 0)
		dup2(main_fd, 3);
	syscall(__NR_close_range, np == 2 ? 4 : 3, ~0U, 0);
	for (;;) {
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) {
			n = read(STDIN_FILENO, &c, 1);
			if (!n || (n < 0 && errno != EINTR))
				break;
		}
		/*
		 * The main process is gone (killed: a runner's timeout, ^C)
		 * while the pipe is held: the harness process of the test
		 * running now is in a process group of its own, which
		 * nothing else stops. Its group id is the one recorded only
		 * while its leader is in this namespace (a test the harness
		 * timed out left its id, which another process may hold by
		 * now).
		 */
		if (np == 2 && p[1].revents) {
			pg = __atomic_load_n(&kept->test_pgid, __ATOMIC_ACQUIRE);
			if (pg > 1 && pg != kept->main_pgid && in_this_ns(pg))
				kill(-pg, SIGKILL);
			np = 1;
		}
	}
	kept_put_back_ra();
	_exit(0);
}

/**
 * ra_fs_reuse_init() - let the tests of a binary reuse its filesystems
 *
 * Called from main() before test_harness_run() forks the first test:
 * moves the binary into a private mount namespace (MS_PRIVATE: nothing
 * mounted there is seen outside) and maps the page its tests share.
 * There, the filesystem a test makes stays mounted, and ra_fs_setup()
 * of a later test of the same kind runs on it instead of running mkfs
 * again; everything goes with the binary. The loop device gets back the
 * read_ahead_kb it was attached with when a test reuses it, when the
 * kind changes and, by a watcher process, when the binary has ended,
 * however it ended. Nothing in READAHEAD_TEST_DIR mode. Where a step
 * fails (a chroot), each test's setup says which (the TAP header is not
 * out yet here), makes a namespace of its own, and says why it cannot
 * where it cannot.
 */
void ra_fs_reuse_init(void)
{
	const char *env = getenv(RA_ENV_DIR), *why = NULL;
	int pipefd[2] = { -1, -1 }, main_fd;
	pid_t watcher;
	struct stat st;
	void *page;

	if ((env && *env) || !have_cap_sys_admin())
		return;
	if (stat(RA_SCRATCH, &st))
		why = "no " RA_SCRATCH;
	else if (unshare(CLONE_NEWNS))
		why = "unshare(CLONE_NEWNS) failed";
	else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		why = "mounts cannot be made private";
	if (why) {
		reuse_off = why;
		return;
	}
	page = mmap(NULL, sizeof(*kept), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		reuse_off = "no page to share between tests";
		return;
	}
	kept = page;
	kept->main_pgid = getpgrp();
	/* Before 5.3 no pidfd: a killed main process leaves its test be. */
	main_fd = syscall(__NR_pidfd_open, getpid(), 0);
	watcher = pipe2(pipefd, O_CLOEXEC) ? -1 : fork();
	if (watcher < 0 && pipefd[0] >= 0) {
		close(pipefd[0]);
		close(pipefd[1]);
	}
	if (watcher < 0) {
		if (main_fd >= 0)
			close(main_fd);
		reuse_off = "no watcher process";
		munmap(page, sizeof(*kept));
		kept = NULL;
		return;
	}
	if (!watcher) {
		close(pipefd[1]);
		kept_watch(pipefd[0], main_fd);
	}
	if (main_fd >= 0)
		close(main_fd);
	/* pipefd[1] stays open in this process and the tests it forks. */
	close(pipefd[0]);
	ns_tmp_dev = st.st_dev;
}

/*
 * Whether a scratch tmpfs a test of this binary mounted is over
 * RA_SCRATCH: in the binary's own namespace nothing else mounts there.
 */
static bool scratch_mounted(void)
{
	struct statfs sfs;
	struct stat st;

	return !stat(RA_SCRATCH, &st) && st.st_dev != ns_tmp_dev &&
	       !statfs(RA_SCRATCH, &sfs) && sfs.f_type == TMPFS_MAGIC;
}

/* Remove what a test killed before its teardown left on the filesystem. */
static void scratch_clean(const char *dir)
{
	struct dirent *d;
	DIR *dp = opendir(dir);

	if (!dp)
		return;
	while ((d = readdir(dp)))
		if (d->d_type != DT_DIR)
			unlinkat(dirfd(dp), d->d_name, 0);
	closedir(dp);
}

/*
 * Whether the filesystem at @dir still takes a new file: not remounted
 * read-only or shut down by an error an earlier test ran into.
 */
static bool takes_files(const char *dir)
{
	char path[RA_PATH_LEN + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/.ra-probe", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	close(fd);
	return !unlink(path);
}

/*
 * Take the filesystem an earlier test of this binary made, when it is of
 * @kind, still mounted and still takes files; else unmount what earlier
 * tests mounted over RA_SCRATCH (a scratch tmpfs a killed test left
 * unfinished too), so that one image at a time takes memory.
 * Return: true when @fs is ready.
 */
static bool fs_reuse(struct ra_fs *fs, const struct ra_fs_kind *kind)
{
	char mnt[RA_PATH_LEN];

	snprintf(mnt, sizeof(mnt), "%s/mnt", RA_SCRATCH);
	if (__atomic_load_n(&kept->ready, __ATOMIC_ACQUIRE) &&
	    !strcmp(kept->type, kind->type) &&
	    kept->block_size == kind->block_size &&
	    mounted_from(mnt, kept->bdev)) {
		scratch_clean(mnt);
		if (takes_files(mnt)) {
			kept_put_back_ra();
			snprintf(fs->mnt, sizeof(fs->mnt), "%s", mnt);
			snprintf(fs->dir, sizeof(fs->dir), "%s", mnt);
			snprintf(fs->bdev, sizeof(fs->bdev), "%s", kept->bdev);
			snprintf(fs->sysfs_ra, sizeof(fs->sysfs_ra), "%s",
				 kept->sysfs_ra);
			fs->own = true;
			return true;
		}
	}
	kept_put_back_ra();
	__atomic_store_n(&kept->ready, false, __ATOMIC_RELEASE);
	/* Each pass unmounts one scratch tmpfs. */
	while (scratch_mounted()) {
		umount2(mnt, MNT_DETACH);
		if (umount2(RA_SCRATCH, MNT_DETACH))
			return false;
	}
	return false;
}

/* The Debian package that has mkfs.@type. */
static const char *mkfs_package(const char *type)
{
	if (!strcmp(type, "ext4"))
		return "e2fsprogs";
	if (!strcmp(type, "xfs"))
		return "xfsprogs";
	if (!strcmp(type, "btrfs"))
		return "btrfs-progs";
	if (!strcmp(type, "f2fs"))
		return "f2fs-tools";
	return "erofs-utils";
}

/*
 * Run mkfs.@fs->type with @fs->block_size on @dev; for erofs, of the
 * image file @dev from the directory @src. A mkfs that fails is a tool
 * this machine cannot use, not a kernel's fault. Return: 0 or KSFT_SKIP.
 */
static int fs_mkfs(struct ra_fs *fs, const char *dev, const char *src)
{
	const char *type = fs->type, *argv[12];
	char bs[48], blocks[48], tool[32], err[160];
	bool erofs_b = false;
	struct statfs sfs;
	int ret, n;

	snprintf(tool, sizeof(tool), "mkfs.%s", type);
again:
	n = 0;
	argv[n++] = tool;
	if (!strcmp(type, "erofs")) {
		/*
		 * Chunk-based: the file's holes dedupe to one chunk and the
		 * image stays small, but every byte of the file is read. The
		 * block size is 4096 before erofs-utils 1.6, which takes no
		 * -b; later ones default to the page size: -b where the
		 * first try failed.
		 */
		snprintf(bs, sizeof(bs), "--chunksize=%lu", fs->block_size);
		argv[n++] = bs;
		if (erofs_b) {
			snprintf(blocks, sizeof(blocks), "-b%lu",
				 fs->block_size);
			argv[n++] = blocks;
		}
		argv[n++] = dev;
		argv[n++] = src;
	} else if (!strcmp(type, "f2fs")) {
		/* Blocks of 4 KiB (mkfs.f2fs has no block size option). */
		argv[n++] = "-q";
		argv[n++] = "-f";
		argv[n++] = "-t";
		argv[n++] = "0";	/* no discard: the image is sparse */
		argv[n++] = dev;
	} else {
		snprintf(bs, sizeof(bs), strcmp(type, "xfs") ? "%lu" : "size=%lu",
			 fs->block_size);
		argv[n++] = "-q";
		argv[n++] = strcmp(type, "ext4") ? "-f" : "-F";
		argv[n++] = strcmp(type, "btrfs") ? "-b" : "-s";
		argv[n++] = bs;
		if (!strcmp(type, "ext4")) {
			argv[n++] = "-E";
			argv[n++] = "lazy_itable_init=1,lazy_journal_init=1";
		} else {
			argv[n++] = "-K";	/* no discard: sparse image */
		}
		argv[n++] = dev;
	}
	argv[n] = NULL;
	ret = run_quiet((char *const *)argv, err, sizeof(err));
	if (ret && ret != 127 && !strcmp(type, "erofs") && !erofs_b) {
		erofs_b = true;
		goto again;
	}
	if (ret == 127)
		return ra_fs_skip(fs, "%s not found (install %s)", tool,
				  mkfs_package(type));
	/*
	 * mkfs writes the metadata (XFS: its 64 MiB log) into the sparse
	 * image, on a tmpfs that holds at most half of MemAvailable: on a
	 * small machine it fills up, and that is a lack of memory, not a
	 * failure.
	 */
	if (ret && !statfs(RA_SCRATCH, &sfs) && !sfs.f_bavail) {
		snprintf(fs->why, sizeof(fs->why),
			 "%s filled the %lu MiB scratch tmpfs (half of MemAvailable), MemAvailable %zu MiB: too little memory for the image",
			 tool, (unsigned long)(sfs.f_blocks * sfs.f_bsize >> 20),
			 mem_available() >> 20);
		return KSFT_SKIP;
	}
	if (ret)
		return ra_fs_skip(fs, "%s for %lu-byte blocks failed (exit %d): %s",
				  tool, fs->block_size, ret,
				  err[0] ? err : "no message");
	return 0;
}

/*
 * The read_ahead_kb attribute that governs the files of the filesystem
 * mounted from @fs->bdev: its loop device's, but for btrfs, which reads
 * through a bdi of its own (its ra_pages, at mount, a new bdi's 128 KiB
 * times the devices and at least 4 MiB: 4 MiB here), found by the device
 * in /sys/fs/btrfs/<fsid>/devices.
 */
static void find_fs_ra(struct ra_fs *fs)
{
	char path[2 * RA_PATH_LEN];
	struct dirent *d;
	DIR *dp;

	snprintf(fs->sysfs_ra, sizeof(fs->sysfs_ra),
		 "/sys/block/%s/queue/read_ahead_kb", fs->bdev);
	if (strcmp(fs->type, "btrfs"))
		return;
	fs->sysfs_ra[0] = '\0';
	dp = opendir("/sys/fs/btrfs");
	if (!dp)
		return;
	while ((d = readdir(dp))) {
		snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/devices/%s",
			 d->d_name, fs->bdev);
		if (d->d_name[0] == '.' || access(path, F_OK))
			continue;
		snprintf(fs->sysfs_ra, sizeof(fs->sysfs_ra),
			 "/sys/fs/btrfs/%s/bdi/read_ahead_kb", d->d_name);
		break;
	}
	closedir(dp);
}

/*
 * Mount @dev, attached to a loop device whose descriptor is @loop_fd, at
 * @fs->mnt (erofs read-only); the mount then holds the loop device,
 * which detaches itself on its release. Return: 0, KSFT_SKIP or -1.
 */
static int fs_mount(struct ra_fs *fs, const char *dev, int loop_fd)
{
	unsigned long flags = MS_NOATIME;
	const char *opts = "";
	int err;

	if (!strcmp(fs->type, "ext4"))
		opts = "noinit_itable";
	if (!strcmp(fs->type, "erofs"))
		flags |= MS_RDONLY;
	if (mount(dev, fs->mnt, fs->type, flags, opts)) {
		err = errno;
		close(loop_fd);
		errno = err;
		if (err == ENODEV)
			return ra_fs_skip(fs, "kernel lacks %s support",
					  fs->type);
		/*
		 * A fresh filesystem that does not mount only when its blocks
		 * are not of the page size: the kernel lacks large block size
		 * support (XFS says EINVAL, or "not implemented" before 6.x),
		 * or blocks smaller than the page (f2fs wants blocks of the
		 * page size; btrfs before its subpage support).
		 */
		if (fs->block_size != fs->page_size) {
			snprintf(fs->why, sizeof(fs->why),
				 "kernel cannot mount %s with %lu-byte blocks on %lu-byte pages (%s)",
				 fs->type, fs->block_size, fs->page_size,
				 strerror(err));
			return KSFT_SKIP;
		}
		return ra_fs_fail(fs, "mount");
	}
	close(loop_fd);
	fs->own = true;
	snprintf(fs->dir, sizeof(fs->dir), "%s", fs->mnt);
	find_fs_ra(fs);
	/*
	 * Kept for the next tests; erofs too, never reused (it takes no
	 * file), so that its read_ahead_kb is put back all the same.
	 */
	if (kept && read_ra_kb(fs->sysfs_ra, &kept->ra_kb)) {
		snprintf(kept->type, sizeof(kept->type), "%s", fs->type);
		kept->block_size = fs->block_size;
		snprintf(kept->bdev, sizeof(kept->bdev), "%s", fs->bdev);
		snprintf(kept->sysfs_ra, sizeof(kept->sysfs_ra), "%s",
			 fs->sysfs_ra);
		__atomic_store_n(&kept->ready, true, __ATOMIC_RELEASE);
	}
	return 0;
}

/**
 * ra_fs_setup() - create the filesystem a test runs on
 * @fs: state to fill in; @fs->why holds the reason on skip or failure
 * @kind: filesystem type and block size in bytes
 *
 * Takes the filesystem of @kind an earlier test of the binary made, when
 * ra_fs_reuse_init() lets it, emptied of files; else makes one: mounts
 * a tmpfs over /tmp in a private mount namespace, creates a sparse image
 * on it, attaches it to a loop device with LO_FLAGS_AUTOCLEAR, runs mkfs
 * and mounts the result (erofs, made of files, waits for ra_fs_seal()).
 * Everything vanishes with the namespace's last process. When the
 * environment variable READAHEAD_TEST_DIR names a directory, that
 * directory is used instead and nothing is created.
 *
 * Return: 0 on success; KSFT_SKIP when the environment cannot run the
 * test (no CAP_SYS_ADMIN in the initial user namespace, a root that is
 * no mount point, no loop device, filesystem, mkfs tool or block size
 * support); -1 on an unexpected error (errno set).
 */
int ra_fs_setup(struct ra_fs *fs, const struct ra_fs_kind *kind)
{
	unsigned long block_size = kind->block_size;
	const char *env = getenv(RA_ENV_DIR), *type = kind->type;
	char img[RA_PATH_LEN], dev[32], opts_buf[64];
	int img_fd, loop_fd = -1, ret;
	pid_t parent;

	memset(fs, 0, sizeof(*fs));
	fs->lock_fd = -1;
	fs->page_size = psize();
	/*
	 * A test orphaned by a killed harness process must not run on beside
	 * the next test, on the filesystem or disk they would share.
	 */
	parent = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		return ra_fs_fail(fs, "dying with the harness process");
	/* And with the main process: its watcher kills this group then. */
	if (kept && getpgrp() != kept->main_pgid)
		__atomic_store_n(&kept->test_pgid, getpgrp(), __ATOMIC_RELEASE);
	if (env && *env)
		return fs_use_dir(fs, env, kind);

	snprintf(fs->type, sizeof(fs->type), "%s", type);
	fs->block_size = block_size;
	fs->max_folio = kind->max_folio_blocks * block_size;
	/* F2FS_BLKSIZE is PAGE_SIZE; mkfs.f2fs makes blocks of 4 KiB. */
	if (!strcmp(type, "f2fs") && block_size != fs->page_size)
		return ra_fs_skip(fs, "f2fs blocks are the page size (F2FS_BLKSIZE): %lu, not %lu",
				  fs->page_size, block_size);
	if (!have_cap_sys_admin())
		return ra_fs_skip(fs, "needs CAP_SYS_ADMIN to create a loop filesystem");
	if (!in_initial_userns())
		return ra_fs_skip(fs,
				  "in a user namespace: a loop filesystem needs CAP_SYS_ADMIN in the initial one");

	if (kept && fs_reuse(fs, kind))
		return 0;
	if (!kept) {
		if (reuse_off)
			ksft_print_msg("a filesystem per test: %s\n", reuse_off);
		if (unshare(CLONE_NEWNS))
			return ra_fs_fail(fs, "unshare(CLONE_NEWNS)");
		/*
		 * In a chroot whose root is no mount point of its own, "/"
		 * cannot be made private (EINVAL), and mounts made here could
		 * propagate out.
		 */
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
			if (errno == EINVAL)
				return ra_fs_skip(fs,
						  "/ is no mount point (chroot?): mounts cannot be private");
			return ra_fs_fail(fs, "making mounts private");
		}
	}
	/*
	 * The image's metadata lives on this tmpfs: let it take at most half
	 * of MemAvailable, so that on a small machine mkfs runs out of room
	 * (a skip) before the machine runs out of memory (the OOM killer).
	 */
	snprintf(opts_buf, sizeof(opts_buf), "mode=0700,size=%zuk",
		 mem_available() / 2048);
	if (mount("ra-scratch", RA_SCRATCH, "tmpfs", 0,
		  mem_available() ? opts_buf : "mode=0700"))
		return ra_fs_fail(fs, "mounting scratch tmpfs");

	snprintf(img, sizeof(img), "%s/image", RA_SCRATCH);
	snprintf(fs->mnt, sizeof(fs->mnt), "%s/mnt", RA_SCRATCH);
	if (mkdir(fs->mnt, 0700))
		return ra_fs_fail(fs, "mkdir");
	/* erofs is made by ra_fs_seal(), of the files written before. */
	if (!strcmp(type, "erofs")) {
		snprintf(fs->dir, sizeof(fs->dir), "%s/src", RA_SCRATCH);
		if (mkdir(fs->dir, 0700))
			return ra_fs_fail(fs, "mkdir");
		fs->own = true;
		return 0;
	}
	img_fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (img_fd < 0)
		return ra_fs_fail(fs, "creating image");
	if (ftruncate(img_fd, RA_IMAGE_SIZE)) {
		close(img_fd);
		return ra_fs_fail(fs, "sizing image");
	}
	ret = loop_attach(fs, img_fd, dev, sizeof(dev), &loop_fd);
	close(img_fd);
	unlink(img);
	if (ret)
		return ret;

	ret = fs_mkfs(fs, dev, NULL);
	if (!ret)
		ret = fs_mount(fs, dev, loop_fd);
	else
		close(loop_fd);
	return ret;
}

/**
 * ra_fs_seal() - make a read-only filesystem of the files written so far
 * @fs: filesystem from ra_fs_setup()
 *
 * For erofs, whose image is made of a directory's files, not written to:
 * runs mkfs.erofs over @fs->dir, attaches the image to a loop device,
 * mounts it read-only, and @fs->dir becomes the mount, where each file
 * has the name it had. The image replaces no file: the test's files
 * under the old @fs->dir stay, and are removed by ra_fs_teardown().
 * Nothing for other filesystems.
 *
 * Return: 0 on success, KSFT_SKIP or -1 with @fs->why set.
 */
int ra_fs_seal(struct ra_fs *fs)
{
	char img[RA_PATH_LEN], dev[32];
	int img_fd, loop_fd = -1, ret;

	if (strcmp(fs->type, "erofs"))
		return 0;
	snprintf(img, sizeof(img), "%s/image", RA_SCRATCH);
	ret = fs_mkfs(fs, img, fs->dir);
	if (ret)
		return ret;
	img_fd = open(img, O_RDWR | O_CLOEXEC);
	if (img_fd < 0)
		return ra_fs_fail(fs, "opening the erofs image");
	ret = loop_attach(fs, img_fd, dev, sizeof(dev), &loop_fd);
	close(img_fd);
	unlink(img);
	if (ret)
		return ret;
	return fs_mount(fs, dev, loop_fd);
}

/**
 * ra_restore_read_ahead_kb() - put back the disk's saved read_ahead_kb
 * @fs: filesystem whose disk's read_ahead_kb ra_set_read_ahead_kb() set
 *
 * Writes back the value the first ra_set_read_ahead_kb() saved, once;
 * nothing when none was saved.
 */
static void ra_restore_read_ahead_kb(struct ra_fs *fs)
{
	if (!fs->ra_saved)
		return;
	write_num(fs->sysfs_ra, fs->saved_ra_kb);
	fs->ra_saved = false;
}

/**
 * ra_fs_teardown() - undo what a test did to its filesystem
 * @fs: filesystem state
 *
 * Puts the disk's read_ahead_kb back and removes the test file. The
 * filesystem stays mounted (for a next test: ra_fs_reuse_init()); it
 * goes with its namespace, and then its loop device detaches itself.
 */
void ra_fs_teardown(struct ra_fs *fs)
{
	pid_t pg = getpgrp();

	if (kept)
		__atomic_compare_exchange_n(&kept->test_pgid, &pg, 0, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	ra_restore_read_ahead_kb(fs);
	if (fs->file[0])
		unlink(fs->file);
	fs->file[0] = '\0';
}

/*
 * What the watcher of ra_on_exit_of_caller() runs, as "sh -c": wait for
 * the end of its standard input, then write $1 into $0, or with no $1
 * remove $0, a file or a directory (a cgroup: what is still in it, a
 * child the test left, is killed through cgroup.kill first). A cgroup
 * empties a little after its last process has died (longer on a loaded
 * or emulated machine): rmdir is retried while it fails, for up to 30 s.
 */
static const char watcher_script[] =
	"while read -r _; do :; done; "
	"if [ $# -ge 1 ]; then echo \"$1\" > \"$0\"; exit; fi; "
	"[ ! -e \"$0/cgroup.kill\" ] || echo 1 > \"$0/cgroup.kill\"; "
	"i=0; while [ -d \"$0\" ] && ! rmdir \"$0\" 2>/dev/null && [ $i -lt 3000 ]; "
	"do sleep 0.01; i=$((i + 1)); done; rm -f \"$0\"";

/*
 * Fork the watcher of ra_on_exit_of_caller(). With @keep_fd (not -1) it
 * holds that descriptor too, as its fd 3, until it is done: a lock on
 * what it puts back stays held until it has.
 */
static pid_t spawn_watcher(const char *path, long value, int keep_fd)
{
	char num[24];
	int pipefd[2];
	pid_t pid;

	snprintf(num, sizeof(num), "%ld", value);
	if (pipe2(pipefd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[0], STDIN_FILENO);
		if (keep_fd >= 0 && dup2(keep_fd, 3) == 3) {
			syscall(__NR_close_range, STDOUT_FILENO, 2, 0);
			syscall(__NR_close_range, 4, ~0U, 0);
		} else {
			syscall(__NR_close_range, STDOUT_FILENO, ~0U, 0);
		}
		setsid();
		execl("/bin/sh", "sh", "-c", watcher_script, path,
		      value < 0 ? NULL : num, (char *)NULL);
		_exit(127);
	}
	close(pipefd[0]);
	if (pid < 0)
		close(pipefd[1]);
	/* pipefd[1] stays open until this process exits */
	return pid;
}

/**
 * ra_on_exit_of_caller() - undo a change once the calling process is gone
 * @path: file to write into, or file or directory to remove
 * @value: number to write into @path; below 0, remove @path instead
 *
 * When the calling process dies, however it dies, put @value back into
 * @path, or with @value below 0 remove @path (a file, or a directory: a
 * cgroup after killing what is left in it): a child in its own session
 * waits for the end of a pipe that only the caller holds open. The child
 * runs /bin/sh, so that a kill by the test's name (pkill, killall)
 * spares it. Only for what outlives the private mount namespace and
 * autoclearing loop device: a READAHEAD_TEST_DIR disk's read_ahead_kb
 * and file, and a cgroup.
 *
 * Return: the child's pid, or -1.
 */
pid_t ra_on_exit_of_caller(const char *path, long value)
{
	return spawn_watcher(path, value, -1);
}

/**
 * ra_set_read_ahead_kb() - set the readahead window of the test's disk
 * @fs: filesystem whose backing queue is changed
 * @kb: read_ahead_kb in KiB; ra_pages becomes @kb * 1024 / page size
 *
 * The window is copied into file->f_ra when a file is opened, so this
 * must come before ra_open_cold(). The first call saves the old value:
 * ra_fs_teardown() puts it back; on a READAHEAD_TEST_DIR disk it is also
 * put back if the test dies before its teardown runs.
 *
 * Return: 0 on success, KSFT_SKIP with @fs->why set when the attribute is
 * missing or not writable. A write that fails on a writable attribute
 * ends the test as failed (write_num() of mm's vm_util).
 */
int ra_set_read_ahead_kb(struct ra_fs *fs, unsigned long kb)
{
	if (!fs->sysfs_ra[0])
		return ra_fs_skip(fs, "no read_ahead_kb attribute for %s", fs->dir);
	if (access(fs->sysfs_ra, R_OK | W_OK))
		return ra_fs_skip(fs, "cannot write %s", fs->sysfs_ra);
	if (!fs->ra_saved) {
		fs->saved_ra_kb = read_num(fs->sysfs_ra);
		fs->ra_saved = true;
		if (!fs->own)
			spawn_watcher(fs->sysfs_ra, fs->saved_ra_kb,
				      fs->lock_fd);
	}
	fs->ra_kb = kb;
	write_num(fs->sysfs_ra, kb);
	return 0;
}

/**
 * ra_pages() - the readahead window a file opened now gets
 * @fs: filesystem
 *
 * Return: ra_pages, in pages: read_ahead_kb converted to pages.
 */
unsigned long ra_pages(const struct ra_fs *fs)
{
	return fs->ra_kb * 1024 / fs->page_size;
}

/**
 * ra_folio_size() - smallest page cache folio of the test filesystem
 * @fs: filesystem
 *
 * Return: the larger of the block size and the page size, in bytes: the
 * size of a min-order folio, the least a single read can bring in.
 */
unsigned long ra_folio_size(const struct ra_fs *fs)
{
	return fs->block_size > fs->page_size ? fs->block_size : fs->page_size;
}

/* MemAvailable from /proc/meminfo in bytes, or 0 when it cannot be read. */
static size_t mem_available(void)
{
	unsigned long kb = 0;
	char line[128];
	FILE *f;

	f = fopen("/proc/meminfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return (size_t)kb * 1024;
}

/* A number from the first line of @dir/@name; -1 when unreadable. */
static long long cg_number(const char *dir, const char *name)
{
	char path[3 * RA_PATH_LEN];
	long long val = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &val) != 1)
		val = -1;
	fclose(f);
	return val;
}

/* The value of "@key " in @dir/memory.stat; 0 when missing. */
static long long cg_stat(const char *dir, const char *key)
{
	char path[3 * RA_PATH_LEN], line[128];
	size_t len = strlen(key);
	long long val = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ' ') {
			val = atoll(line + len + 1);
			break;
		}
	fclose(f);
	return val;
}

/*
 * This process's memory cgroup: its directory into @dir, under the mount
 * of cgroup2 or of the v1 hierarchy with the memory controller (@v1),
 * from /proc/self/mountinfo, whose root field says where in the
 * hierarchy a bind mount (a container's) starts: @sub says the mount
 * point is itself a cgroup below the hierarchy's root.
 *
 * Return: the length of the mount point's path in @dir, or 0 when there
 * is no such cgroup or no mount shows it (@hidden: the hierarchy is
 * mounted, but not where the cgroup can be seen).
 */
static size_t memcg_dir(char *dir, size_t len, bool *v1, bool *sub,
			bool *hidden)
{
	char line[3 * RA_PATH_LEN], rel[RA_PATH_LEN] = "", *sep, *info = NULL;
	char root[4096], where[4096], last[4096], type[32];
	size_t mnt = 0, rlen, n = 0;
	FILE *f;

	/* "4:memory:/path" (v1) wins over "0::/path" (v2). */
	*v1 = false;
	*hidden = false;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':');
		char *path = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!path)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (!strcmp(ctl + 1, "memory") || strstr(ctl + 1, ",memory") ||
		    !strncmp(ctl + 1, "memory,", 7)) {
			snprintf(rel, sizeof(rel), "%s", path);
			*v1 = true;
		} else if (!strcmp(line, "0") && !*v1) {
			snprintf(rel, sizeof(rel), "%s", path);
		}
	}
	fclose(f);
	if (!rel[0])
		return 0;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	/* "id parent maj:min root mount-point options ... - type source super-options" */
	/*
	 * A later mount on the same mount point hides the earlier ones: the
	 * cgroup's mount is the last one there, if it shows the cgroup.
	 */
	while (getline(&info, &n, f) > 0) {
		sep = strstr(info, " - ");
		if (!sep || sscanf(info, "%*u %*u %*s %4095s %4095s", root,
				   where) != 2 ||
		    sscanf(sep + 3, "%31s", type) != 1)
			continue;
		if (mnt && !strcmp(where, last))
			mnt = 0;
		/* v1: the super options (after the source) name "memory". */
		if (*v1 && (strcmp(type, "cgroup") ||
			    !strstr(sep + 3 + strlen(type), "memory")))
			continue;
		if (!*v1 && strcmp(type, "cgroup2"))
			continue;
		*hidden = true;
		/* The cgroup's path below the mount's root. */
		rlen = strcmp(root, "/") ? strlen(root) : 0;
		if (strncmp(rel, root, rlen) || (rel[rlen] && rel[rlen] != '/'))
			continue;
		if (snprintf(dir, len, "%s%s", where,
			     strcmp(rel + rlen, "/") ? rel + rlen : "") < (int)len) {
			mnt = strlen(where);
			*sub = rlen > 0;
			snprintf(last, sizeof(last), "%s", where);
		}
	}
	free(info);
	fclose(f);
	if (mnt)
		*hidden = false;
	return mnt;
}

/* The least of @limit and a limit @val read as a number; no number, none. */
static long long cg_least(long long limit, long long val)
{
	return val >= 0 && val < limit ? val : limit;
}

/*
 * What the memory cgroups of this process still let it charge, in
 * bytes: over its cgroup and each ancestor below the hierarchy's root,
 * the least of the limit (v2: memory.max, and memory.high, above which
 * reclaim throttles; v1: memory.limit_in_bytes, and at the cgroup itself
 * hierarchical_memory_limit, which takes in ancestors a container does
 * not see) less the usage reclaim cannot drop (all but page cache outside
 * tmpfs). SIZE_MAX when no limit applies or none can be read;
 * RA_ROOM_HIDDEN when the hierarchy is mounted but hides the cgroup.
 */
static size_t memcg_room(void)
{
	long long limit, hier, used, room, unlimited = 1LL << 62;
	char dir[2 * RA_PATH_LEN];
	size_t least = SIZE_MAX, mnt;
	bool v1, sub, hidden, leaf = true;

	mnt = memcg_dir(dir, sizeof(dir), &v1, &sub, &hidden);
	if (!mnt)
		return hidden ? RA_ROOM_HIDDEN : SIZE_MAX;
	/* Up to the mount point, and that too when it is not the root. */
	while (strlen(dir) > mnt || (sub && strlen(dir) == mnt)) {
		/* "max" (v2) reads as no number; v1 says unlimited as ~2^63. */
		if (v1) {
			limit = cg_least(unlimited,
					 cg_number(dir, "memory.limit_in_bytes"));
			hier = leaf ? cg_stat(dir, "hierarchical_memory_limit") : 0;
			if (hier > 0)
				limit = cg_least(limit, hier);
		} else {
			limit = cg_least(unlimited, cg_number(dir, "memory.max"));
			limit = cg_least(limit, cg_number(dir, "memory.high"));
		}
		used = cg_number(dir, v1 ? "memory.usage_in_bytes" :
				 "memory.current");
		if (limit < unlimited && used >= 0) {
			/* Page cache but tmpfs (the test's image) */
			used -= cg_stat(dir, v1 ? "total_cache" : "file") -
				cg_stat(dir, v1 ? "total_shmem" : "shmem");
			room = limit - (used > 0 ? used : 0);
			if (room < 0)
				room = 0;
			if ((unsigned long long)room < least)
				least = room;
		}
		leaf = false;
		if (strlen(dir) == mnt)
			break;
		*strrchr(dir, '/') = '\0';
	}
	return least;
}

/**
 * ra_need_memory() - skip unless the test has the memory it needs
 * @fs: filesystem, set up; @fs->why gets the reason on skip
 * @bytes: most memory the test holds at once, in bytes: the page cache
 *	its walks keep (ra_walk_bytes()) plus what else it keeps cached or
 *	allocates, computed from its own sizes
 *
 * Call after ra_fs_setup(), so that the filesystem image (on tmpfs) is
 * already out of MemAvailable. With less room than @bytes, in the machine
 * (MemAvailable) or under the memory limit of the test's cgroups, the
 * test's own page cache forces direct reclaim, under which readahead's
 * folio allocations (__GFP_NORETRY) fail and reads are cut short: major
 * faults that no readahead bug caused, hence a skip and not a verdict.
 * Prints the need, MemAvailable and the cgroups' room where limited.
 *
 * Return: 0 when both have at least @bytes; KSFT_SKIP with @fs->why set
 * when one has less or /proc/meminfo has no MemAvailable.
 */
int ra_need_memory(struct ra_fs *fs, size_t bytes)
{
	size_t avail = mem_available(), room = memcg_room();

	ksft_print_msg("memory: this test needs %zu MiB, MemAvailable %zu MiB\n",
		       bytes >> 20, avail >> 20);
	if (room == RA_ROOM_HIDDEN)
		return ra_fs_skip(fs,
				  "no mount shows this process's memory cgroup: its limit is unknown");
	if (room != SIZE_MAX)
		ksft_print_msg("memory: the memory cgroup's limit leaves %zu MiB\n",
			       room >> 20);
	if (room < bytes)
		return ra_fs_skip(fs,
				  "the memory cgroup's limit leaves %zu MiB, below the %zu MiB this test needs",
				  room >> 20, bytes >> 20);
	if (avail < bytes)
		return ra_fs_skip(fs, "MemAvailable %zu MiB is below the %zu MiB this test needs",
				  avail >> 20, bytes >> 20);
	return 0;
}
