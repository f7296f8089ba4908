#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Changelogs and cover letters of the readahead patch series.

  series-text.py category
                         changelog of the first patch: the readahead
                         category and the helpers every test uses
  series-text.py test NAME --series SERIES
                         changelog of the patch that adds selftests-mm/
                         NAME.c (or NAME.patch's cases)
  series-text.py filesystems
                         changelog of the first series' patch that adds
                         btrfs and f2fs variants to its tests
  series-text.py kernel PATCH
                         changelog of validation/patches/PATCH as a patch
                         of a series
  series-text.py cover SERIES
                         cover letter of a series of series_plan.py plan

Every text is printed to stdout: subject line, blank line, body; a test's
body ends with notes for its reviewers after a "---" line. What a
test asserts and why comes from the comment at the top of its source; on
which kernels it fails, from verdicts/expected.tsv; its figures, from
validation/RESULTS.md; a kernel change's changelog, from its patch (less
what it says of the selftests, which their own patches say). No text
names a configuration of ours: kernels are named by release and machine.
"""
import os
import re
import sys
import textwrap

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'scripts'))
import series_plan as sp  # noqa: E402

WIDTH = 72


def wrap(text, indent=''):
    return textwrap.fill(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent, break_on_hyphens=False)


def head_comment(path):
    """The first comment of a source file, without its ' * ' prefixes."""
    return first_comment(open(path).read())


def first_comment(text):
    """The first comment of C text, without its ' * ' prefixes."""
    lines = text.split('\n')
    out, inside = [], False
    for line in lines:
        if not inside:
            if line.startswith('/*') and 'SPDX' not in line:
                inside = True
            continue
        if line.startswith(' */'):
            break
        out.append(re.sub(r'^ \*( |$)', '', line).rstrip())
    return out


def reflow(lines):
    """Rewrap prose paragraphs to WIDTH; keep pictures and indented text."""
    out, para, item = [], [], []

    def flush():
        if para:
            out.append(wrap(' '.join(para)))
            para.clear()
        if item:
            out.append(wrap(' '.join(item), '  ').replace('  ', '- ', 1))
            item.clear()
    for line in lines:
        if not line.strip():
            flush()
            out.append('')
        elif line.startswith('- '):
            # A list item, its lines indented by two below it.
            flush()
            item.append(line[2:].strip())
        elif item and re.match(r'  \S', line):
            item.append(line.strip())
        elif line[0] in ' \t' or re.search(r'[|^]|<-|->|-{3}|  \S',
                                            line.strip()):
            flush()
            out.append(line.expandtabs(8))
        else:
            if item:
                flush()
            para.append(line.strip())
    flush()
    return '\n'.join(out).strip('\n')


def results():
    """Figures of the kill matrix: {test: {column: (exp, seen, fig, bound)}},
    the whole-figure table where it has the test, else the first one."""
    path = os.path.join(TOP, 'validation', 'RESULTS.md')
    figs, whole, header, in_whole = {}, {}, None, False
    if not os.path.exists(path):
        return figs, whole
    for line in open(path):
        if line.startswith('## '):
            in_whole = 'whole' in line.lower()
            header = None
        if not line.startswith('|') or line.startswith('|---'):
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if cells[0] == 'test':
            header = cells[1:]
            continue
        if not header:
            continue
        dest = whole if in_whole else figs
        for col, cell in zip(header, cells[1:]):
            m = re.match(r'(\S+)/(\S+)(?: (\d+)/(\d+))?', cell)
            if m:
                dest.setdefault(cells[0], {})[col] = (
                    m.group(1), m.group(2),
                    int(m.group(3)) if m.group(3) else None,
                    int(m.group(4)) if m.group(4) else None)
    return figs, whole


def first_sentence(comment):
    """The first sentence of a comment's first paragraph."""
    para = []
    for line in comment:
        if not line.strip():
            break
        para.append(line.strip())
    text = ' '.join(para)
    m = re.match(r'(.+?\.)(\s|$)', text)
    return m.group(1) if m else text


def subject_tail(title):
    t = title.split(':')[0].strip()
    if len(t) > 1 and t[1].islower():
        t = t[0].lower() + t[1:]
    return t



def machine(col):
    """A pristine 7.3 column's machine, in words."""
    rest = re.sub(r'^(v|debian-)7\.3-?', '', col)
    if not rest:
        return 'x86-64'
    parts = rest.split('-')
    arch = {'ppc64el': 'ppc64le'}.get(parts[0], parts[0])
    if len(parts) > 1 and parts[1].endswith('k'):
        return '%s with %s KiB pages' % (arch, parts[1][:-1])
    return arch


def machines(cols):
    out = []
    for c in cols:
        m = machine(c)
        if m not in out:
            out.append(m)
    return ', '.join(out)


