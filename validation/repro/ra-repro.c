// SPDX-License-Identifier: GPL-2.0
/*
 * ra-repro: small access-pattern programs that show mmap readahead
 * behaviour through the number of major faults (ru_majflt) they take.
 * They are used to validate the readahead_emulate= switches of the
 * validation kernel, one switch at a time.
 *
 * ra-repro mkfile FILE MIB
 * ra-repro sticky FILE [-r N] [-g GAP_KIB] [-s SEQ_MIB] [-x] [-m MAX]
 * ra-repro revwalk FILE (-H | -S) [-m MAX]
 * ra-repro frames FILE [-n FRAMES]
 * ra-repro split FILE [-v VMA_MIB]
 * ra-repro pieces FILE [-o OFFSET_MIB] [-p PIECE_MIB] [-n PIECES]
 *
 * Every command drops the file from the page cache first
 * (POSIX_FADV_DONTNEED, checked with mincore()) and prints one line of
 * "key=value" pairs. If RA_DEV names a block device (e.g. loop0), the
 * KiB read from it are printed as well. -m stops a per-page loop once
 * that many major faults were taken ("stopped=1"): the verdict is known
 * by then and each fault is slow under emulation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define KIB 1024UL
#define MIB (KIB * KIB)
#define PMD_BYTES (2 * MIB)

static long page_size;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ra-repro: ", stderr);
	vfprintf(stderr, fmt, ap);
	if (errno)
		fprintf(stderr, ": %s", strerror(errno));
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static long majflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}

/* KiB read from $RA_DEV so far, or -1 */
static long dev_read_kib(void)
{
	const char *dev = getenv("RA_DEV");
	unsigned long v[3];
	char path[128];
	FILE *f;
	int n;

	if (!dev || !*dev)
		return -1;
	snprintf(path, sizeof(path), "/sys/block/%s/stat", dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%lu %lu %lu", &v[0], &v[1], &v[2]);
	fclose(f);
	return n == 3 ? (long)(v[2] / 2) : -1;
}

/* Number of pages of [addr, addr + len) that are resident */
static unsigned long resident(void *addr, size_t len)
{
	size_t n = (len + page_size - 1) / page_size, i;
	unsigned char *vec = malloc(n);
	unsigned long cnt = 0;

	if (!vec || mincore(addr, len, vec))
		die("mincore");
	for (i = 0; i < n; i++)
		cnt += vec[i] & 1;
	free(vec);
	return cnt;
}

static int open_cold(const char *path, size_t *size)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		die("open %s", path);
	*size = st.st_size;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	p = mmap(NULL, *size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	if (resident(p, *size))
		die("%s: %lu pages still cached after POSIX_FADV_DONTNEED",
		    path, resident(p, *size));
	munmap(p, *size);
	return fd;
}

/* Read one byte; the empty asm keeps the compiler from dropping the load */
static void touch(const char *p)
{
	asm volatile("" : : "r" (*p));
}

static int cmd_mkfile(int argc, char **argv)
{
	size_t len, done;
	char *buf;
	int fd;

	if (argc != 4)
		die("usage: mkfile FILE MIB");
	len = strtoul(argv[3], NULL, 0) * MIB;
	buf = malloc(MIB);
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (!buf || fd < 0)
		die("mkfile %s", argv[2]);
	for (done = 0; done < len; done += MIB) {
		memset(buf, (int)(done / MIB) | 1, MIB);
		if (write(fd, buf, MIB) != (ssize_t)MIB)
			die("write");
	}
	if (fsync(fd) || close(fd))
		die("fsync");
	return 0;
}

/*
 * sticky: -r random faults GAP apart at the top of the file, then an
 * in-order read of the first SEQ MiB through the same struct file.
 */
static int cmd_sticky(int argc, char **argv)
{
	unsigned long nrand = 300, gap = 1024, seq = 32, max = 0, i;
	long f0, f1, kib0, kib1, f2, kib2;
	int prot = PROT_READ, opt, fd;
	size_t size, off, pages;
	char *p;

	optind = 3;
	while ((opt = getopt(argc, argv, "r:g:s:xm:")) != -1) {
		switch (opt) {
		case 'r':
			nrand = strtoul(optarg, NULL, 0);
			break;
		case 'g':
			gap = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seq = strtoul(optarg, NULL, 0);
			break;
		case 'x':
			prot |= PROT_EXEC;
			break;
		case 'm':
			max = strtoul(optarg, NULL, 0);
			break;
		default:
			die("bad option");
		}
	}
	fd = open_cold(argv[2], &size);
	if (seq * MIB + nrand * gap * KIB > size)
		die("file too small: need %lu MiB",
		    seq + (nrand * gap * KIB + MIB - 1) / MIB);
	p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");

	/* the random faults, spread over the top of the file */
	kib0 = dev_read_kib();
	f0 = majflt();
	for (i = 0; i < nrand; i++) {
		off = size - (i + 1) * gap * KIB;
		off += (random() % (gap * KIB / 4)) & ~(page_size - 1);
		touch(p + off);
	}
	f1 = majflt();
	kib1 = dev_read_kib();

	/* then one byte per page, in order, from the start */
	pages = seq * MIB / page_size;
	for (i = 0; i < pages; i++) {
		touch(p + i * page_size);
		if (max && majflt() - f1 >= (long)max) {
			i++;
			break;
		}
	}
	f2 = majflt();
	kib2 = dev_read_kib();
	printf("sticky random=%lu gap_kib=%lu exec=%d rand_majflt=%ld rand_read_kib=%ld ",
	       nrand, gap, !!(prot & PROT_EXEC), f1 - f0,
	       kib0 < 0 ? -1 : kib1 - kib0);
	printf("seq_pages=%lu of %zu seq_majflt=%ld seq_read_kib=%ld stopped=%d\n",
	       i, pages, f2 - f1, kib0 < 0 ? -1 : kib2 - kib1, i < pages);
	return 0;
}

/* revwalk: one byte per page, last page first, MADV_HUGEPAGE or _SEQUENTIAL */
static int cmd_revwalk(int argc, char **argv)
{
	unsigned long max = 0, pages, i, walked = 0;
	long f0, kib0, first_pmd_flt = -1, pmd_flt = 0;
	int advice = -1, opt, fd;
	size_t size;
	char *p;

	optind = 3;
	while ((opt = getopt(argc, argv, "HSm:")) != -1) {
		switch (opt) {
		case 'H':
			advice = MADV_HUGEPAGE;
			break;
		case 'S':
			advice = MADV_SEQUENTIAL;
			break;
		case 'm':
			max = strtoul(optarg, NULL, 0);
			break;
		default:
			die("bad option");
		}
	}
	if (advice < 0)
		die("revwalk needs -H or -S");
	fd = open_cold(argv[2], &size);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || madvise(p, size, advice))
		die("mmap/madvise");
	if (advice == MADV_HUGEPAGE && ((unsigned long)p & (PMD_BYTES - 1)))
		fprintf(stderr, "ra-repro: mapping not PMD aligned\n");

	pages = size / page_size;
	kib0 = dev_read_kib();
	f0 = majflt();
	for (i = pages; i > 0; i--) {
		touch(p + (i - 1) * page_size);
		walked++;
		/* faults per PMD-sized block, to see when readahead stops */
		if (((i - 1) * page_size) % PMD_BYTES == 0) {
			long f = majflt() - f0;

			if (first_pmd_flt < 0 && f - pmd_flt > 1)
				first_pmd_flt = walked / (PMD_BYTES / page_size);
			pmd_flt = f;
		}
		if (max && majflt() - f0 >= (long)max)
			break;
	}
	printf("revwalk advice=%s pages=%lu walked=%lu majflt=%ld read_kib=%ld ",
	       advice == MADV_HUGEPAGE ? "hugepage" : "sequential", pages,
	       walked, majflt() - f0,
	       kib0 < 0 ? -1 : dev_read_kib() - kib0);
	printf("per_page_from_pmd=%ld stopped=%d\n", first_pmd_flt,
	       walked < pages);
	return 0;
}

