// SPDX-License-Identifier: GPL-2.0
/*
 * The filesystems an mmap readahead selftest runs on, and its test file.
 *
 * main() calls ra_fs_init() before test_harness_run(): in a private mount
 * namespace it mounts a tmpfs over /tmp and, for each kind of filesystem
 * the binary's tests use, makes a sparse image there, formats it and
 * mounts it from a loop device with LO_FLAGS_AUTOCLEAR. The forked tests
 * inherit the mounts and the table of what was made. Each test sets
 * read_ahead_kb, makes its file and drops it from the page cache; its
 * teardown removes the file and puts read_ahead_kb back (what a test
 * killed by a harness timeout left, the main process puts back at exit).
 * When the binary's last process exits, even by SIGKILL, the mounts go
 * with the namespace and the loop devices detach; after a SIGKILL a free
 * loop device may keep the read_ahead_kb a test set.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest.h"
#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

const struct ra_fs_kind ra_ext4_4k = { .type = "ext4", .block_size = 4096 };
const struct ra_fs_kind ra_xfs_4k = { .type = "xfs", .block_size = 4096 };
const struct ra_fs_kind ra_xfs_16k = { .type = "xfs", .block_size = 16384 };
const struct ra_fs_kind ra_xfs_32k = { .type = "xfs", .block_size = 32768 };
const struct ra_fs_kind ra_xfs_64k = { .type = "xfs", .block_size = 65536 };
/* btrfs: BTRFS_MAX_BLOCKS_PER_FOLIO; f2fs: large folios if immutable */
const struct ra_fs_kind ra_btrfs_4k = { "btrfs", 4096, 8 * sizeof(long) };
const struct ra_fs_kind ra_f2fs_4k = { "f2fs", 4096, 1 };

#define RA_IMAGE_SIZE		(2ULL << 30)	/* sparse; test files are holes */
#define RA_SCRATCH		"/tmp"
#define RA_KINDS_MAX		8
#define RA_MKFS	"PATH=/usr/sbin:/sbin:$PATH mkfs.%s %s %s 2>&1 >/dev/null"
#define RA_FMT_FILE \
	"%s on %s, %lu-byte blocks, read_ahead_kb %lu (ra_pages %lu), folio %lu bytes, file %zu MiB\n"

/*
 * What ra_fs_init() made of a kind, in the main process; the forked tests
 * get a copy. @ret and @why: 0, or KSFT_SKIP or -1 and the reason each
 * test of the kind gives; @ra_kb: read_ahead_kb as attached.
 */
static struct ra_made {
	const struct ra_fs_kind *kind;
	int ret;
	char why[4 * RA_PATH_LEN];
	char dir[RA_PATH_LEN];
	char bdev[32];
	char sysfs_ra[2 * RA_PATH_LEN];
	unsigned long ra_kb;
} made[RA_KINDS_MAX];
static int nr_made;
static pid_t main_pid;

/* MemAvailable from /proc/meminfo in bytes, or 0 when it cannot be read. */
static size_t mem_available(void)
{
	char line[128];
	size_t kb = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb << 10;
}

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

/*
 * mkfs.@type with @bsize-byte blocks on the image @img, without discard
 * (the image is sparse). Its output is hidden; of its stderr the last
 * line saying "error", else the first, goes into @why. A mkfs that fails
 * is this machine's tool, not the kernel.
 * Return: 0, or KSFT_SKIP with @why.
 */
static int fs_mkfs(const char *type, unsigned long bsize, const char *img,
		   char *why, size_t len)
{
	char opts[96], cmd[3 * RA_PATH_LEN], line[160], err[160] = "";
	int ret;
	FILE *p;

	if (!strcmp(type, "xfs"))
		snprintf(opts, sizeof(opts), "-q -f -K -b size=%lu", bsize);
	else if (!strcmp(type, "ext4"))
		snprintf(opts, sizeof(opts), "-q -F -b %lu -E %s", bsize,
			 "nodiscard,lazy_itable_init=1,lazy_journal_init=1");
	else if (!strcmp(type, "btrfs"))
		snprintf(opts, sizeof(opts), "-q -f -K -s %lu", bsize);
	else	/* f2fs: 4 KiB blocks */
		snprintf(opts, sizeof(opts), "-q -f -t0");
	snprintf(cmd, sizeof(cmd), RA_MKFS, type, opts, img);
	p = popen(cmd, "re");
	while (p && fgets(line, sizeof(line), p))
		if (!err[0] || strcasestr(line, "error"))
			snprintf(err, sizeof(err), "%.*s",
				 (int)strcspn(line, "\n"), line);
	ret = p ? pclose(p) : -1;
	ret = WIFEXITED(ret) ? WEXITSTATUS(ret) : 128;
	if (ret == 127)
		snprintf(why, len, "mkfs.%s not found", type);
	else if (ret)
		snprintf(why, len, "mkfs.%s for %lu-byte blocks failed (exit %d): %s",
			 type, bsize, ret, err[0] ? err : "no message");
	return ret ? KSFT_SKIP : 0;
}

