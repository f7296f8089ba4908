// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers shared by the mmap readahead selftests.
 *
 * Each test gets a filesystem of its own: a sparse image on a tmpfs that
 * is mounted over /tmp in a private mount namespace, attached to a loop
 * device with LO_FLAGS_AUTOCLEAR, formatted and mounted in that namespace.
 * When the test process exits, even by SIGKILL, the namespace goes away,
 * the mount with it, and the loop device detaches itself: nothing is left
 * behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/loop.h>
#include <linux/mman.h>
#include <linux/magic.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "vm_util.h"
#include "cgroup_util.h"
#include "ra_util.h"

const struct ra_fs_kind ra_ext4_4k = { "ext4", 4096 };
const struct ra_fs_kind ra_xfs_4k = { "xfs", 4096 };
const struct ra_fs_kind ra_xfs_16k = { "xfs", 16384 };
const struct ra_fs_kind ra_xfs_32k = { "xfs", 32768 };
const struct ra_fs_kind ra_xfs_64k = { "xfs", 65536 };

/* Apparent size of the sparse image; only metadata is ever written. */
#define RA_IMAGE_SIZE		(2ULL << 30)
/* Where the private tmpfs holding the image and the mount point goes. */
#define RA_SCRATCH		"/tmp"
#define RA_FMT_FILE \
	"%s on %s, %lu-byte blocks, read_ahead_kb %lu (ra_pages %lu), folio %lu bytes, file %zu MiB\n"

/* Pages between two looks at the major fault counter during a walk. */
#define RA_WALK_CHECK		16
/* A walk unmaps what lies this many bytes behind it, to bound its RSS. */
#define RA_WALK_ZAP		(16UL << 20)

static void restore_read_ahead_kb(struct ra_fs *fs);
static size_t mem_available(void);

static int fs_skip(struct ra_fs *fs, const char *fmt, const char *arg)
{
	snprintf(fs->why, sizeof(fs->why), fmt, arg);
	return KSFT_SKIP;
}

static int fs_fail(struct ra_fs *fs, const char *what)
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

