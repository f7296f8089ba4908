// SPDX-License-Identifier: GPL-2.0
/*
 * Filesystems for mmap readahead selftests, on loop devices in a private mount
 * namespace: they go when the binary's last process exits, even by SIGKILL.
 * main() calls ra_fs_init() before test_harness_run(); a fixture's setup calls
 * ra_fs_setup() and ra_file_prepare() to make its file, teardown ra_teardown().
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glob.h>
#include <sched.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "vm_util.h"
#include "ra_fs.h"
#include "ra_cache.h"

#define RA_XFS(bs)	{ .type = "xfs", .block_size = bs, .mkfs = "-q -f -K -b size=%lu" }

/* ext4: no lazy inode table init writing behind the test's back */
const struct ra_fs_kind ra_ext4_4k = { .type = "ext4", .block_size = 4096, .mount = "noinit_itable",
	.mkfs = "-q -F -b %lu -E nodiscard,lazy_itable_init=1,lazy_journal_init=1" };
const struct ra_fs_kind ra_xfs_4k = RA_XFS(4096);
const struct ra_fs_kind ra_xfs_16k = RA_XFS(16384);
const struct ra_fs_kind ra_xfs_32k = RA_XFS(32768);
const struct ra_fs_kind ra_xfs_64k = RA_XFS(65536);
const struct ra_fs_kind ra_btrfs_4k = { .type = "btrfs", .block_size = 4096,
	.mkfs = "-q -f -K -s %lu" };
const struct ra_fs_kind ra_f2fs_4k = { .type = "f2fs", .block_size = 4096, .mkfs = "-q -f -t0",
	.page_blocks = true };

#define RA_IMAGE_SIZE		(2ULL << 30)	/* sparse; test files are holes */
#define RA_SCRATCH		"/tmp"
#define RA_MKFS	"PATH=/usr/sbin:/sbin:$PATH mkfs.%s %s %s 2>&1 >/dev/null%s"
#define RA_PUNCH	" && { fallocate -d %s 2>/dev/null || :; }"
#define RA_XFS_LOG	(64UL << 20)	/* zeros mkfs.xfs writes */
#define RA_FMT_FILE \
	"%s on %s, %lu-byte blocks, read_ahead_kb %lu (ra_pages %lu), folio %lu bytes, file %zu MiB\n"

static struct ra_made {		/* a kind as ra_fs_init() made it */
	const struct ra_fs_kind *kind;
	int ret;			/* 0, or KSFT_SKIP or -1 with fs.why */
	struct ra_fs fs;
	FILE *mkfs;
} made[8];
static int nr_made;
pid_t ra_main_pid;

/* MemAvailable from /proc/meminfo in bytes, or 0 when it cannot be read. */
static size_t mem_available(void)
{
	char line[128];
	size_t kb = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	if (f && check_for_pattern(f, "MemAvailable:", line, sizeof(line)))
		sscanf(line, "MemAvailable: %zu kB", &kb);
	if (f)
		fclose(f);
	return kb << 10;
}

/**
 * ra_fs_skip() - set the reason a test skips
 * @fs: filesystem state; @fs->why gets the reason
 * @fmt: printf format of the reason, then its arguments
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
 * ra_fs_fail() - set the reason a setup step failed
 * @fs: filesystem state; @fs->why gets "<@what>: <strerror(errno)>"
 * @what: the step that failed
 * Return: -1.
 */
int ra_fs_fail(struct ra_fs *fs, const char *what)
{
	snprintf(fs->why, sizeof(fs->why), "%s: %s", what, strerror(errno));
	return -1;
}