def released(cases, rows, cols):
    """The released x86-64 kernel series (Debian's) where a case fails,
    those that fail the same tests as one: "6.1 to 6.12 (madv_random)",
    "every test" where all fail."""
    runs, gap = [], False
    names = {k.split('.')[-1] for k in cases}
    for c in cols:
        m = re.match(r'^debian-(\d+\.\d+)$', c)
        bad = sorted({k.split('.')[-1] for k in cases
                      if rows[k].get(c) == 'FAIL'})
        if not m:
            continue
        if not bad:
            gap = True
            continue
        if runs and runs[-1][3] == bad and not gap:
            runs[-1][1:3] = [m.group(1), runs[-1][2] + 1]
        else:
            runs.append([m.group(1), m.group(1), 1, bad])
        gap = False
    return ['%s%s (%s)' % (a, '' if n == 1 else (' and ' if n == 2 else
                                                 ' to ') + b,
                           'every test' if set(bad) == names and
                           len(names) > 1 else ', '.join(bad))
            for a, b, n, bad in runs]


def subject_of(patch):
    text = open(os.path.join(TOP, 'validation', 'patches', patch)).read()
    m = re.search(r'^Subject: (?:\[PATCH[^]]*\] )?(.*)$', text, re.M)
    return m.group(1).strip()


# What a kernel does wrong with each change of validation/patches/ that
# breaks a first-series test: its changelog names the behaviour, not a
# patch that is not upstream. A change missing here is named by subject.
BREAKAGE = {
    'always-read-around.patch':
        'every page cache miss reads ra_pages around the fault, however '
        'many misses came before (no stop past MMAP_LOTSAMISS)',
    'revert-tried-hits.patch':
        'faults retried with FAULT_FLAG_TRIED count as mmap hits again '
        '(commit 9b0fcac3cfe7 reverted)',
    'vma-clamp.patch':
        'mmap read-around cut at the faulting VMA\'s ends (commit '
        '7b32f64bc512 of linux-next, reverted there, redone on 7.3)',
    'thp-async-small.patch':
        'after forced THP readahead, async readahead windows of '
        'read_ahead_kb, read in folios no larger than that',
    'readahead-gfp-retry.patch':
        'readahead folios charged without __GFP_NORETRY, so that a reader '
        'in a cgroup at its limit is OOM-killed in its first window',
    'pmd-thp-disabled.patch':
        'do_set_pmd() maps a PMD-sized file folio by a PMD where THP is '
        'disabled',
    'madv-normal-keeps-random.patch':
        'MADV_NORMAL leaves a mapping once advised MADV_RANDOM reading one '
        'folio per fault',
    'read-around-clamp.patch':
        'a read-around clamped at page 0 shorter than ra_pages',
    'madv-random-async.patch':
        'a MADV_RANDOM fault on a PG_readahead folio starts async readahead',
    'restart-v1.patch':
        'past MMAP_LOTSAMISS, a fault whose previous page is cached reads '
        'the next page too and marks it, so that a random reader that '
        'touches runs of 4 pages reads ahead a window per run',
    'restart-v2.patch':
        'past MMAP_LOTSAMISS, a fault whose previous page is cached reads '
        'the next folio too and marks it, so that a random reader that '
        'touches runs of 4 pages reads ahead a window per run',
    'restart-v3.patch':
        'past MMAP_LOTSAMISS, readahead restarted from the trace of cached '
        'folios an in-order reader leaves, reading more pages than '
        'restart_costs allows for one of its random patterns',
    'read-around-forward.patch':
        'the read-around of a plain mapping reads ra_pages ahead of the '
        'fault and nothing behind it',
    'madv-seq-read-around.patch':
        'a MADV_SEQUENTIAL fault reads around itself, not forwards',
    'thp-ra-unmarked.patch':
        'forced THP readahead sets no PG_readahead, so that a forward '
        'reader faults every two PMD-sized folios',
    'read-around-marker-end.patch':
        'PG_readahead on the last page of a read-around, so that an '
        'in-order reader waits for the next window',
    'exec-past-vma.patch':
        'the VM_EXEC read-around reads up to ra_pages past the end of its '
        'VMA',
    'madv-random-no-exec.patch':
        'MADV_RANDOM stops the VM_EXEC read-around too',
    'mmap-miss-weight.patch': '',
    'restart-v4.patch':
        'past MMAP_LOTSAMISS, readahead restarted from the pages cached '
        'below a fault whoever cached them, so that a random reader of a '
        'partly cached file reads what another opener cached as its own '
        'stream',
    'thp-lotsamiss-v2.patch':
        'past MMAP_LOTSAMISS, a MADV_HUGEPAGE fault whose PMD-sized folio '
        'fails its memcg charge reads the whole PMD range in small folios',
    'thp-lotsamiss-v1.patch':
        'past MMAP_LOTSAMISS, a MADV_HUGEPAGE fault on a page reclaim '
        'evicted reads a PMD-sized folio again, under the memory pressure '
        'that evicted it',
    'no-exec-bypass.patch':
        'VM_EXEC faults gated by mmap_miss again, so that random faults '
        'through an executable mapping end its read-around',
    'madv-seq-gated.patch':
        'a MADV_SEQUENTIAL fault gated by mmap_miss, reading one folio '
        'after random faults on the same open file',
    'workingset-hits.patch':
        'hits on folios refaulted from the working set lower mmap_miss',
    'locked-folio-hits.patch':
        'faults that wait on a folio under I/O count as mmap hits',
    'fadv-normal-grow-only.patch':
        'POSIX_FADV_NORMAL leaves a window POSIX_FADV_SEQUENTIAL doubled',
    'fadv-seq-single.patch':
        'POSIX_FADV_SEQUENTIAL keeps the disk\'s window instead of '
        'doubling it',
    'fadv-willneed-noop.patch':
        'POSIX_FADV_WILLNEED and MADV_WILLNEED read nothing',
    'madv-willneed-offset.patch':
        'MADV_WILLNEED reads the range at the wrong file offset when the '
        'mapping does not start at offset 0',
    'madv-random-read-around.patch':
        'a MADV_RANDOM fault reads a whole read-around window',
    'eof-map-whole-folio.patch':
        'fault-around maps a folio that reaches past EOF whole, so that '
        'its pages past EOF read as zeros instead of raising SIGBUS',
    'eof-finish-fault.patch':
        'finish_fault() maps a folio that reaches past EOF whole (a shared '
        'write fault, or a read fault with no page table for '
        'fault-around), so that its pages past EOF do not raise SIGBUS',
    'eof-folio-straddle.patch':
        'readahead folios of the window\'s order allocated across EOF',
}