/*
 * Attach @img to a free loop device that detaches itself on its last
 * release; its name goes to @bdev. Return: an open fd of it, or -1.
 */
static int loop_attach(const char *img, char *bdev, size_t len)
{
	struct loop_config cfg = { .info.lo_flags = LO_FLAGS_AUTOCLEAR };
	int img_fd, ctl, nr, fd = -1, tries;
	char dev[32];

	img_fd = open(img, O_RDWR | O_CLOEXEC);
	cfg.fd = img_fd;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	for (tries = 0; img_fd >= 0 && ctl >= 0 && tries < 16; tries++) {
		nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		snprintf(dev, sizeof(dev), "/dev/loop%d", nr);
		fd = nr < 0 ? -1 : open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0 || !ioctl(fd, LOOP_CONFIGURE, &cfg))
			break;
		close(fd);
		fd = -1;
		if (errno != EBUSY)	/* EBUSY: another process took it */
			break;
	}
	if (fd >= 0)
		snprintf(bdev, len, "loop%d", nr);
	if (ctl >= 0)
		close(ctl);
	if (img_fd >= 0)
		close(img_fd);
	return fd;
}

/*
 * The read_ahead_kb that governs the files of the filesystem on
 * @m->bdev: its loop device's, but for btrfs, which reads through a bdi
 * of its own (/sys/fs/btrfs/<fsid>/bdi, found by its device).
 */
static void find_sysfs_ra(struct ra_made *m, const char *type)
{
	char path[2 * RA_PATH_LEN];
	struct dirent *d;
	DIR *dp = strcmp(type, "btrfs") ? NULL : opendir("/sys/fs/btrfs");

	snprintf(m->sysfs_ra, sizeof(m->sysfs_ra),
		 "/sys/block/%s/queue/read_ahead_kb", m->bdev);
	while (dp && (d = readdir(dp))) {
		snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/devices/%s",
			 d->d_name, m->bdev);
		if (d->d_name[0] != '.' && !access(path, F_OK))
			snprintf(m->sysfs_ra, sizeof(m->sysfs_ra),
				 "/sys/fs/btrfs/%s/bdi/read_ahead_kb", d->d_name);
	}
	if (dp)
		closedir(dp);
}

/*
 * Attach @img, mount it at @m->dir and note its read_ahead_kb; the mount
 * then holds the loop device.
 * Return: 0, KSFT_SKIP or -1, with @m->why.
 */
static int fs_mount(struct ra_made *m, const struct ra_fs_kind *kind,
		    const char *img)
{
	char dev[48];
	int fd, err;

	fd = loop_attach(img, m->bdev, sizeof(m->bdev));
	err = errno;
	unlink(img);
	if (fd < 0) {
		snprintf(m->why, sizeof(m->why), "no loop device: %s", strerror(err));
		return KSFT_SKIP;
	}
	snprintf(dev, sizeof(dev), "/dev/%s", m->bdev);
	/* ext4: no lazy inode table init writing behind the test's back */
	err = mount(dev, m->dir, kind->type, MS_NOATIME,
		    strcmp(kind->type, "ext4") ? NULL : "noinit_itable") ? errno : 0;
	close(fd);
	if (err) {
		snprintf(m->why, sizeof(m->why),
			 "cannot mount %s with %lu-byte blocks on %u-byte pages: %s",
			 kind->type, kind->block_size, psize(), strerror(err));
		/*
		 * No such filesystem or block size, features of a newer mkfs,
		 * no CAP_SYS_ADMIN in the initial user namespace: a skip; an
		 * I/O or corruption error on a fresh image: a failure.
		 */
		return kind->block_size != psize() || err == ENODEV ||
			err == EINVAL || err == EOPNOTSUPP || err == EPERM ?
			KSFT_SKIP : -1;
	}
	find_sysfs_ra(m, kind->type);
	if (read_sysfs(m->sysfs_ra, &m->ra_kb)) {
		umount2(m->dir, MNT_DETACH);
		snprintf(m->why, sizeof(m->why), "no read_ahead_kb for %s", m->bdev);
		return KSFT_SKIP;
	}
	return 0;
}

/*
 * Punch out the runs of zeros mkfs wrote (the XFS log: 64 MiB), so that
 * the images of all kinds fit on the tmpfs at once on a small machine.
 */
