#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Changelogs and cover letter of the readahead selftest series.

  series-text.py helpers                 changelog of the helpers patch
  series-text.py test NAME               changelog of selftests-mm/NAME.c
  series-text.py cover NAME... -- SUBJ.. cover letter body (patch subjects
                                         after --)

Every text is printed to stdout: subject line, blank line, body. The
figures come from verdicts/expected.tsv and validation/RESULTS.md as they
are when this runs; what a test asserts and why comes from the comment at
the top of its source.
"""
import os
import re
import sys
import textwrap

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, 'scripts'))
from series_plan import table  # noqa: E402
WIDTH = 72


def wrap(text, indent=''):
    return textwrap.fill(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent, break_on_hyphens=False)


def head_comment(path):
    """The first comment of a source file, without its ' * ' prefixes."""
    lines = open(path).read().split('\n')
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
    out, para = [], []

    def flush():
        if para:
            out.append(wrap(' '.join(para)))
            para.clear()
    for line in lines:
        if not line.strip():
            flush()
            out.append('')
        elif line[0] in ' \t' or re.search(r'[|<>^]-*|  \S', line.strip()):
            flush()
            out.append(line.expandtabs(8))
        else:
            para.append(line.strip())
    flush()
    return '\n'.join(out).strip('\n')


def column_legend():
    """The table's own description of its columns."""
    out, on = [], False
    for line in open(os.path.join(TOP, 'verdicts', 'expected.tsv')):
        if not line.startswith('#'):
            break
        text = line[1:].rstrip()
        if text.strip() == 'Columns:':
            on = True
            continue
        if on and re.match(r'^ ?\S', text):
            break
        if on:
            out.append('  ' + text.strip() if re.match(r'^ {2,3}\S', text)
                       else '      ' + text.strip())
    return out


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


def cases_of(fixture, rows):
    return sorted(t for t in rows if t.split('.')[0] == fixture)


def fixture_of(name):
    src = open(os.path.join(TOP, 'selftests-mm', name + '.c')).read()
    m = re.search(r'^FIXTURE\((\w+)\)', src, re.M)
    return m.group(1) if m else name.replace('readahead_', '')


def verdict_lines(fixture, cols, rows):
    """Per test (variants merged where they agree): fails on, passes on."""
    groups = {}
    for case in cases_of(fixture, rows):
        _, variant, test = case.split('.')
        v = rows[case]
        fails = tuple(c for c in cols if v.get(c) == 'FAIL')
        oks = tuple(c for c in cols if v.get(c) == 'ok')
        groups.setdefault((test, fails, oks), []).append(variant)
    out = []
    for (test, fails, oks), variants in groups.items():
        out.append(textwrap.fill('%s (%s):' % (test, ', '.join(variants)),
                                 WIDTH, initial_indent='  ',
                                 subsequent_indent='    ',
                                 break_on_hyphens=False))
        out.append(wrap('fails on ' + (', '.join(fails) or 'none'), '    '))
        out.append(wrap('passes on ' + (', '.join(oks) or 'none'), '    '))
    return out


def figure_lines(fixture, rows):
    figs, whole = results()
    out = []
    for case in cases_of(fixture, rows):
        src, note = (whole, '') if case in whole else (figs, '*')
        cells = src.get(case)
        if not cells:
            continue
        ok = [(f, c) for c, (e, s, f, b) in cells.items()
              if s == 'ok' and f is not None]
        bad = [(f, c) for c, (e, s, f, b) in cells.items()
               if s == 'FAIL' and f is not None]
        bound = next((b for (e, s, f, b) in cells.values() if b), None)

        def span(v):
            if not v:
                return '-'
            lo, hi = min(v)[0], max(v)[0]
            return str(lo) if lo == hi else '%d-%d' % (lo, hi)
        out.append((case, bound, span(ok), span(bad), note))
    if not out:
        return []
    width = max(len(r[0]) for r in out)
    fmt = '  %%-%ds %%5s %%9s %%9s%%s' % width
    head = [fmt % ('case', 'bound', 'healthy', 'broken', '')]
    out = [fmt % r for r in out]
    tail = []
    if any(line.endswith('*') for line in out):
        tail = ['  * early-stop figure: the walk stopped once past its bound']
    return head + out + tail