/* Run argv[0] found in PATH (plus the sbin directories), output hidden. */
static int run_quiet(char *const argv[])
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		setenv("PATH", "/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin", 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
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
 * Use the directory named by READAHEAD_TEST_DIR instead of a new fs. Only
 * the variant that matches its filesystem runs there (filesystems other
 * than XFS count as ext4), so that no result is reported twice or under
 * a block size it did not have.
 */
static int fs_use_dir(struct ra_fs *fs, const char *dir,
		      const struct ra_fs_kind *kind)
{
	unsigned long bsize;
	struct statfs sfs;
	struct stat st;
	const char *type;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return fs_skip(fs, RA_ENV_DIR "=%s is not a directory", dir);
	if (statfs(dir, &sfs))
		return fs_fail(fs, "statfs");
	if (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC)
		return fs_skip(fs, "%s is on tmpfs/ramfs, which has no readahead",
			       dir);
	type = sfs.f_type == XFS_SUPER_MAGIC ? "xfs" : "ext4";
	bsize = sfs.f_bsize;
	if (strcmp(type, kind->type) || bsize != kind->block_size)
		return fs_skip(fs, "%s: only the variant of its filesystem runs",
			       dir);
	snprintf(fs->dir, sizeof(fs->dir), "%s", dir);
	snprintf(fs->type, sizeof(fs->type), "%s", type);
	fs->block_size = bsize;
	find_sysfs_ra(fs, st.st_dev);
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
		return fs_skip(fs, "no loop device support (%s)", strerror(errno));
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
	return fs_fail(fs, "attaching a loop device");
}

static int fs_mkfs(struct ra_fs *fs, const char *dev)
{
	bool xfs = !strcmp(fs->type, "xfs");
	const char *argv[12];
	char bs[32], tool[32];
	struct statfs sfs;
	int ret, n = 0;

	snprintf(tool, sizeof(tool), "mkfs.%s", fs->type);
	snprintf(bs, sizeof(bs), xfs ? "size=%lu" : "%lu", fs->block_size);
	argv[n++] = tool;
	argv[n++] = "-q";
	argv[n++] = xfs ? "-f" : "-F";
	argv[n++] = "-b";
	argv[n++] = bs;
	if (xfs) {
		argv[n++] = "-K";	/* no discard: the image is sparse */
	} else {
		argv[n++] = "-E";
		argv[n++] = "lazy_itable_init=1,lazy_journal_init=1";
	}
	argv[n++] = dev;
	argv[n] = NULL;
	ret = run_quiet((char *const *)argv);
	if (ret == 127)
		return fs_skip(fs, "%s not found (install e2fsprogs/xfsprogs)",
			       tool);
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
	if (ret) {
		snprintf(fs->why, sizeof(fs->why), "%s -b %s failed (exit %d)",
			 tool, bs, ret);
		return -1;
	}
	return 0;
}

/**
 * ra_fs_setup() - create the filesystem a test runs on
 * @fs: state to fill in; @fs->why holds the reason on skip or failure
 * @kind: filesystem type and block size in bytes
 *
 * Moves the caller into a private mount namespace, mounts a tmpfs over
 * /tmp there, creates a sparse image on it, attaches it to a loop device
 * with LO_FLAGS_AUTOCLEAR, runs mkfs and mounts the result. Everything
 * vanishes with the calling process. When the environment variable
 * READAHEAD_TEST_DIR names a directory, that directory is used instead
 * and nothing is created.
 *
 * Return: 0 on success; KSFT_SKIP when the environment cannot run the
 * test (no CAP_SYS_ADMIN, a root that is no mount point, no loop device,
 * filesystem, mkfs tool or block size support); -1 on an unexpected
 * error (errno set).
 */
int ra_fs_setup(struct ra_fs *fs, const struct ra_fs_kind *kind)
{
	unsigned long block_size = kind->block_size;
	const char *env = getenv(RA_ENV_DIR), *type = kind->type;
	char img[RA_PATH_LEN], dev[32], opts_buf[64];
	int img_fd, loop_fd, ret;
	const char *opts;

	memset(fs, 0, sizeof(*fs));
	fs->page_size = psize();
	if (env && *env)
		return fs_use_dir(fs, env, kind);

	snprintf(fs->type, sizeof(fs->type), "%s", type);
	fs->block_size = block_size;
	if (!have_cap_sys_admin())
		return fs_skip(fs, "%s", "needs CAP_SYS_ADMIN to create a loop filesystem");

	if (unshare(CLONE_NEWNS))
		return fs_fail(fs, "unshare(CLONE_NEWNS)");
	/*
	 * In a chroot whose root is no mount point of its own, "/" cannot be
	 * made private (EINVAL), and mounts made here could propagate out.
	 */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		if (errno == EINVAL)
			return fs_skip(fs, "%s",
				       "/ is no mount point (chroot?): mounts cannot be private");
		return fs_fail(fs, "making mounts private");
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
		return fs_fail(fs, "mounting scratch tmpfs");

	snprintf(img, sizeof(img), "%s/image", RA_SCRATCH);
	snprintf(fs->mnt, sizeof(fs->mnt), "%s/mnt", RA_SCRATCH);
	if (mkdir(fs->mnt, 0700))
		return fs_fail(fs, "mkdir");
	img_fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (img_fd < 0)
		return fs_fail(fs, "creating image");
	if (ftruncate(img_fd, RA_IMAGE_SIZE)) {
		close(img_fd);
		return fs_fail(fs, "sizing image");
	}
	ret = loop_attach(fs, img_fd, dev, sizeof(dev), &loop_fd);
	close(img_fd);
	unlink(img);
	if (ret)
		return ret;

	ret = fs_mkfs(fs, dev);
	if (ret) {
		close(loop_fd);
		return ret;
	}
	opts = strcmp(type, "ext4") ? "" : "noinit_itable";
	if (mount(dev, fs->mnt, type, MS_NOATIME, opts)) {
		int err = errno;

		close(loop_fd);
		errno = err;
		if (err == ENODEV)
			return fs_skip(fs, "kernel lacks %s support", type);
		/*
		 * A fresh filesystem that does not mount only when its blocks
		 * are larger than a page: the kernel lacks large block size
		 * support (XFS says EINVAL, or "not implemented" before 6.x).
		 */
		if (block_size > fs->page_size) {
			snprintf(fs->why, sizeof(fs->why),
				 "kernel cannot mount %s with %lu-byte blocks on %lu-byte pages (%s)",
				 type, block_size, fs->page_size, strerror(err));
			return KSFT_SKIP;
		}
		return fs_fail(fs, "mount");
	}
	/* The mount now holds the loop device; autoclear on its release. */
	close(loop_fd);
	fs->own = true;
	snprintf(fs->dir, sizeof(fs->dir), "%s", fs->mnt);
	snprintf(fs->sysfs_ra, sizeof(fs->sysfs_ra),
		 "/sys/block/%s/queue/read_ahead_kb", fs->bdev);
	return 0;
}

/**
 * ra_fs_teardown() - unmount what ra_fs_setup() created
 * @fs: filesystem state
 *
 * Unmounting releases the loop device, which then detaches itself. A
 * process that dies without calling this leaves nothing either: its mount
 * namespace, and the mounts in it, go away with it. The disk's read_ahead_kb
 * is put back and the test file removed.
 */
void ra_fs_teardown(struct ra_fs *fs)
{
	restore_read_ahead_kb(fs);
	if (fs->file[0])
		unlink(fs->file);
	fs->file[0] = '\0';
	if (!fs->own)
		return;
	umount2(fs->mnt, MNT_DETACH);
	umount2(RA_SCRATCH, MNT_DETACH);
	fs->own = false;
}

/*
 * What the watcher of on_exit_of_caller() runs, as "sh -c": wait for the
 * end of its standard input, then write $1 into $0, or with no $1 remove
 * $0, a file or an empty directory (a cgroup empties a little after its
 * last process has died).
 */
static const char watcher_script[] =
	"while read -r _; do :; done; "
	"if [ $# -ge 1 ]; then echo \"$1\" > \"$0\"; exit; fi; "
	"i=0; while [ -d \"$0\" ] && ! rmdir \"$0\" 2>/dev/null && [ $i -lt 100 ]; "
	"do sleep 0.01; i=$((i + 1)); done; rm -f \"$0\"";

/*
 * When the calling process dies, however it dies, put @value back into
 * @path, or with @value below 0 remove @path (a file, or an empty
 * directory such as a cgroup): a child in its own session waits for the
 * end of a pipe that only the caller holds open. The child runs
 * /bin/sh, so that a kill by the test's name (pkill, killall) spares it.
 * Returns the child's pid, or -1.
 */
static pid_t on_exit_of_caller(const char *path, long value)
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
		close_range(STDOUT_FILENO, ~0U, 0);
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
		return fs_skip(fs, "no read_ahead_kb attribute for %s", fs->dir);
	if (access(fs->sysfs_ra, R_OK | W_OK))
		return fs_skip(fs, "cannot write %s", fs->sysfs_ra);
	if (!fs->ra_saved) {
		fs->saved_ra_kb = read_num(fs->sysfs_ra);
		fs->ra_saved = true;
		if (!fs->own)
			on_exit_of_caller(fs->sysfs_ra, fs->saved_ra_kb);
	}
	fs->ra_kb = kb;
	write_num(fs->sysfs_ra, kb);
	return 0;
}