/*
 * frames: video frames of 3840x2160 8-bit 4:2:0, each plane mapped as its
 * own VMA (page-aligned start, so neighbouring planes' VMAs overlap by at
 * most a page of file range), read in order and unmapped.
 */
static int cmd_frames(int argc, char **argv)
{
	const size_t luma = 3840 * 2160, chroma = luma / 4;
	const size_t plane[3] = { luma, chroma, chroma };
	unsigned long nframes = 20, f, planes = 0, plane_first_flt = 0;
	long f0, kib0;
	size_t size, off = 0;
	int opt, fd, k;

	optind = 3;
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt != 'n')
			die("bad option");
		nframes = strtoul(optarg, NULL, 0);
	}
	fd = open_cold(argv[2], &size);
	if (nframes * (luma + 2 * chroma) > size)
		die("file too small for %lu frames", nframes);

	kib0 = dev_read_kib();
	f0 = majflt();
	for (f = 0; f < nframes; f++) {
		for (k = 0; k < 3; k++) {
			size_t start = off & ~(page_size - 1);
			size_t len = off + plane[k] - start, i;
			long before = majflt();
			char *p;

			p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, start);
			if (p == MAP_FAILED)
				die("mmap plane");
			for (i = off - start; i < len; i += page_size)
				touch(p + i);
			touch(p + len - 1);
			if (majflt() > before)
				plane_first_flt++;
			munmap(p, len);
			off += plane[k];
			planes++;
		}
	}
	printf("frames frames=%lu vmas=%lu majflt=%ld planes_with_majflt=%lu read_kib=%ld\n",
	       nframes, planes, majflt() - f0, plane_first_flt,
	       kib0 < 0 ? -1 : dev_read_kib() - kib0);
	return 0;
}