/* A sparse image at @m->fs.dir.img, its mkfs started (no discard); or a skip */
static int fs_make(struct ra_made *m, bool punch)
{
	const struct ra_fs_kind *k = m->kind;
	char img[RA_PATH_LEN + 8], opts[96], cmd[4 * RA_PATH_LEN], dig[RA_PATH_LEN + 48] = "";
	int fd, ret;

	if (k->page_blocks && k->block_size != psize())
		return ra_fs_skip(&m->fs, "%s mounts %lu-byte blocks only on pages of that size",
				  k->type, k->block_size);
	snprintf(m->fs.dir, sizeof(m->fs.dir), RA_SCRATCH "/%s-%lu", k->type, k->block_size);
	snprintf(img, sizeof(img), "%s.img", m->fs.dir);
	if (mkdir(m->fs.dir, 0700))
		return -1;
	fd = open(img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ret = fd < 0 || ftruncate(fd, RA_IMAGE_SIZE);
	close(fd);	/* -1 when open() failed: EBADF */
	if (ret)
		return -1;
	snprintf(opts, sizeof(opts), k->mkfs, k->block_size);
	if (punch)
		snprintf(dig, sizeof(dig), RA_PUNCH, img);
	snprintf(cmd, sizeof(cmd), RA_MKFS, k->type, opts, img, dig);
	m->mkfs = popen(cmd, "re");
	return m->mkfs ? 0 : -1;
}

/* Reap @m's mkfs. Its failure is this machine's, not the kernel's: a skip. */
static int fs_mkfs_wait(struct ra_made *m)
{
	char line[160], err[160] = "";	/* last "error" line, else first */
	int ret;

	while (fgets(line, sizeof(line), m->mkfs))
		if (!err[0] || strcasestr(line, "error"))
			snprintf(err, sizeof(err), "%.*s", (int)strcspn(line, "\n"), line);
	ret = pclose(m->mkfs);
	ret = WIFEXITED(ret) ? WEXITSTATUS(ret) : 128;
	if (!ret)
		return 0;
	if (ret == 127)
		return ra_fs_skip(&m->fs, "mkfs.%s not found", m->kind->type);
	return ra_fs_skip(&m->fs, "mkfs.%s for %lu-byte blocks failed (exit %d): %s",
			  m->kind->type, m->kind->block_size, ret, err[0] ? err : "no message");
}

/* @img on a free loop device, self-detaching on last close: its fd, or -1 */
static int loop_attach(const char *img, char *bdev, size_t len)
{
	int img_fd = open(img, O_RDWR | O_CLOEXEC);
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	struct loop_config cfg = { .fd = img_fd, .info.lo_flags = LO_FLAGS_AUTOCLEAR };
	int nr, fd = -1, tries;
	char dev[32];

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
	close(ctl);	/* each -1 where its open() failed: EBADF */
	close(img_fd);
	return fd;
}

/* A filesystem on an anonymous device (btrfs) reads by a bdi of its own, in sysfs */
static int own_bdi_ra(struct ra_made *m)
{
	char pattern[2 * RA_PATH_LEN];
	glob_t g = { 0 };
	struct stat st;
	int ret;

	if (stat(m->fs.dir, &st) || major(st.st_dev))
		return 0;
	snprintf(pattern, sizeof(pattern), "/sys/fs/%s/*/devices/%s", m->kind->type, m->fs.bdev);
	ret = glob(pattern, 0, NULL, &g) || g.gl_pathc != 1 ?
		ra_fs_skip(&m->fs, "no bdi of %s's own: %zu matches of %s", m->kind->type,
			   g.gl_pathc, pattern) : 0;
	if (!ret)
		snprintf(m->fs.sysfs_ra, sizeof(m->fs.sysfs_ra), "%.*s/bdi/read_ahead_kb",
			 (int)(strstr(g.gl_pathv[0], "/devices/") - g.gl_pathv[0]), g.gl_pathv[0]);
	globfree(&g);
	return ret;
}

/* After its mkfs, mount @m's image and note its read_ahead_kb. */
static int fs_mount(struct ra_made *m)
{
	char dev[48], img[RA_PATH_LEN + 8];
	int fd, err = fs_mkfs_wait(m);

	snprintf(img, sizeof(img), "%s.img", m->fs.dir);
	fd = err ? -1 : loop_attach(img, m->fs.bdev, sizeof(m->fs.bdev));
	if (!err && fd < 0)
		err = ra_fs_skip(&m->fs, "no loop device: %s", strerror(errno));
	unlink(img);
	if (err)
		return err;
	snprintf(dev, sizeof(dev), "/dev/%s", m->fs.bdev);
	err = mount(dev, m->fs.dir, m->kind->type, MS_NOATIME, m->kind->mount) ? errno : 0;
	close(fd);	/* the mount holds the loop device now */
	if (err) {
		ra_fs_skip(&m->fs, "cannot mount %s with %lu-byte blocks on %u-byte pages: %s",
			   m->kind->type, m->kind->block_size, psize(), strerror(err));
		/* Blocks not of a page, no support or privilege: skip; else fail */
		return m->kind->block_size != psize() || err == ENODEV || err == EINVAL ||
			err == EOPNOTSUPP || err == EPERM ? KSFT_SKIP : -1;
	}
	snprintf(m->fs.sysfs_ra, sizeof(m->fs.sysfs_ra), "/sys/block/%s/queue/read_ahead_kb",
		 m->fs.bdev);
	err = own_bdi_ra(m);
	if (!err && read_sysfs(m->fs.sysfs_ra, &m->fs.saved_ra_kb))
		err = ra_fs_skip(&m->fs, "no read_ahead_kb for %s", m->fs.bdev);
	if (err)
		umount2(m->fs.dir, MNT_DETACH);
	return err;
}

/* At exit, put back the read_ahead_kb of tests killed before their teardown. */
static void put_back_ra(void)
{
	int i;

	for (i = 0; getpid() == ra_main_pid && i < nr_made; i++)
		if (!made[i].ret && made[i].fs.saved_ra_kb)
			write_sysfs(made[i].fs.sysfs_ra, made[i].fs.saved_ra_kb);
}

/* Enter a private mount namespace with a tmpfs on /tmp, or say why not. */
static const char *no_fs(int argc, char **argv)
{
	char opts[64];

	while (--argc > 0)	/* -l, -h: the harness lists or helps */
		if (!strcmp(argv[argc], "-l") || !strcmp(argv[argc], "-h"))
			return "no test runs";
	if (unshare(CLONE_NEWNS))
		return errno == EPERM ? "needs CAP_SYS_ADMIN to create a loop filesystem" :
			"unshare(CLONE_NEWNS) failed";
	/* In a chroot whose root is no mount point, mounts would leak. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return "mounts cannot be made private (a chroot?)";
	if (!mem_available())
		return "no MemAvailable in /proc/meminfo";
	/* Images hold metadata and XFS logs: at most half of MemAvailable. */
	snprintf(opts, sizeof(opts), "mode=0700,size=%zuk", mem_available() / 2 >> 10);
	if (mount("ra-scratch", RA_SCRATCH, "tmpfs", 0, opts))
		return "cannot mount a tmpfs on " RA_SCRATCH;
	return NULL;
}

/**
 * ra_fs_init() - make the filesystems of a binary's tests, from main()
 * @argc: main()'s argc
 * @argv: main()'s argv; with -l or -h the harness runs no test: none is made
 * @kinds: the kinds its tests use, NULL-terminated; tests of one not made skip
 */
void ra_fs_init(int argc, char **argv, const struct ra_fs_kind *const kinds[])
{
	const char *why = no_fs(argc, argv);
	struct ra_made *m;
	size_t logs = 0;
	bool serial;
	int i;

	/*
	 * Every mkfs at once, then each mount; where the XFS logs would hold a
	 * quarter of MemAvailable, one image at a time, its zeros punched out
	 * by util-linux's fallocate -d (slower: it reads the whole image).
	 */
	for (i = 0; kinds[i]; i++)
		logs += strcmp(kinds[i]->type, "xfs") ? 0 : RA_XFS_LOG;
	serial = logs > mem_available() / 4;
	ra_main_pid = getpid();
	for (; *kinds && nr_made < (int)ARRAY_SIZE(made); kinds++) {	/* more: not given */
		m = &made[nr_made++];
		m->kind = *kinds;
		m->ret = why ? ra_fs_skip(&m->fs, "%s", why) : fs_make(m, serial);
		if (m->ret < 0)
			ra_fs_fail(&m->fs, "making a filesystem in " RA_SCRATCH);
		else if (!m->ret && serial)
			m->ret = fs_mount(m);
	}
	for (m = made; m < made + nr_made && !serial; m++)
		if (!m->ret)
			m->ret = fs_mount(m);
	atexit(put_back_ra);
}

/**
 * ra_fs_setup() - the filesystem of @kind a test runs on
 * @fs: state to fill in
 * @kind: filesystem type and block size, one ra_fs_init() was given
 * Return: 0; KSFT_SKIP or -1 with @fs->why, as ra_fs_init() found it.
 */
int ra_fs_setup(struct ra_fs *fs, const struct ra_fs_kind *kind)
{
	int i = 0;

	while (i < nr_made && made[i].kind != kind)
		i++;
	*fs = i < nr_made ? made[i].fs : (struct ra_fs){ 0 };
	fs->page_size = psize();
	snprintf(fs->type, sizeof(fs->type), "%s", kind->type);
	fs->block_size = kind->block_size;
	if (i < nr_made)
		return made[i].ret;
	snprintf(fs->why, sizeof(fs->why), "%s with %lu-byte blocks was not given to ra_fs_init()",
		 kind->type, kind->block_size);
	return -1;
}

/**
 * ra_set_read_ahead_kb() - set read_ahead_kb of the test's disk (or its bdi)
 * @fs: filesystem of the test
 * @kb: read_ahead_kb in KiB; files opened afterwards get it as ra_pages
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
 * ra_need_memory() - skip lest reclaim fail readahead's __GFP_NORETRY allocs
 * @fs: filesystem of the test; @fs->why gets the reason to skip
 * @bytes: most memory the test holds at once, in bytes
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
 * @fd: receives a read-only fd with a fresh file->f_ra (mmap_miss 0)
 * Return: 0, or KSFT_SKIP or -1 with @fs->why set.
 */
int ra_file_prepare(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd)
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
	ret = ret ?: ra_set_read_ahead_kb(fs, ra_kb);
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
 * ra_file_map() - ra_file_prepare(), then map the whole file
 * @fs: filesystem to create it on
 * @size: file size in bytes
 * @ra_kb: read_ahead_kb to set before opening, in KiB
 * @fd: receives the open file descriptor
 * @map: receives a read-only MAP_SHARED mapping of the file
 * Return: 0, or KSFT_SKIP or -1 with @fs->why set.
 */
int ra_file_map(struct ra_fs *fs, size_t size, unsigned long ra_kb, int *fd, char **map)
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
 * ra_teardown() - unmap, close, reset read_ahead_kb, remove the file; once each
 * @fs: filesystem of the fixture
 * @map: mapping of the test file, or NULL or MAP_FAILED
 * @size: length of @map in bytes
 * @fd: descriptor of the test file, or -1
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