/* Put back the read_ahead_kb saved by ra_set_read_ahead_kb(). */
static void restore_read_ahead_kb(struct ra_fs *fs)
{
	if (!fs->ra_saved)
		return;
	write_num(fs->sysfs_ra, fs->saved_ra_kb);
	fs->ra_saved = false;
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

/**
 * ra_file_create() - create a sparse test file
 * @fs: filesystem to create it on
 * @name: file name prefix inside @fs->dir; six random characters follow
 * @size: file size in bytes
 * @path: buffer receiving the file's path
 * @path_len: size of @path in bytes
 *
 * The file is a hole from start to end: readahead, folio allocation and
 * fault accounting treat it exactly like written data, and no test
 * depends on disk speed or disk space. In a directory of the user's
 * (READAHEAD_TEST_DIR) it is removed when the caller dies, however it
 * dies.
 *
 * Return: 0 on success, -1 on error (errno set).
 */
int ra_file_create(struct ra_fs *fs, const char *name, size_t size,
		   char *path, size_t path_len)
{
	int fd, ret;

	snprintf(path, path_len, "%s/%s.XXXXXX", fs->dir, name);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -1;
	snprintf(fs->file, sizeof(fs->file), "%s", path);
	/* In a directory of the user's, a killed test leaves no file. */
	if (!fs->own)
		on_exit_of_caller(path, -1);
	ret = ftruncate(fd, size);
	close(fd);
	return ret;
}

/**
 * ra_drop_cache() - empty a file's page cache and check that it is empty
 * @fd: open file, not mapped anywhere
 * @size: file size in bytes
 *
 * Uses POSIX_FADV_DONTNEED (never /proc/sys/vm/drop_caches) and verifies
 * with mincore() that no page of the file is resident.
 *
 * Return: 0 when nothing is resident, -1 otherwise (errno set; EBUSY
 * when pages stayed resident).
 */
int ra_drop_cache(int fd, size_t size)
{
	long resident;
	int err;
	void *p;

	err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (err) {
		errno = err;
		return -1;
	}
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	resident = ra_resident_pages(p, size);
	munmap(p, size);
	if (resident) {
		errno = resident < 0 ? errno : EBUSY;
		return -1;
	}
	return 0;
}

/**
 * ra_open_cold() - open a test file with an empty page cache
 * @path: file to open read-only
 *
 * A fresh open() gives a fresh file->f_ra: mmap_miss is 0 and ra_pages is
 * the disk's current read_ahead_kb in pages.
 *
 * Return: the file descriptor, or -1 on error (errno set).
 */
int ra_open_cold(const char *path)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || ra_drop_cache(fd, st.st_size)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/**
 * ra_file_prepare() - create the test file and open it cold
 * @fs: filesystem to create it on
 * @size: file size in bytes
 * @ra_kb: read_ahead_kb to set before opening, in KiB
 * @fd: receives the open file descriptor
 *
 * Prints the filesystem, read_ahead_kb, ra_pages and folio size the test
 * runs with.
 *
 * Return: 0 on success, KSFT_SKIP or -1 with @fs->why set.
 */
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb,
		    int *fd)
{
	char path[2 * RA_PATH_LEN];
	int ret;

	/* A failing fixture setup gets no teardown: undo here. */
	ret = ra_set_read_ahead_kb(fs, ra_kb);
	if (ret) {
		restore_read_ahead_kb(fs);
		return ret;
	}
	if (ra_file_create(fs, "ra-test", size, path, sizeof(path))) {
		ret = fs_fail(fs, "creating test file");
		restore_read_ahead_kb(fs);
		return ret;
	}
	*fd = ra_open_cold(path);
	if (*fd < 0) {
		ret = fs_fail(fs, "dropping test file from page cache");
		ra_fs_teardown(fs);
		return ret;
	}
	ksft_print_msg(RA_FMT_FILE, fs->type, fs->bdev[0] ? fs->bdev : fs->dir,
		       fs->block_size, ra_kb, ra_pages(fs), ra_folio_size(fs),
		       size >> 20);
	return 0;
}