def breakage_of(patch):
    """What a kernel with @patch does wrong, for a test's changelog."""
    if patch in BREAKAGE:
        return BREAKAGE[patch]
    return re.sub(r' \(v\d+\)$', '', subject_of(patch))


def figure_table(cases, good_cols, bad_cols):
    """Per case: bound, figures where it passes and where it fails."""
    # The kill matrix's table, written with the tests as they are (the
    # whole-figure one may be older).
    figs, _ = results()
    out = []
    for case in cases:
        note = ''
        cells = figs.get(case, {})

        # The bound of the check that passes, where one does.
        bound = next((cells[c][3] for c in good_cols if c in cells and
                      cells[c][1] == 'ok' and cells[c][3]), None)
        if bound is None:
            bound = next((b for (e, s, f, b) in cells.values() if b), None)
        if bound is None:
            continue

        def span(cs, want):
            got = [cells[c] for c in cs if c in cells and
                   cells[c][1] == want and cells[c][2] is not None]
            # The figures against the bound shown; else those of another
            # check of the case (or another page size), with theirs.
            same = [f for (e, s, f, b) in got if b == bound]
            other = {b for (e, s, f, b) in got}
            v = same or [f for (e, s, f, b) in got]
            if not v:
                return '-'
            lo, hi = min(v), max(v)
            text = str(lo) if lo == hi else '%d-%d' % (lo, hi)
            if not same and len(other) == 1:
                text += '/%d' % other.pop()
            return text
        out.append((case, bound, span(good_cols, 'ok'),
                    span(bad_cols, 'FAIL'), note))
    if not out:
        return []
    # One test's cases share the fixture name: say it once, above.
    fixtures = {r[0].split('.', 1)[0] for r in out}
    head = 'case'
    if len(fixtures) == 1:
        head = 'case (%s.)' % fixtures.pop()
        out = [(r[0].split('.', 1)[1],) + r[1:] for r in out]
    width = max([len(r[0]) for r in out] + [len(head)])
    fmt = '  %%-%ds %%6s %%8s %%10s%%s' % width
    lines = [fmt % (head, 'bound', 'healthy', 'broken', '')]
    lines += [fmt % r for r in out]
    if any('/' in r[2] + r[3] for r in out):
        lines.append('  n/b: a figure of another check of the case, '
                     'against its own bound b')
    return lines


def run_line(name):
    if sp.patched(name):
        return wrap('To run them, from a directory on XFS or ext4 (their '
                    'file is made there): tools/testing/selftests/mm/%s -f '
                    '%s.' % (name, sp.fixture_of(name)))
    return wrap('To run it, as root, in tools/testing/selftests/mm: ./%s '
                '(-l lists its cases, -r FIXTURE.VARIANT.TEST runs one).'
                % name)