static void punch_zeros(int fd)
{
	static char buf[1 << 20];
	off_t off = 0, run = -1, data;
	ssize_t n;
	bool zero;

	do {
		data = lseek(fd, off, SEEK_DATA);
		n = data < 0 ? 0 : pread(fd, buf, sizeof(buf), data);
		zero = n > 0 && !buf[0] && !memcmp(buf, buf + 1, n - 1);
		/* a run of zero chunks ends at data, a hole or EOF */
		if (run >= 0 && (n <= 0 || data != off || !zero)) {
			fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  run, off - run);
			run = -1;
		}
		if (run < 0 && zero)
			run = data;
		off = data + n;
	} while (n > 0);
}

/* Make a filesystem of @kind at /tmp/<type>-<block size>. */
static int fs_make(struct ra_made *m, const struct ra_fs_kind *kind)
{
	char img[RA_PATH_LEN + 8];
	int fd, ret;

	snprintf(m->dir, sizeof(m->dir), RA_SCRATCH "/%s-%lu", kind->type,
		 kind->block_size);
	snprintf(img, sizeof(img), "%s.img", m->dir);
	if (mkdir(m->dir, 0700))
		return -1;
	fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ret = ftruncate(fd, RA_IMAGE_SIZE) ? -1 :
		fs_mkfs(kind->type, kind->block_size, img, m->why, sizeof(m->why));
	if (!ret)
		punch_zeros(fd);
	close(fd);
	if (!ret)
		return fs_mount(m, kind, img);
	unlink(img);
	return ret;
}

/* Put back the read_ahead_kb a test killed before its teardown left. */
static void put_back_ra(void)
{
	int i;

	for (i = 0; getpid() == main_pid && i < nr_made; i++)
		if (!made[i].ret && made[i].ra_kb)
			write_sysfs(made[i].sysfs_ra, made[i].ra_kb);
}

/*
 * Why no filesystem can be made here, or NULL: a normal user's
 * unshare() fails with EPERM.
 */
static const char *no_fs(void)
{
	char opts[64];

	if (unshare(CLONE_NEWNS))
		return errno == EPERM ? "needs CAP_SYS_ADMIN to create a loop filesystem" :
			"unshare(CLONE_NEWNS) failed";
	/* In a chroot whose root is no mount point, mounts would leak. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return "mounts cannot be made private (a chroot?)";
	if (!mem_available())
		return "no MemAvailable in /proc/meminfo";
	/* Images hold metadata only: at most half of MemAvailable. */
	snprintf(opts, sizeof(opts), "mode=0700,size=%zuk",
		 mem_available() / 2 >> 10);
	if (mount("ra-scratch", RA_SCRATCH, "tmpfs", 0, opts))
		return "cannot mount a tmpfs on " RA_SCRATCH;
	return NULL;
}

/**
 * ra_fs_init() - make the filesystems a binary's tests run on
 * @kinds: the kinds its tests use, NULL-terminated
 *
 * Called by main() before test_harness_run() (see the top of this file).
 * A kind that cannot be made (no CAP_SYS_ADMIN, no kernel support, no
 * mkfs) is remembered with its reason, and each of its tests skips.
 */
void ra_fs_init(const struct ra_fs_kind *const kinds[])
{
	const char *why = no_fs();
	struct ra_made *m;

	main_pid = getpid();
	for (; *kinds; kinds++) {
		if (nr_made == RA_KINDS_MAX)
			ksft_exit_fail_msg("more than %d kinds of filesystem\n",
					   RA_KINDS_MAX);
		m = &made[nr_made++];
		m->kind = *kinds;
		errno = 0;
		m->ret = why ? KSFT_SKIP : fs_make(m, *kinds);
		if (why)
			snprintf(m->why, sizeof(m->why), "%s", why);
		else if (m->ret == -1 && !m->why[0])
			snprintf(m->why, sizeof(m->why), "making a filesystem in %s: %s",
				 RA_SCRATCH, strerror(errno));
	}
	atexit(put_back_ra);
}

/**
 * ra_fs_setup() - the filesystem of @kind a test runs on
 * @fs: state to fill in; @fs->why holds the reason on skip or failure
 * @kind: filesystem type and block size, one ra_fs_init() was given
 *
 * Return: 0; KSFT_SKIP or -1 with @fs->why, as ra_fs_init() found it.
 */
int ra_fs_setup(struct ra_fs *fs, const struct ra_fs_kind *kind)
{
	int i;

	memset(fs, 0, sizeof(*fs));
	fs->page_size = psize();
	snprintf(fs->type, sizeof(fs->type), "%s", kind->type);
	fs->block_size = kind->block_size;
	fs->max_folio = kind->max_folio_blocks * kind->block_size;
	for (i = 0; i < nr_made && made[i].kind != kind; i++)
		;
	if (i == nr_made) {
		snprintf(fs->why, sizeof(fs->why),
			 "%s with %lu-byte blocks was not given to ra_fs_init()",
			 kind->type, kind->block_size);
		return -1;
	}
	snprintf(fs->why, sizeof(fs->why), "%s", made[i].why);
	snprintf(fs->dir, sizeof(fs->dir), "%s", made[i].dir);
	snprintf(fs->bdev, sizeof(fs->bdev), "%s", made[i].bdev);
	snprintf(fs->sysfs_ra, sizeof(fs->sysfs_ra), "%s", made[i].sysfs_ra);
	fs->saved_ra_kb = made[i].ra_kb;
	return made[i].ret;
}