/**
 * ra_file_map() - create the test file, open it cold and map it
 * @fs: filesystem to create it on
 * @size: file size in bytes
 * @ra_kb: read_ahead_kb to set before opening, in KiB
 * @fd: receives the open file descriptor
 * @map: receives a read-only MAP_SHARED mapping of the whole file
 *
 * ra_file_prepare(), then the mapping most tests read through.
 *
 * Return: 0 on success, KSFT_SKIP or -1 with @fs->why set (on -1 after
 * the file was opened, @fd stays open for ra_teardown()).
 */
int ra_file_map(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd,
		char **map)
{
	int ret = ra_file_prepare(fs, size, ra_kb, fd);

	if (ret)
		return ret;
	*map = mmap(NULL, size, PROT_READ, MAP_SHARED, *fd, 0);
	if (*map == MAP_FAILED)
		return fs_fail(fs, "mapping the test file");
	return 0;
}

/**
 * ra_teardown() - undo what a fixture set up
 * @fs: filesystem of the fixture
 * @map: mapping of the test file, or NULL or MAP_FAILED
 * @size: length of @map in bytes
 * @fd: descriptor of the test file, or -1
 *
 * Unmaps @map, closes @fd and tears the filesystem down
 * (ra_fs_teardown()).
 */
void ra_teardown(struct ra_fs *fs, char *map, size_t size, int fd)
{
	if (map && map != MAP_FAILED)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	ra_fs_teardown(fs);
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

/**
 * ra_need_memory() - skip unless the machine has the memory a test needs
 * @fs: filesystem, set up; @fs->why gets the reason on skip
 * @bytes: most memory the test holds at once, in bytes: the page cache
 *	its walks keep (ra_walk_bytes()) plus what else it keeps cached or
 *	allocates, computed from its own sizes
 *
 * Call after ra_fs_setup(), so that the filesystem image (on tmpfs) is
 * already out of MemAvailable. With less MemAvailable than @bytes, the
 * test's own page cache forces direct reclaim, under which readahead's
 * folio allocations (__GFP_NORETRY) fail and reads are cut short: major
 * faults that no readahead bug caused, hence a skip and not a verdict.
 * Prints the need and MemAvailable.
 *
 * Return: 0 when MemAvailable is at least @bytes; KSFT_SKIP with @fs->why
 * set when it is lower or /proc/meminfo has no MemAvailable.
 */
int ra_need_memory(struct ra_fs *fs, size_t bytes)
{
	size_t avail = mem_available();

	ksft_print_msg("memory: this test needs %zu MiB, MemAvailable %zu MiB\n",
		       bytes >> 20, avail >> 20);
	if (avail >= bytes)
		return 0;
	snprintf(fs->why, sizeof(fs->why),
		 "MemAvailable %zu MiB is below the %zu MiB this test needs",
		 avail >> 20, bytes >> 20);
	return KSFT_SKIP;
}

/**
 * ra_figure() - print a measured figure in the suite's one figure format
 * @fs: filesystem the figure was measured on
 * @what: what was measured, e.g. "in-order read after random faults"
 * @measured: the figure, in @unit
 * @unit: unit of @measured and @bound: "major faults", "pages", "holes"
 * @bound: the test's bound on @measured, in @unit
 * @fmt: printf format of a note on the figure (where a walk stopped, the
 *	per-run figure), printed after "; "
 *
 * Prints "figure <what>: <measured> <unit>, bound <bound>, ra_pages <n>,
 * folio <bytes> bytes; <note>" as a TAP comment: ra_pages and the folio
 * size are the two things every bound of the suite is derived from.
 * scripts/tap-figures.awk reads this format. RA_EXPECT_FIGURE() prints
 * and checks in one step.
 */
void ra_figure(const struct ra_fs *fs, const char *what, long measured,
	       const char *unit, long bound, const char *fmt, ...)
{
	char note[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	ksft_print_msg("figure %s: %ld %s, bound %ld, ra_pages %lu, folio %lu bytes; %s\n",
		       what, measured, unit, bound, ra_pages(fs),
		       ra_folio_size(fs), note);
}

/**
 * ra_resident_pages() - count resident pages in a mapping
 * @addr: page-aligned start of the range
 * @len: length of the range in bytes
 *
 * Return: the number of pages mincore() reports resident, or -1 on error
 * (errno set).
 */
long ra_resident_pages(const void *addr, size_t len)
{
	size_t ps = psize(), n = (len + ps - 1) / ps, i;
	unsigned char *vec;
	long count = 0;

	vec = malloc(n);
	if (!vec)
		return -1;
	if (mincore((void *)addr, len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

/**
 * ra_majflt() - major faults of the calling process so far
 *
 * A major fault is a page cache miss in filemap_fault(): the faulting
 * task had to start the read (and any readahead) itself.
 *
 * Return: ru_majflt of RUSAGE_SELF, summed over all threads.
 */
long ra_majflt(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return -1;
	return ru.ru_majflt;
}

/**
 * ra_limit() - major fault count at which a measured walk may stop
 * @bound: the test's bound in major faults
 *
 * Once a walk passes its bound the verdict is known; stopping there keeps
 * a broken kernel as fast to test as a healthy one. READAHEAD_FULL_RUN=1
 * disables the early stop, to measure a broken kernel's whole figure.
 *
 * Return: @bound, or LONG_MAX when READAHEAD_FULL_RUN=1.
 */
long ra_limit(long bound)
{
	const char *full = getenv(RA_ENV_FULL);

	return full && !strcmp(full, "1") ? LONG_MAX : bound;
}

/**
 * ra_uncache() - unmap part of a file mapping and drop it from the page cache
 * @addr: page-aligned start of the range, in a mapping of a file
 * @len: length of the range in bytes
 *
 * Zaps the range with MADV_DONTNEED, then drops the file pages it mapped
 * with POSIX_FADV_DONTNEED, which leaves pages mapped elsewhere alone.
 * The file and offset come from /proc/self/maps, and the file is opened
 * anew: the caller's struct file, and the readahead state in it
 * (file->f_ra, mmap_miss), stay as they are. A test calls this only for
 * pages it has passed and will not touch again, so that its page cache
 * stays bounded whatever the size of the file: on a small machine, page
 * cache left behind forces direct reclaim, under which readahead's folio
 * allocations (__GFP_NORETRY) fail and reads are cut short, which shows
 * up as major faults no readahead bug caused.
 *
 * Return: 0 on success, -1 on error (errno set).
 */
int ra_uncache(const void *addr, size_t len)
{
	unsigned long lo = (unsigned long)addr, hi = lo + len;
	char line[3 * RA_PATH_LEN];
	int ret = 0, err;
	FILE *maps;

	if (madvise((void *)addr, len, MADV_DONTNEED))
		return -1;
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return -1;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, end, off, ino, from, to;
		struct stat st;
		int fd, pos = 0;
		char *path;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %lu %n", &start, &end,
			   &off, &ino, &pos) != 4 || !pos || line[pos] != '/')
			continue;	/* anonymous or special */
		if (end <= lo || start >= hi)
			continue;
		path = line + pos;
		path[strcspn(path, "\n")] = '\0';
		from = start > lo ? start : lo;
		to = end < hi ? end : hi;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = -1;
			continue;
		}
		err = fstat(fd, &st) ? errno : st.st_ino == ino ? 0 : ESTALE;
		if (!err)
			err = posix_fadvise(fd, off + (from - start), to - from,
					    POSIX_FADV_DONTNEED);
		close(fd);
		if (err) {
			errno = err;
			ret = -1;
		}
	}
	fclose(maps);
	return ret;
}

/**
 * ra_walk_bytes() - most page cache a walk of a file mapping keeps
 * @ra_kb: read_ahead_kb of the walk, in KiB
 *
 * ra_walk_pages() keeps at most the 32 MiB it passed last (it drops what
 * lies further behind), and readahead keeps at most two windows ahead of
 * it: the one being read and the async one started at its PG_readahead
 * marker.
 *
 * Return: that amount in bytes; a test adds what else it keeps cached or
 * allocates, and asks for the sum with ra_need_memory().
 */
size_t ra_walk_bytes(unsigned long ra_kb)
{
	return 2 * RA_WALK_ZAP + 2 * ra_kb * 1024;
}

/**
 * ra_walk_pages() - read one byte of each page, counting major faults
 * @addr: page-aligned start of a mapping
 * @npages: number of pages to touch
 * @backwards: walk from the last page to the first
 * @limit: stop once more than this many major faults were taken
 * @walk: result: faults taken, pages touched, whether it stopped early
 *
 * The counter is read every 16 pages, so an early stop happens at most 16
 * pages after the limit is passed. Every 16 MiB, the 16 MiB that lie 16
 * to 32 MiB behind the walk are unmapped and dropped from the page cache
 * (ra_uncache()), so that neither the RSS nor the page cache of a walk
 * grows with its length (ra_walk_bytes()). Readahead and fault-around
 * only ever look at and read pages ahead of the walk, within a window of
 * at most read_ahead_kb: what is dropped lies behind it and is never
 * touched again.
 */
void ra_walk_pages(const char *addr, size_t npages, bool backwards,
		   long limit, struct ra_walk *walk)
{
	size_t ps = psize(), zap = RA_WALK_ZAP / ps, i;
	long start = ra_majflt();

	walk->stopped = false;
	for (i = 0; i < npages; i++) {
		size_t page = backwards ? npages - 1 - i : i;

		FORCE_READ(addr[page * ps]);
		if ((i + 1) % zap == 0 && i + 1 >= 2 * zap) {
			size_t first = backwards ? npages - (i + 1 - zap) :
					i + 1 - 2 * zap;

			ra_uncache(addr + first * ps, zap * ps);
		}
		if ((i + 1) % RA_WALK_CHECK == 0 &&
		    ra_majflt() - start > limit) {
			walk->stopped = true;
			i++;
			break;
		}
	}
	walk->touched = i;
	walk->majflt = ra_majflt() - start;
}

/**
 * ra_rand() - next value of the suite's pseudo-random sequence
 * @seed: state of the sequence, updated
 *
 * A fixed linear congruential sequence: every run on every kernel draws
 * the same values, so that random access patterns are the same pages in
 * the same order everywhere.
 *
 * Return: a value in 0 .. 2^24 - 1.
 */
unsigned int ra_rand(unsigned int *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 8;
}

/**
 * ra_shuffle() - a fixed pseudo-random order of 0 .. @n - 1
 * @order: receives the @n indices
 * @n: number of indices
 * @seed: seed of the sequence (ra_rand()); the same seed gives the same
 *	order
 */
void ra_shuffle(unsigned int *order, unsigned int n, unsigned int seed)
{
	unsigned int i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n; i > 1; i--) {
		j = ra_rand(&seed) % i;
		t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
}

/**
 * ra_slot_spot() - a random folio in the middle half of a slot of a file
 * @base: file offset of the slot in bytes
 * @len: length of the slot in bytes, at least two folios
 * @folio: folio size in bytes (ra_folio_size())
 * @seed: state of the ra_rand() sequence, updated
 *
 * A test that counts what one fault reads gives each fault a slot of two
 * read-around windows or more: a read-around centred on a spot in the
 * middle half stays within the slot, and is counted and dropped with it.
 *
 * Return: a file offset in bytes, @base + @len / 4 plus a whole number of
 * folios, below @base + @len / 4 + @len / 2.
 */
size_t ra_slot_spot(size_t base, size_t len, size_t folio,
		    unsigned int *seed)
{
	return base + len / 4 + ra_rand(seed) % (len / 2 / folio) * folio;
}

/**
 * ra_random_phase() - fault single pages far apart, in a fixed random order
 * @map: mapping of the file
 * @nr: number of faults
 * @spacing: bytes between two faulted pages, so that no fault lands in
 *	another's read-around window
 *
 * Touches page 0, @spacing, 2 * @spacing, ... of @map in the order
 * ra_shuffle() gives for seed 12345. Each touch is a page cache miss that
 * do_sync_mmap_readahead() counts in file->f_ra.mmap_miss, so that with
 * @nr above MMAP_LOTSAMISS the counter passes the limit. Prints the major
 * faults taken.
 *
 * Return: the major faults taken, or -1 when @nr is above
 * RA_RANDOM_MAX.
 */
long ra_random_phase(const char *map, unsigned int nr, size_t spacing)
{
	unsigned int order[RA_RANDOM_MAX], i;
	long start, majflt;

	if (nr > RA_RANDOM_MAX)
		return -1;
	ra_shuffle(order, nr, 12345);
	start = ra_majflt();
	for (i = 0; i < nr; i++)
		FORCE_READ(map[order[i] * spacing]);
	majflt = ra_majflt() - start;
	ksft_print_msg("random phase: %ld major faults for %u faults %zu bytes apart\n",
		       majflt, nr, spacing);
	return majflt;
}

/**
 * ra_map_pmd_aligned() - map a file range at a PMD-aligned address
 * @fd: the file
 * @off: file offset of the range in bytes, a multiple of @pmd
 * @len: length of the range in bytes
 * @pmd: PMD size in bytes (read_pmd_pagesize())
 *
 * A PMD-sized folio can be mapped by one PMD only where the virtual and
 * the file address agree modulo the PMD size: a read-only MAP_SHARED
 * mapping of [@off, @off + @len) at such an address.
 *
 * Return: the mapping, or MAP_FAILED (errno set).
 */
char *ra_map_pmd_aligned(int fd, size_t off, size_t len, unsigned long pmd)
{
	char *map, *aligned;

	map = mmap(NULL, len + pmd, PROT_READ, MAP_SHARED, fd, off);
	if (map == MAP_FAILED)
		return map;
	munmap(map, len + pmd);
	aligned = (char *)(((unsigned long)map + pmd - 1) & ~(pmd - 1));
	return mmap(aligned, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, off);
}

/**
 * ra_isqrt() - integer square root
 * @n: the number
 *
 * Bounds that must lie as far from a healthy figure as from a broken one
 * are their geometric mean, sqrt(healthy * broken).
 *
 * Return: the largest r with r * r <= @n.
 */
unsigned long ra_isqrt(unsigned long n)
{
	unsigned long r = 0;

	while ((r + 1) * (r + 1) <= n)
		r++;
	return r;
}

/* cachestat() has one number on every architecture (since 6.5). */
#ifndef __NR_cachestat
#define __NR_cachestat		451
#endif

/**
 * ra_cachestat() - folios of a file range in the page cache, by cachestat()
 * @fd: the file
 * @off: file offset of the range in bytes
 * @len: length of the range in bytes
 *
 * Counts what the page cache holds, including folios still locked under
 * their first read, which mincore() reports only once they are uptodate.
 *
 * Return: the number of pages, or -1 when the kernel has no cachestat()
 * (before 6.5: ENOSYS) or it fails (errno set).
 */
long ra_cachestat(int fd, size_t off, size_t len)
{
	struct cachestat_range range = { off, len };
	struct cachestat cs;

	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return -1;
	return cs.nr_cache;
}

/**
 * ra_cached_pages() - pages of a file range in the page cache
 * @fd: the file
 * @map: a mapping of the whole file, from offset 0
 * @off: file offset of the range in bytes
 * @len: length of the range in bytes
 *
 * Uses ra_cachestat(), else mincore() over the same range of @map, which
 * reports page cache residency whether or not a page is mapped. Either
 * way the count is of the file's page cache, not of the caller's page
 * tables: what a fault's readahead brought in.
 *
 * Return: the number of pages, or -1 on error (errno set).
 */
long ra_cached_pages(int fd, const char *map, size_t off, size_t len)
{
	long n = ra_cachestat(fd, off, len);

	return n >= 0 ? n : ra_resident_pages(map + off, len);
}

/**
 * ra_drop_range() - unmap a file range and drop it from the page cache
 * @fd: the file
 * @map: a mapping of the whole file, from offset 0
 * @off: file offset of the range in bytes, page-aligned
 * @len: length of the range in bytes
 *
 * MADV_DONTNEED, then POSIX_FADV_DONTNEED: the range is cold again for
 * the next fault, and the struct file's readahead state (mmap_miss) is
 * left as it is. Errors are ignored: a range left cached shows up in the
 * next ra_cached_pages() count.
 */
void ra_drop_range(int fd, char *map, size_t off, size_t len)
{
	madvise(map + off, len, MADV_DONTNEED);
	posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
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
		return fs_skip(fs, "%s", "no cgroup v2 hierarchy mounted");
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
		return fs_fail(fs, "reading /proc/self/cgroup");
	rel = NULL;
	while (fgets(self, sizeof(self), f))
		if (!strncmp(self, "0::", 3)) {
			rel = self + 3;
			rel[strcspn(rel, "\n")] = '\0';
			break;
		}
	fclose(f);
	if (!rel)
		return fs_skip(fs, "%s", "this process is in no cgroup v2");
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
	watcher = on_exit_of_caller(cg->path, -1);
	if (cg_create(cg->path)) {
		int err = errno;

		cg->path[0] = '\0';
		if (err == EACCES || err == EPERM || err == EROFS)
			return fs_skip(fs, "%s", "cgroup v2 root not writable");
		errno = err;
		return fs_fail(fs, "creating a cgroup");
	}
	if (watcher > 0)
		cg_enter(root, watcher);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
		return fs_fail(fs, "following the parent's death");
	if (cg_enter_current(cg->path))
		return fs_fail(fs, "entering the test cgroup");
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
			return fs_skip(fs, "no block device known for %s", fs->dir);
		snprintf(path, sizeof(path), "%.*sdev",
			 (int)(n - strlen(tail)), fs->sysfs_ra);
		f = fopen(path, "re");
		if (!f || !fgets(cg->dev, sizeof(cg->dev), f)) {
			if (f)
				fclose(f);
			return fs_skip(fs, "cannot read %s", path);
		}
		fclose(f);
		cg->dev[strcspn(cg->dev, "\n")] = '\0';
	}
	snprintf(path, sizeof(path), "%s/io.max", cg->path);
	if (access(path, W_OK))
		return fs_skip(fs, "%s", "kernel without blk-throttle: no io.max");
	if (iops)
		snprintf(buf, sizeof(buf), "%s riops=%u", cg->dev, iops);
	else
		snprintf(buf, sizeof(buf), "%s riops=max", cg->dev);
	if (cg_write(cg->path, "io.max", buf))
		return fs_fail(fs, "writing io.max");
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