CATEGORY_SUBJECT = 'selftests/mm: add the readahead category and its helpers'

CATEGORY = """\
Add the "readahead" category of run_vmtests.sh for mmap readahead tests
that judge what a program sees: the major faults a pattern of faults
takes on a cold file, and the pages it reads that it never asked for.
The Makefile and run_vmtests.sh name each test, as they do mm's others;
"make run_tests" and KernelCI run the category through
ksft_readahead.sh in TEST_PROGS. The tests are built where ARCH can be
64-bit and run where it is (VADDR64): they make 2 GiB loop images and
map files of GiBs.
MAINTAINERS gets lines for the category's files under PAGE CACHE, whose
code the tests exercise.

The helpers this first test uses, which mm's vm_util lacks, come with
it: ra_fs.[ch] give a test a filesystem made for it, so that its block
size and read_ahead_kb are its own and the disk the tests run from is
left alone. main() calls ra_fs_init() with the kinds its variants use
before test_harness_run(): in a private mount namespace, on a tmpfs
over /tmp, a sparse image per kind on a loop device with
LO_FLAGS_AUTOCLEAR, formatted and mounted, so that no mount, file or
loop device is left behind even when the binary is killed; the tests
the harness forks inherit them. mkfs runs once per kind, not per test:
under TCG (a kernel of another architecture on a CI machine),
mkfs.xfs writing its 64 MiB log took 0.33 s of a test's 0.45 s floor.
What tests share is the filesystem's metadata and caches: each gets a
new file, opened cold and checked, and sets its own read_ahead_kb,
which its teardown puts back (the main process at exit, after a test a
harness timeout killed; after a SIGKILL a free loop device may keep
another one). The kinds are ext4 and XFS of several block sizes (min
folio orders); btrfs and f2fs follow in the series' last patch. A kind
whose mkfs is missing or fails, or whose filesystem does not mount (no
support, a root in a user namespace), skips with the reason.
ra_fs.c also creates the test's sparse file and opens it cold (dropped
from the page cache, which is checked); ra_cache.[ch] count resident
pages and print each figure with its bound, ra_pages and folio size in
one format. Each test then comes in a patch of its own, with the
helpers it is the first to use. Creating the filesystems needs
CAP_SYS_ADMIN (unshare() fails with EPERM without it); then every test
skips.

Major faults are read from getrusage()'s ru_majflt. Where a file fault
runs under mmap_lock rather than a per-VMA lock (6.1, or an architecture
without ARCH_SUPPORTS_PER_VMA_LOCK), a fault that drops the lock for
async readahead is retried with FAULT_FLAG_TRIED, and mm_account_fault()
counts that retry as a major fault too: a healthy in-order walk then
takes one major fault per window. vma_boundary bounds its walks beyond
a control (the same bytes read through one mapping), which counts the
same retries; the walk also counts the pages it found missing from the
page cache as it reached them (mincore() just before each touch), which
no retry adds to: tests whose bound such a retry per window could
cross (advice.madv_hugepage_forward) bound those pages instead.
No test fails on 6.1 because of the retries.

Cases take the harness's default timeout (30 s); the few whose slowest
run in QEMU under TCG is over 3 s have ten times that run, so that a
debug kernel (KASAN, lockdep) under emulation finishes them. The whole
category runs in seconds on a host and in a few minutes under TCG,
well within mm's settings timeout."""


FILESYSTEMS_SUBJECT = 'selftests/mm: readahead: run on btrfs and f2fs too'

# The first series' patch of other filesystems: its tests, then why.
FILESYSTEMS = [
    'Add btrfs and f2fs variants to the tests of this series whose '
    'figures another filesystem\'s read path can change: %s. Their kinds '
    'go to ra_fs.c, CONFIG_BTRFS_FS and CONFIG_F2FS_FS to config.',
    'btrfs reads its files through a bdi of its own (ra_pages at mount '
    '128 KiB times its devices, at least 4 MiB), not the loop device\'s: '
    'ra_fs.c finds it under /sys/fs/btrfs/<fsid>/devices/, so that a '
    'test sets that bdi\'s read_ahead_kb. Its folios stop at 64 blocks, '
    'so advice\'s 2 MiB folio cases skip there.',
    'f2fs\'s own read path builds order-0 folios for files that are not '
    'immutable, and f2fs mounts only where the page is 4 KiB: its kind is '
    'not made elsewhere, and its cases skip with that reason.',
]