def test_changelog(name):
    cols, rows = table()
    fixture = fixture_of(name)
    comment = head_comment(os.path.join(TOP, 'selftests-mm', name + '.c'))
    title = comment[0].rstrip('.') if comment else fixture
    body = [reflow(comment), '']
    body.append(wrap('The test runs on ext4 and on XFS with 4, 16 and 64 KiB '
                     'blocks (min folio order 0, 2 and 4 on 4 KiB pages), '
                     'each in a loop filesystem of its own that goes away '
                     'with the test process. It measures a cold file: '
                     'major faults (ru_majflt), or page cache residency '
                     '(cachestat(), mincore()); stops a walk once the '
                     'verdict is known, and prints the figure, the bound, '
                     'ra_pages, the folio size and, on failure, the '
                     'suspected mechanism.'))
    v = verdict_lines(fixture, cols, rows)
    if v:
        body += ['', 'Verdicts (kernels: see the cover letter):', '']
        body += v
    f = figure_lines(fixture, rows)
    if f:
        body += ['', wrap('Figures in the test\'s unit, from the kill matrix '
                          '(every case on every kernel above): the lowest '
                          'and highest figure of the kernels where the case '
                          'passes (healthy) and where it fails (broken), '
                          'whole walks without early stop:'), ''] + f
    subject = 'selftests/mm: add %s test' % name
    if len(subject) + len(subject_tail(title)) + 3 <= 75:
        subject += ' (%s)' % subject_tail(title)
    return subject, '\n'.join(body)


def first_sentence(comment):
    para = []
    for line in comment:
        if not line.strip():
            break
        para.append(line.strip())
    text = ' '.join(para)
    m = re.match(r'(.+?[.:])(\s|$)', text)
    return m.group(1).rstrip(':') + '.' if m and m.group(1).endswith(':') \
        else (m.group(1) if m else text)


def subject_tail(title):
    t = title.split(':')[0].strip()
    if len(t) > 1 and t[1].islower():
        t = t[0].lower() + t[1:]
    return t


def helpers_changelog():
    body = '''\
Add the shared helpers of the mmap readahead tests and a "readahead"
category to run_vmtests.sh, run in CI through a ksft_readahead.sh
wrapper listed in TEST_PROGS. The tests themselves follow, one per
patch, so that each can go with the fix it checks.

The helpers hold only what vm_util does not. With ra_fs.[ch] and
ra_file.c each test gets a filesystem of its own (a sparse image on a
private tmpfs, attached to a loop device with LO_FLAGS_AUTOCLEAR and
mounted in a private mount namespace, so that nothing is left behind
even when the test is killed), sets the device's read_ahead_kb and puts
it back, creates a sparse file and drops it from the page cache with
POSIX_FADV_DONTNEED, checking with mincore() that nothing stayed
resident. With ra_cache.[ch] page walks count major faults (ru_majflt)
and stop once a bound is exceeded, so that a broken kernel takes no
longer than a healthy one. READAHEAD_TEST_DIR runs the tests on an
existing directory instead, READAHEAD_FULL_RUN=1 walks everything to
show a broken kernel's whole figure. ra_cgroup.[ch] puts a test in a
cgroup v2 of its own; only the tests that include ra_cgroup.h link it,
with the cgroup selftests' library.

Creating the filesystem needs CAP_SYS_ADMIN, checked with libcap as
mlock-random-test does; without it every test skips. The config gains
the loop device, ext4, XFS, tmpfs and TRANSPARENT_HUGEPAGE.'''
    return 'selftests/mm: add helpers and a readahead category for mmap ' \
        'readahead tests', body