/* split: one mapping split into VMAs by mprotect(), read in order */
static int cmd_split(int argc, char **argv)
{
	unsigned long vma_mib = 4, i, nvma;
	size_t size, pages;
	long f0, kib0;
	int opt, fd;
	char *p;

	optind = 3;
	while ((opt = getopt(argc, argv, "v:")) != -1) {
		if (opt != 'v')
			die("bad option");
		vma_mib = strtoul(optarg, NULL, 0);
	}
	fd = open_cold(argv[2], &size);
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	nvma = size / (vma_mib * MIB);
	/* every other piece writable (private): neighbours cannot merge */
	for (i = 1; i < nvma; i += 2)
		if (mprotect(p + i * vma_mib * MIB, vma_mib * MIB,
			     PROT_READ | PROT_WRITE))
			die("mprotect");
	pages = size / page_size;
	kib0 = dev_read_kib();
	f0 = majflt();
	for (i = 0; i < pages; i++)
		touch(p + i * page_size);
	printf("split vmas=%lu vma_mib=%lu pages=%zu majflt=%ld read_kib=%ld\n",
	       nvma, vma_mib, pages, majflt() - f0,
	       kib0 < 0 ? -1 : dev_read_kib() - kib0);
	return 0;
}

/*
 * pieces: from OFFSET, for each PIECE-sized piece touch its last page
 * first, then read it forward, as a memcpy() of large blocks does.
 */
static int cmd_pieces(int argc, char **argv)
{
	unsigned long off_mib = 64, piece_mib = 8, n = 8, i, j, pp, sync = 0;
	long f0, kib0;
	size_t size;
	int opt, fd;
	char *p;

	optind = 3;
	while ((opt = getopt(argc, argv, "o:p:n:")) != -1) {
		switch (opt) {
		case 'o':
			off_mib = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			piece_mib = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		default:
			die("bad option");
		}
	}
	fd = open_cold(argv[2], &size);
	if ((off_mib + n * piece_mib) * MIB > size)
		die("file too small");
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	pp = piece_mib * MIB / page_size;
	kib0 = dev_read_kib();
	f0 = majflt();
	for (i = 0; i < n; i++) {
		char *q = p + (off_mib + i * piece_mib) * MIB;
		long before = majflt();

		touch(q + (pp - 1) * page_size);
		if (majflt() > before)
			sync++;
		for (j = 0; j < pp; j++)
			touch(q + j * page_size);
	}
	printf("pieces offset_mib=%lu piece_mib=%lu pieces=%lu majflt=%ld ",
	       off_mib, piece_mib, n, majflt() - f0);
	printf("end_first_majflt=%lu read_kib=%ld\n", sync,
	       kib0 < 0 ? -1 : dev_read_kib() - kib0);
	return 0;
}

int main(int argc, char **argv)
{
	page_size = sysconf(_SC_PAGESIZE);
	if (argc < 3)
		die("usage: ra-repro mkfile|sticky|revwalk|frames|split|pieces FILE ...");
	if (!strcmp(argv[1], "mkfile"))
		return cmd_mkfile(argc, argv);
	if (!strcmp(argv[1], "sticky"))
		return cmd_sticky(argc, argv);
	if (!strcmp(argv[1], "revwalk"))
		return cmd_revwalk(argc, argv);
	if (!strcmp(argv[1], "frames"))
		return cmd_frames(argc, argv);
	if (!strcmp(argv[1], "split"))
		return cmd_split(argc, argv);
	if (!strcmp(argv[1], "pieces"))
		return cmd_pieces(argc, argv);
	die("unknown command %s", argv[1]);
	return 2;
}