def filesystems():
    """The first series' patch of other filesystems."""
    tests = [t for t, _ in plan_of(sp.FIRST)[3]
             if re.search(r'\b(%s)\b' % '|'.join(sp.MORE_FS),
                          sp.strip_code(sp.source(t)))]
    names = [t.replace('readahead_', '') for t in tests]
    text = ', '.join(names[:-1]) + ' and ' + names[-1] if len(names) > 1 \
        else names[0]
    body = [wrap(FILESYSTEMS[0] % text)] + \
        [wrap(p) for p in FILESYSTEMS[1:]]
    cols, rows = sp.table()
    base = sp.base_columns(cols)
    cases = [c for t in tests for c in sp.cases_of(t, rows)
             if re.search(r'\.(%s)_' % '|'.join(sp.MORE_FS_TYPES), c)]
    seen = [b for b in base
            if all(rows[c].get(b) in ('ok', 'skip') for c in cases)]
    body.append(wrap('The new cases pass on 7.3 (%s), or skip for the '
                     'reason printed.' % machines(seen)))
    return FILESYSTEMS_SUBJECT, '\n\n'.join(body)


def plan_of(series):
    for s in sp.plan()[0]:
        if s[0] == series:
            return s
    sys.exit('no series %s' % series)


def test_changelog(name, series):
    cols, rows = sp.table()
    base = sp.base_columns(cols)
    _, fix, patches, _ = plan_of(series)
    if sp.patched(name):
        # mm's own test: the comment over the cases its patch adds.
        comment = first_comment(sp.source(name))
    else:
        comment = head_comment(os.path.join(TOP, 'selftests-mm',
                                            name + '.c'))
    title = comment[0].rstrip('.') if comment else name
    notes = []
    cases = sp.cases_of(name, rows)
    if series == sp.FIRST:
        # Its btrfs and f2fs cases come in the series' last patch.
        cases = [c for c in cases if not re.search(
            r'\.(%s)_' % '|'.join(sp.MORE_FS_TYPES), c)]
    if sp.patched(name):
        subject = 'selftests/mm: %s: add %s cases' % (name,
                                                      sp.fixture_of(name))
        body = [reflow(comment), '', wrap(
            'They make their file in the current directory (unlinked at '
            'once), so that its filesystem is the one tested, and skip '
            'where the MADV_HUGEPAGE mapping gets no PMD mapping (tmpfs, '
            'a filesystem without large folios). run_vmtests.sh has not '
            'run %s so far: it now runs these cases only (-f %s), in the '
            'thp category, from the XFS it mounts for split_huge_page_test '
            '(not run where there is none); whether the other cases join '
            'them stays their own change.' % (name, sp.fixture_of(name)))]
    else:
        subject = 'selftests/mm: add %s test' % name
        tail = subject_tail(title)
        if len(subject) + len(tail) + 3 <= 75:
            subject += ' (%s)' % tail
        body = [reflow(comment)]
    if fix:
        fcols = sp.fix_columns(fix, cols)
        bad = [b for b in base if any(rows[c].get(b) == 'FAIL'
                                      for c in cases)]
        text = ('It fails on 7.3 (%s) and passes with %s in this series, '
                '"%s".' % (machines(bad),
                           'the change' if len(patches) == 1
                           else 'the changes', subject_of(patches[0])))
        if len(patches) > 1:
            text = text[:-1] + ' and what follows it.'
        old = released(cases, rows, cols)
        if old:
            text += ' Released kernels fail it too: %s.' % ', '.join(old)
        body += ['', wrap(text)]
        good_cols = fcols
        bad_cols = [c.split('+')[0] for c in fcols]
    else:
        # Where every case skips, nothing passes: that machine is named
        # among the skips only.
        every = [b for b in base
                 if all(rows[c].get(b) == 'skip' for c in cases)]
        seen = [b for b in base if b not in every and
                all(rows[c].get(b) in ('ok', 'skip') for c in cases)]
        some = [b for b in seen
                if any(rows[c].get(b) == 'skip' for c in cases)]
        text = 'It passes on 7.3 (%s)' % machines(seen)
        if some:
            text += '; some cases skip on %s' % machines(some)
        if every:
            text += '; it skips on %s' % machines(every)
        if some or every:
            text += ', for the reason printed'
        text += '.'
        breaking = [c for c in cols if c.startswith('v7.3+') and
                    c not in ('v7.3+fixes',) and
                    any(rows[k].get(c) == 'FAIL' for k in cases)]
        confs = dict(sp.configurations())
        # A configuration built on fixes breaks by what it adds to them.
        fixed = set(confs.get('v7.3+fixes', []))
        changes = []
        for c in breaking:
            own = [ptch for ptch in confs.get(c, []) if ptch not in fixed]
            for ptch in own or confs.get(c, []):
                what = breakage_of(ptch)
                if what and what not in changes:
                    changes.append(what)
        old = released(cases, rows, cols)
        if old:
            text += ' It fails on released kernels %s.' % ', '.join(old)
        body += ['', wrap(text)]
        if changes:
            notes += [wrap('It was checked to fail on 7.3 changed to '
                           'break the rule in each of these ways (none '
                           'of them upstream):'), '']
            notes += [wrap('- ' + c, '  ').replace('  - ', '- ', 1)
                      for c in changes] + ['']
        good_cols = [b for b in base if b.startswith('v')]
        bad_cols = breaking
    fig = figure_table(cases, good_cols, bad_cols)
    if fig:
        notes += [wrap('Figures, in the unit of each case (bound; '
                       'lowest and highest where it passes and where '
                       'it fails, where a walk stops once past its '
                       'bound):'), ''] + fig + ['']
    # What a reviewer checks but the history need not keep goes below a
    # "---" line: scripts/make-series.sh sends it after the patch's own.
    body += ['', '---'] + notes + [run_line(name)]
    return subject, '\n'.join(body)