def cover(names, subjects):
    cols, rows = table()
    figs, whole = results()
    out = ['''\
These tests catch mmap readahead regressions in the page cache fault
path: readahead that never comes back after random faults (sticky
mmap_miss), also with a min folio order; readers that walk a mapping
backwards; readahead cut at VMA boundaries; an async readahead marker
overtaken by read-around; and the others below. Each test makes its own
loop filesystem (ext4, XFS with 4, 16 and 64 KiB blocks), drops its
file from the page cache, faults it in a fixed pattern and bounds the
major faults it takes or the pages it brings in. Every bound follows from the mechanism (ra_pages,
folio size, region size) and from figures measured on healthy and broken
kernels, which each changelog gives; no verdict depends on timing.

Patch 1 adds the shared helpers and the "readahead" category, run by
"make -C tools/testing/selftests TARGETS=mm run_tests" through
ksft_readahead.sh. Every later patch adds one test; its Makefile,
run_vmtests.sh and MAINTAINERS lines sit next to those of the patch
before it, so the series applies in order.'''.strip(),
           '', 'What each test catches, and where it fails (FAIL = the '
           'kernel has the bug):', '']
    for name in names:
        fixture = fixture_of(name)
        comment = head_comment(os.path.join(TOP, 'selftests-mm',
                                            name + '.c'))
        out.append(wrap('%s: %s' % (name, first_sentence(comment)),
                        '  ').replace('  ', '- ', 1))
        fails = [c for c in cols
                 if any(rows[t].get(c) == 'FAIL'
                        for t in cases_of(fixture, rows))]
        oks = [c for c in cols
               if all(rows[t].get(c) in ('ok', 'skip')
                      for t in cases_of(fixture, rows))
               and any(rows[t].get(c) == 'ok'
                       for t in cases_of(fixture, rows))]
        if cases_of(fixture, rows):
            out.append(wrap('fails on: ' + (', '.join(fails) or 'none'),
                            '    '))
            out.append(wrap('passes on: ' + (', '.join(oks) or 'none'),
                            '    '))
        out.append('')
    out += ['Kernels:', '']
    for line in column_legend():
        out.append(line if len(line) <= WIDTH else
                   textwrap.fill(line.strip(), WIDTH, initial_indent='  ',
                                 subsequent_indent='      '))
    cells = same = 0
    for src in (figs, whole):
        for case in src.values():
            for e, s, f, b in case.values():
                if e != '-':
                    cells += 1
                    same += e == s
    if cells:
        mcols = list(next(iter(figs.values()), {}))
        ratios = [f / b for c in whole.values() for e, s, f, b in c.values()
                  if s == 'FAIL' and f and b]
        text = ('Kill matrix: every test on each of %d kernels and '
                'changes under QEMU (%s): %d of %d cells gave the verdict '
                'the mechanism predicts.' % (len(mcols), ', '.join(mcols),
                                             same, cells))
        if ratios:
            text += (' Without early stop, broken figures are %.1f to %.0f '
                     'times their bounds.' % (min(ratios), max(ratios)))
        out += ['', wrap(text)]
    out += ['', 'To run them, as root, on the tree with the series applied:',
            '',
            '  make -C tools/testing/selftests TARGETS=mm run_tests',
            '',
            'or only this category, as KernelCI runs it:', '',
            '  make -C tools/testing/selftests TARGETS=mm INSTALL_PATH=/tmp/ksft install',
            '  /tmp/ksft/run_kselftest.sh -t mm:ksft_readahead.sh',
            '',
            'or one test: cd tools/testing/selftests/mm && ./readahead_descending',
            '(-l lists the cases, -r fixture.variant.test runs one).']
    return 'selftests/mm: mmap readahead regression tests', '\n'.join(out)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == 'helpers':
        subj, body = helpers_changelog()
    elif sys.argv[1] == 'test' and len(sys.argv) == 3:
        subj, body = test_changelog(sys.argv[2])
    elif sys.argv[1] == 'cover':
        args = sys.argv[2:]
        cut = args.index('--') if '--' in args else len(args)
        subj, body = cover(args[:cut], args[cut + 1:])
    else:
        sys.exit(__doc__)
    print(subj)
    print()
    print(body)


if __name__ == '__main__':
    main()