/**
 * ra_set_read_ahead_kb() - set the read_ahead_kb of the test's disk
 * @fs: filesystem whose disk (its bdi's, for btrfs) to set
 * @kb: read_ahead_kb in KiB; a file opened afterwards gets its ra_pages
 *
 * Return: 0; KSFT_SKIP with @fs->why set when it cannot be written.
 */
int ra_set_read_ahead_kb(struct ra_fs *fs, unsigned long kb)
{
	if (write_sysfs(fs->sysfs_ra, kb))
		return ra_fs_skip(fs, "cannot write %s", fs->sysfs_ra);
	fs->ra_kb = kb;
	return 0;
}

/**
 * ra_need_memory() - skip unless the machine has room for the test
 * @fs: filesystem of the test; @fs->why gets the reason to skip
 * @bytes: most memory the test holds at once, in bytes
 *
 * Below that much MemAvailable the test's own page cache forces direct
 * reclaim, under which readahead's __GFP_NORETRY folio allocations fail
 * and reads are cut short: major faults no readahead bug caused.
 *
 * Return: 0, or KSFT_SKIP with @fs->why set.
 */
int ra_need_memory(struct ra_fs *fs, size_t bytes)
{
	size_t avail = mem_available();

	ksft_print_msg("memory: this test needs %zu MiB, MemAvailable %zu MiB\n",
		       bytes >> 20, avail >> 20);
	if (avail < bytes)
		return ra_fs_skip(fs, "MemAvailable %zu MiB is below the %zu MiB this test needs",
				  avail >> 20, bytes >> 20);
	return 0;
}

/**
 * ra_file_prepare() - create the test file and open it cold
 * @fs: filesystem to create it on
 * @size: file size in bytes; the file is a hole (read with no bio)
 * @ra_kb: read_ahead_kb to set before opening, in KiB
 * @fd: receives the file descriptor, opened read-only with a fresh
 *	file->f_ra (mmap_miss 0, ra_pages of @ra_kb)
 *
 * Prints the filesystem, read_ahead_kb, ra_pages and folio size.
 *
 * Return: 0 on success, KSFT_SKIP or -1 with @fs->why set.
 */
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb,
		    int *fd)
{
	int ret;

	snprintf(fs->file, sizeof(fs->file), "%s/ra-test.XXXXXX", fs->dir);
	*fd = mkostemp(fs->file, O_CLOEXEC);
	if (*fd < 0) {
		fs->file[0] = '\0';
		return ra_fs_fail(fs, "creating the test file");
	}
	ret = ftruncate(*fd, size) ? ra_fs_fail(fs, "sizing the test file") : 0;
	close(*fd);
	*fd = -1;
	if (!ret)
		ret = ra_set_read_ahead_kb(fs, ra_kb);
	if (ret)
		return ret;
	*fd = open(fs->file, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return ra_fs_fail(fs, "opening the test file");
	ret = ra_drop_cache(fs, *fd, size);
	if (ret) {
		close(*fd);
		*fd = -1;
		return ret;
	}
	ksft_print_msg(RA_FMT_FILE, fs->type, fs->bdev, fs->block_size, ra_kb,
		       ra_pages(fs), ra_folio_size(fs), size >> 20);
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
 * Return: 0 on success, KSFT_SKIP or -1 with @fs->why set.
 */
int ra_file_map(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd,
		char **map)
{
	int ret = ra_file_prepare(fs, size, ra_kb, fd);

	if (ret)
		return ret;
	*map = mmap(NULL, size, PROT_READ, MAP_SHARED, *fd, 0);
	if (*map == MAP_FAILED)
		return ra_fs_fail(fs, "mapping the test file");
	return 0;
}

/**
 * ra_teardown() - undo what a fixture set up, each thing once
 * @fs: filesystem of the fixture
 * @map: mapping of the test file, or NULL or MAP_FAILED
 * @size: length of @map in bytes
 * @fd: descriptor of the test file, or -1
 *
 * Unmaps @map, closes @fd, puts the disk's read_ahead_kb back and
 * removes the test file.
 */
void ra_teardown(struct ra_fs *fs, char *map, size_t size, int fd)
{
	if (map && map != MAP_FAILED)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	if (fs->ra_kb && fs->saved_ra_kb)
		write_sysfs(fs->sysfs_ra, fs->saved_ra_kb);
	fs->ra_kb = 0;
	if (fs->file[0])
		unlink(fs->file);
	fs->file[0] = '\0';
}