def kernel_changelog(patch):
    """A fix's changelog: what it says of the selftests left out; its
    trailers (Fixes:, Link:) last, as they are."""
    text = open(os.path.join(TOP, 'validation', 'patches', patch)).read()
    head = text.split('\n---\n', 1)[0]
    head = re.sub(r'^Subject:.*\n([ \t].*\n)*', '', head, flags=re.M)
    paras = [p.strip('\n') for p in re.split(r'\n\s*\n', head) if p.strip()]
    trailers = []
    out = []
    for p in paras:
        lines = p.split('\n')
        if all(re.match(r'^[A-Z][\w-]+: ', ln) for ln in lines):
            trailers += lines
        elif 'selftest' not in p:
            out.append(p)
    body = '\n\n'.join(out)
    if trailers:
        body += '\n\n' + '\n'.join(trailers)
    return subject_of(patch), body


SHARED = """\
Each test runs on loop filesystems of its own (ext4, XFS with 4 to
64 KiB blocks, so that filesystems with a min folio order are covered,
and btrfs and f2fs where their read paths can change a figure; one per
kind, made by the binary's main() and shared by its tests), drops its file from the page cache, faults it in through a mapping in a
fixed pattern, and bounds either the major faults it takes (ru_majflt)
or the pages it brings into the page cache (cachestat(), mincore()).
Every bound follows from the mechanism (ra_pages, folio size, region
size) and from the figures of healthy and broken kernels, which the
changelogs give where a kernel was seen to break the rule; no verdict
depends on timing, but a hang, which only the harness's timeout shows.
A walk stops once its bound is passed, so that a broken kernel takes no
longer than a healthy one (READAHEAD_FULL_RUN=1 in the environment lets
it run to its end, for whole figures). Each test prints its figure, the bound, ra_pages and the
folio size, and on failure the mechanism it suspects."""

RUN = """\
To run them, as root, on a tree with the series applied:

  make headers
  make -C tools/testing/selftests TARGETS=mm run_tests

or only this category, as KernelCI runs it:

  make -C tools/testing/selftests TARGETS=mm INSTALL_PATH=/tmp/ksft install
  /tmp/ksft/run_kselftest.sh -t mm:ksft_readahead.sh

or one test: cd tools/testing/selftests/mm && ./readahead_<name>
(-l lists its cases, -r FIXTURE.VARIANT.TEST runs one)."""


# The cover letters of the series of PINNED tests (series_plan.py).
PINNED_COVERS = {
    'exec-read-around': (
        'selftests/mm: readahead: the VM_EXEC read-around',
        'A fault on a PROT_EXEC mapping takes a read-around of its own in '
        'do_sync_mmap_readahead(): program text is read at random, so it '
        'neither counts against mmap_miss nor follows MADV_RANDOM, and it '
        'reads from the faulting folio forwards, no further than the VMA. '
        'These tests pin those rules, which live in the code\'s comments '
        'rather than in a promise to programs, so they are posted apart '
        'from the readahead tests, on top of them; each names the comment '
        'it relies on.'),
    'mmap-miss-gates': (
        'selftests/mm: readahead: what counts as an mmap hit past '
        'MMAP_LOTSAMISS',
        'Once a file is read at random (mmap_miss past MMAP_LOTSAMISS), '
        'the fault path reads one folio per fault. These tests pin four '
        'conditions that keep it so: a fault that waited on a folio '
        'another fault was reading is no hit, fault-around over refaulted '
        'workingset folios is no hit, forced THP readahead after a '
        'refault reads a small folio, and a MADV_HUGEPAGE fault whose '
        'PMD-sized folio a memory cgroup cannot charge reads the small '
        'folio it needs, not the PMD range. Each is a line of code rather than a '
        'documented promise, so they are posted apart from the readahead '
        'tests, on top of them; each names the line it pins and why. The '
        'thrash tests need cgroup v2 with the memory or io controller at '
        'the root and skip otherwise; thrash_locked waits, bounded, for '
        'its threads to sleep on the locked folio, and skips when they do '
        'not.'),
}

# What the first series answers to questions its tests raise.
REVIEW_NOTES = [
    'Rules the tests pin that are not documented: the two folios of forced '
    'THP '
    'readahead and their 2 MiB cap (comments there, the cap since 7.3), '
    'MMAP_LOTSAMISS (100, copied: there is no interface). random_reader '
    'passes it by 10, not three times as the others do: a kernel that '
    'counts a hit for each fault-around or retried fault takes the '
    'counter back under the limit after 10 hits and reads around again '
    'within the measured runs, where after a warm-up of 300 it would '
    'need 200 such hits first; the failure line names the constant, '
    'which the test must follow if it grows past 110. Each test\'s header names the comment it '
    'relies on, its failure line the commit whose guard it found broken; '
    'kernel history stays in the changelogs.',
    'A filesystem per kind of filesystem (loop device over tmpfs, mkfs, '
    'mount, in the binary\'s private mount namespace, made by main() '
    'before test_harness_run(), inherited by the tests the harness '
    'forks): what gives a case its block size and '
    'read_ahead_kb without touching the disk CI runs from, and what '
    'leaves no mount, file or loop device behind a killed test.',
    'The Makefile and run_vmtests.sh name each test: the series that '
    'follow, each with its fix, touch the same lists, and stacked in '
    'another order they need those lines merged by hand.',
    'A test binary\'s SIGTERM handler calls exit() where the test has a '
    'cgroup of its own, as hugepage_settings.c does for THP settings: the '
    'main process then removes the cgroups and the limits they hold.',
    'A kind whose block is larger than the page skips when it does not '
    'mount (with the mount\'s error): a kernel without large block sizes '
    'refuses it, and the test cannot tell that from a defect; on 7.3 '
    'every ext4 and XFS variant mounts on every page size the suite ran '
    'on.',
    'A new file is checked to be out of the page cache before a test '
    'uses it, with a sync and short retries: DONTNEED leaves a folio '
    'under read or held by reclaim for a moment, and a figure measured on '
    'a warm file would judge nothing.',
    'Harness timeouts are the default 30 s, or ten times a case\'s '
    'slowest run under TCG where that is longer, so that emulated debug '
    'kernels (KASAN, lockdep under TCG) finish every case.',
    'Outcomes, not geometry: the eof tests bound pages read that no '
    'fault asked for (past EOF beyond the min folio), '
    'advice.madv_hugepage_2m the page cache '
    'one fault fills (at most four 2 MiB folios: a kernel that reads '
    'by the PMD, 512 MiB on arm64 with 64 KiB pages, fails it) and, '
    'where the PMD is 2 MiB, that the fault is PMD-mapped; random_reader.restart_costs '
    'bounds the pages read for patterns any restart of readahead past '
    'MMAP_LOTSAMISS must not mistake for an in-order reader. 7.3 passes '
    'all of them; the bounds sit between 7.3\'s figure and that of a '
    'kernel that reads what nobody asked for.',
    'window.forward_lead counts the least of up to three walks, the '
    'range dropped before each: readahead allocates with '
    '__GFP_NORETRY, and on a loaded machine a window cut short lets a '
    'healthy reader catch up with it now and then, while a kernel that '
    'marks too late does so on every walk (86 to 101 pages against a '
    'bound of 11).',
    'Helpers come with their first user a function at a time: two '
    'arrive with more than that user needs (ra_walk_pages()\'s backward '
    'walk, first used by window; ra_cached_pages() without a mapping), '
    'so that no later patch rewrites a helper an earlier one added.',
    'advice keeps a variant field for the largest folio a filesystem '
    'builds (max_folio) and skips its 2 MiB cases where that is smaller; '
    'ext4 and XFS leave it 0, the last patch\'s btrfs and f2fs are the '
    'first to set it (in their 4096-byte blocks: 64 for btrfs, one for '
    'f2fs, which mounts on 4 KiB pages only).',
    'A PMD check that fails gets a control: the same 2 MiB dropped, '
    'memory compacted, faulted again through a mapping of its own. '
    'madv_hugepage_forward skips where that fault is not PMD-mapped '
    'either (memory too fragmented for readahead\'s __GFP_NORETRY '
    'folios, or a filesystem without large folios, ext4 on 6.12); '
    'madv_hugepage_2m, whose check is that very fault, skips only where '
    'an anonymous MADV_HUGEPAGE fault gets no THP either (fragmented '
    'memory), and fails on ext4 without large folios, as a program sees '
    'no PMD there.',
    'vma_boundary\'s margin, a tenth of the VMAs beyond the control, held '
    'on every healthy kernel and machine the series ran on (x86-64, '
    'arm64 with 4, 16 and 64 KiB pages, ppc64le with 64 KiB pages): '
    'healthy walks took as many faults as the control, broken ones at '
    'least one more per VMA.',
    'The Makefile builds the tests where ARCH can be 64-bit: the '
    'kernel\'s top Makefile exports x86 and riscv for both widths, as '
    'memfd_secret\'s filter knows; run_vmtests.sh runs them only where '
    'the machine is 64-bit (VADDR64), where their 2 GiB images and '
    'mappings fit.',
    'The cgroups of killed tests are removed in the main process\'s '
    'exit with a bounded retry (a second), not cgroup_util\'s '
    'cg_destroy(), which retries without bound where no harness timeout '
    'would end it.',
]


def cover(series):
    series_list, _ = sp.plan()
    name, fix, patches, tests = plan_of(series)
    cols, rows = sp.table()
    out = []
    if name == sp.FIRST:
        subject = 'selftests/mm: mmap readahead tests'
        out.append(wrap('These kselftests catch mmap readahead regressions '
                        'in the page cache fault path. This series has '
                        'those that pass on 7.3, on x86-64, arm64 and '
                        'ppc64le, so that it can go in now and keep mm\'s '
                        'CI green; the tests that fail on 7.3 follow in '
                        'series of their own, each after the kernel change '
                        'that makes it pass, on top of this one:'))
        out.append('')
        for s in series_list[1:]:
            if s[2]:
                out.append(wrap('- ' + subject_of(s[2][0]), '  ')
                           .replace('  - ', '- ', 1))
        pinned = [s for s in series_list[1:]
                  if not s[2] and sp.onto(s[0]) == sp.FIRST]
        own = [t for s in series_list[1:] if sp.onto(s[0]) == 'base'
               for t, _ in s[3]]
        out += ['', wrap('Posted apart: tests that pin a rule of the code '
                         'rather than a promise to programs, on top of '
                         'this series (%s); cases of mm\'s own %s, on the '
                         'tree as it is.' % (
                             '; '.join(', '.join(t for t, _ in s[3])
                                       for s in pinned),
                             ' and '.join(own)))]
    elif not fix:
        subject, blurb = PINNED_COVERS[name]
        out.append(wrap(blurb))
    else:
        subject = subject_of(patches[0])
        first = kernel_changelog(patches[0])[1].split('\n\n')[0]
        out.append(reflow(first.split('\n')))
        out.append('')
        text = ('%s, then the test%s %s pass. It applies on 7.3 '
                'with the series "selftests/mm: mmap readahead tests", '
                'which has the readahead category and the helpers.' % (
                    'The fix' if len(patches) == 1 else
                    'The %d patches of the fix' % len(patches),
                    '' if len(tests) == 1 else 's',
                    'it makes' if len(patches) == 1 else 'they make'))
        out.append(wrap(text))
        # The figures behind the changelogs, as tables: <series>.cover
        # beside the patches, as it is.
        extra = os.path.join(TOP, 'validation', 'patches', name + '.cover')
        if os.path.exists(extra):
            out += ['', open(extra).read().rstrip('\n')]
    out += ['', 'What each test catches:', '']
    for t, v in tests:
        if sp.patched(t):
            comment = first_comment(sp.source(t))
        else:
            comment = head_comment(os.path.join(TOP, 'selftests-mm',
                                                t + '.c'))
        out.append(wrap('%s: %s' % (t, first_sentence(comment)), '  ')
                   .replace('  ', '- ', 1))
    if name == sp.FIRST:
        out += ['', 'Notes for reviewers:', '']
        out += [wrap('- ' + n, '  ').replace('  - ', '- ', 1)
                for n in REVIEW_NOTES]
    out += ['', SHARED, '', RUN]
    return subject, '\n'.join(out)


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    if args[0] == 'test' and len(args) == 4 and args[2] == '--series':
        subj, body = test_changelog(args[1], args[3])
    elif args[0] == 'category' and len(args) == 1:
        subj, body = CATEGORY_SUBJECT, CATEGORY
    elif args[0] == 'category' and len(args) == 5 and args[1] == 'test':
        # The category comes with its first test.
        subj, body = test_changelog(args[2], args[4])
        body, notes = body.split('\n---\n', 1)
        body += '\n\n' + CATEGORY + '\n\n---\n' + notes
    elif args[0] == 'filesystems' and len(args) == 1:
        subj, body = filesystems()
    elif args[0] == 'kernel' and len(args) == 2:
        subj, body = kernel_changelog(args[1])
    elif args[0] == 'cover' and len(args) == 2:
        subj, body = cover(args[1])
    else:
        sys.exit(__doc__)
    print(subj)
    print()
    print(body)


if __name__ == '__main__':
    main()
