#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The plan of the readahead patch series, and the payload of each stage.

  series_plan.py plan            the series, one block each: "series NAME
                                 [FIX-COLUMN]", "onto base" for one that
                                 applies on the pristine tree, its kernel
                                 patches ("patch FILE"), its tests ("test
                                 NAME")
  series_plan.py stage DIR [--ext4-xfs] [TEST...]
                                 the payload with only those tests: DIR/
                                 selftests-mm, lib, config,
                                 run_vmtests-snippet.sh and scripts/
                                 install-in-tree.sh, with the lib's
                                 functions, types and macros they use;
                                 without a test, the lib has what every
                                 test uses (the category's patch); with
                                 --ext4-xfs, without the MORE_FS kinds,
                                 their variants, code and config lines
                                 (the first series before its patch of
                                 other filesystems)
  series_plan.py verdicts        the check of each series' verdicts in
                                 verdicts/expected.tsv; prints one line
                                 per problem and exits 1 on any

The plan follows verdicts/expected.tsv and validation/configurations. A
test file goes into the first series when no case of it fails on a
pristine 7.3 column (v7.3, debian-7.3, v7.3-arm64-64k, ...), LEADER
first (it comes with the category), unless it pins a rule of the code
(PINNED: a series of its own after the fixes). Otherwise it goes with
the fix whose columns (v7.3+<fix>, v7.3-arm64-64k+<fix>) pass all its
cases: the fixes are the configurations whose patches are all on the
v7.3+fixes line, in that line's order, then those of CHANGES; fixes
whose first patch is the same make one series, with the longer list of
patches (a patch built on another's helper). A skip counts as a pass on a fix
column only where the pristine column of the same machine skips too
(the hardware, not the fix). A test that no fix makes pass is reported
and left out. mm's own tests with our cases (selftests-mm/*.patch) are
postings of their own, on the pristine tree, without the category.
"""
import os
import re
import shutil
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST = 'selftests'
# The test that comes with the category: a plain outcome (major faults of
# a reader), whatever the order of the others.
LEADER = 'readahead_vma_boundary'
# Tests that pin a rule of the kernel's code rather than a promise to
# programs, each named in its header: series of their own, on the first,
# without a kernel change, after the fixes.
PINNED = {'readahead_exec_mapping': 'exec-read-around',
          'readahead_exec_random': 'exec-read-around',
          'readahead_thp_refault': 'mmap-miss-gates',
          'readahead_thrash_locked': 'mmap-miss-gates',
          'readahead_thrash_workingset': 'mmap-miss-gates'}

# Kernel changes of behaviour, not fixes: never on the v7.3+fixes line,
# each posted as a series of its own after the fixes, with its tests.
CHANGES = ['fadv-random-mmap.patch']

# The filesystems after ext4 and XFS: what only their kinds use (names in
# lib/ and the tests, the header only they need, their config options).
# The first series adds them in a patch of its own after its tests.
MORE_FS = {'ra_btrfs_4k', 'ra_f2fs_4k', 'own_bdi_ra', 'page_blocks'}
MORE_FS_TYPES = ('btrfs', 'f2fs')
MORE_FS_HEADERS = {'glob.h': 'glob', 'sys/sysmacros.h': 'major'}
MORE_FS_CONFIG = re.compile(r'^(CONFIG_(%s)_FS=|#.*\b(%s)\b)' % (
    '|'.join(t.upper() for t in MORE_FS_TYPES), '|'.join(MORE_FS_TYPES)))


def table():
    """Expected verdicts: column names and {case: {column: verdict}}."""
    cols, rows = [], {}
    for line in open(os.path.join(TOP, 'verdicts', 'expected.tsv')):
        if line.startswith('#') or not line.strip():
            continue
        f = line.rstrip('\n').split('\t')
        if f[0] == 'test':
            cols = f[1:]
            continue
        rows[f[0]] = dict(zip(cols, f[1:]))
    return cols, rows


def base_columns(cols):
    """The pristine 7.3 columns: released kernels and linux-source-7.3."""
    return [c for c in cols if '+' not in c and
            re.match(r'^(v|debian-)7\.3(-|$)', c)]


def configurations():
    """validation/configurations: [(column, [patch, ...])]."""
    out = []
    path = os.path.join(TOP, 'validation', 'configurations')
    for line in open(path):
        if line.startswith('#') or ':' not in line:
            continue
        col, _, patches = line.partition(':')
        out.append((col.strip(), patches.split()))
    return out


def fixes():
    """[(fix column, [patch, ...])] in the order of the v7.3+fixes line."""
    confs = configurations()
    every = dict(confs).get('v7.3+fixes', []) + CHANGES
    found = [(c, p) for c, p in confs
             if not c.startswith('v7.3+fixes') and p and set(p) <= set(every)]
    return sorted(found, key=lambda cp: every.index(cp[1][0]))


def fix_columns(fix, cols):
    """The columns of a fix: each pristine 7.3 column with it applied."""
    change = fix.split('+', 1)[1]
    base = base_columns(cols)
    return [c for c in cols if c.endswith('+' + change) and
            c[:-len(change) - 1] in base]


def patched(name):
    """True for mm's own test with this project's cases:
    selftests-mm/<name>.patch."""
    return os.path.exists(os.path.join(TOP, 'selftests-mm', name + '.patch'))


def source(name):
    """A test's source; of a patched mm test, the lines its patch adds."""
    d = os.path.join(TOP, 'selftests-mm')
    if not patched(name):
        return open(os.path.join(d, name + '.c')).read()
    return '\n'.join(ln[1:] for ln in open(os.path.join(d, name + '.patch'))
                     .read().split('\n')
                     if ln.startswith('+') and not ln.startswith('+++'))


def test_names():
    d = os.path.join(TOP, 'selftests-mm')
    return sorted(f.rsplit('.', 1)[0] for f in os.listdir(d)
                  if f.endswith('.c') or f.endswith('.patch'))


def fixture_of(name):
    m = re.search(r'^FIXTURE\((\w+)\)', source(name), re.M)
    return m.group(1) if m else name.replace('readahead_', '')


def variants_of(name):
    return re.findall(r'^FIXTURE_VARIANT_ADD\(\w+,\s*(\w+)\)',
                      source(name), re.M)


def tests_of(name):
    return re.findall(r'^TEST_F(?:_TIMEOUT)?\(\w+,\s*(\w+)', source(name),
                      re.M)


def cases_of(name, rows):
    """The cases of a test file, as expected.tsv names them (FIXTURE.TEST
    where the fixture has no variants)."""
    fx = fixture_of(name)
    if not variants_of(name):
        return sorted(c for c in ('%s.%s' % (fx, t) for t in tests_of(name))
                      if c in rows)
    return sorted(c for c in ('%s.%s.%s' % (fx, v, t)
                              for v in variants_of(name)
                              for t in tests_of(name))
                  if c in rows)


def passes(verdicts, col, cols):
    """True when a case passes on a fix column (see the header on skips)."""
    v = verdicts.get(col)
    if v == 'ok':
        return True
    if v != 'skip':
        return False
    base = col.split('+', 1)[0]
    return base in cols and verdicts.get(base) == 'skip'


def plan():
    """[(series, fix column or None, [patch], [(test, None)])], and the
    problems found (tests left out)."""
    cols, rows = table()
    base = base_columns(cols)
    fx = fixes()
    first, own = [], []
    pinned = {}
    per_fix = {f: [] for f, _ in fx}
    problems = []
    for name in test_names():
        cases = cases_of(name, rows)
        if patched(name):
            own.append((own_series(name), None, [], [(name, None)]))
            continue
        if not any(rows[c].get(b) == 'FAIL' for c in cases for b in base):
            if name in PINNED:
                pinned.setdefault(PINNED[name], []).append((name, None))
            else:
                first.append((name, None))
            continue
        home = [f for f, _ in fx
                if all(passes(rows[c], col, cols)
                       for col in fix_columns(f, cols) for c in cases)]
        if not home:
            problems.append('%s: fails on 7.3 and no fix makes it pass '
                            '(%s)' % (name, ', '.join(cases)))
            continue
        per_fix[home[0]].append((name, None))
    first.sort(key=lambda t: (t[0] != LEADER, t[0]))
    out = [(FIRST, None, [], first)]
    for f, patches in fx:
        if not per_fix[f]:
            continue
        if out[-1][0] == series_name(f):
            # One series: the longer patch list, its column, both tests.
            _, g, more, tests = out[-1]
            if len(patches) < len(more):
                f, patches = g, more
            out[-1] = (series_name(f), f, patches, tests + per_fix[f])
        else:
            out.append((series_name(f), f, patches, per_fix[f]))
    out += [(n, None, [], t) for n, t in sorted(pinned.items())]
    return out + own, problems


def own_series(name):
    """The series of mm's own test with our cases: a posting of its own,
    on the pristine tree."""
    return name.replace('_', '-')


def onto(series):
    """What a series applies on: 'base' (the pristine tree) or FIRST."""
    return 'base' if series in (own_series(t) for t in test_names()
                                if patched(t)) else FIRST


def series_name(fix):
    """A series' directory name: its fix's first patch, without .patch."""
    return dict(fixes())[fix][0][:-len('.patch')]


# --- the payload of a stage: only what its tests use ---------------------

IDENT = re.compile(r'[A-Za-z_]\w*')
PREPROC_KEEP = re.compile(r'^#\s*(if|ifdef|ifndef|else|elif|endif|include|'
                          r'undef|pragma|error)\b')


def strip_code(text):
    """Comments and string literals out: what code refers to."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    return re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', ' ', text)


def code_of(line, state):
    """A line without its comments and literals; state[0] is true inside
    a comment that runs on from an earlier line."""
    out, i = [], 0
    while i < len(line):
        if state[0]:
            k = line.find('*/', i)
            if k < 0:
                return ''.join(out)
            state[0], i = False, k + 2
        elif line.startswith('/*', i):
            state[0], i = True, i + 2
        elif line.startswith('//', i):
            break
        elif line[i] in '"\'':
            q, i = line[i], i + 1
            while i < len(line) and line[i] != q:
                i += 2 if line[i] == '\\' else 1
            i += 1
        else:
            out.append(line[i])
            i += 1
    return ''.join(out)


def units(lines):
    """Split a C file into units: (first line, last line, kind, defined
    names, referenced names, group number). A unit is a statement with
    the comments right above it; blank lines separate groups."""
    out = []
    i, n, group = 0, len(lines), 0
    pending = None
    while i < n:
        line = lines[i]
        if not line.strip():
            group += 1
            i += 1
            continue
        start = i if pending is None else pending
        if line.lstrip().startswith('/*') or line.lstrip().startswith('//'):
            if pending is None:
                pending = i
            while i < n and '*/' not in lines[i] and \
                    not lines[i].lstrip().startswith('//'):
                i += 1
            i += 1
            continue
        if not out and start < i:
            # The file's head (SPDX line, comment) stays as it is.
            out.append((start, i - 1, 'keep', set(), set(), group))
            start = i
        pending = None
        if line.startswith('#'):
            j = i
            while lines[j].endswith('\\') and j + 1 < n:
                j += 1
            text = '\n'.join(lines[i:j + 1])
            m = re.match(r'#\s*define\s+(\w+)', text)
            if m and not re.fullmatch(r'_[A-Z0-9_]*SOURCE', m.group(1)):
                kind, defs = 'define', {m.group(1)}
                refs = set(IDENT.findall(strip_code(text[m.end():])))
            else:
                kind, defs = 'keep', set()
                refs = set(IDENT.findall(strip_code(text)))
            out.append((start, j, kind, defs, refs, group))
            i = j + 1
            continue
        # A declaration or definition: to ';' at depth 0, or to the '}'
        # that closes a body opened at depth 0 when no '=' precedes it.
        j, depth, seen_eq, code, state = i, 0, False, [], [False]
        while j < n:
            c = code_of(lines[j], state)
            code.append(c)
            end = False
            for ch in c:
                if ch in '({[':
                    depth += 1
                elif ch in ')}]':
                    depth -= 1
                    if ch == '}' and depth == 0 and not seen_eq:
                        end = True
                elif ch == '=' and depth == 0:
                    seen_eq = True
                elif ch == ';' and depth == 0:
                    end = True
            if end:
                break
            j += 1
        text = '\n'.join(code)
        top, d = [], 0
        for tok in re.finditer(r'[A-Za-z_]\w*|[^\sA-Za-z_]', text):
            t = tok.group(0)
            if t in '({[':
                if d == 0:
                    top.append(t)
                d += 1
            elif t in ')}]':
                d -= 1
            elif d == 0:
                top.append(t)
        # What an initializer names (after '=') is used, not defined.
        head = top[:top.index('=')] if '=' in top else top
        defs = {head[k] for k in range(len(head) - 1)
                if IDENT.fullmatch(head[k]) and head[k + 1] in '(={,;['}
        if '=' in top and head and IDENT.fullmatch(head[-1]):
            defs.add(head[-1])
        m = re.match(r'\s*(?:typedef\s+)?(?:struct|union|enum)\s+(\w+)\s*\{',
                     text)
        if m:
            defs.add(m.group(1))
        refs = set(IDENT.findall(text)) - defs
        out.append((start, j, 'decl', defs, refs, group))
        i = j + 1
    return out


def lib_files():
    d = os.path.join(TOP, 'lib')
    return sorted(f for f in os.listdir(d) if re.search(r'\.[ch]$', f))


def without(lines, names, lib=True, keep=()):
    """Lines without the statements that name one of names: in a body
    (indented) in the lib, FIXTURE_VARIANT_ADD lines in a test (lib
    false), each with a one-line comment on MORE_FS_TYPES right above
    it; keep: the indexes of lines left as they are."""
    out, i, state = [], 0, [False]
    while i < len(lines):
        code = code_of(lines[i], [state[0]])
        named = set(IDENT.findall(code)) & names
        if named and i not in keep and (
                lines[i].startswith('\t') and lib or
                lines[i].startswith('FIXTURE_VARIANT_ADD')):
            depth = 0
            while True:
                c = code_of(lines[i], state).rstrip()
                depth += sum(c.count(x) for x in '([{') - \
                    sum(c.count(x) for x in ')]}')
                i += 1
                if depth <= 0 and (c.endswith(';') or c.endswith('}')) \
                        or i >= len(lines):
                    break
            if out and re.fullmatch(r'/\*.*\*/', out[-1]) and \
                    re.search(r'\b(%s)\b' % '|'.join(MORE_FS_TYPES),
                              out[-1]):
                out.pop()
            continue
        code_of(lines[i], state)
        out.append(lines[i])
        i += 1
    return out


def ext4_xfs_only(text):
    """A test's source without the MORE_FS kinds: their variants, and
    their entries in the kinds main() makes."""
    text = '\n'.join(without(text.split('\n'), MORE_FS, False))
    text = re.sub(r'[ \t\n]*&(%s),' % '|'.join(MORE_FS), '', text)
    # A list left ending in "...,\n\t\tNULL" ends on its last line.
    return re.sub(r',\n\t+NULL\b', ', NULL', text)


def lib_units(names=frozenset()):
    """{file: (lines, units)} of lib/; with names, without the
    statements in bodies that name them (the units stay the same)."""
    out = {}
    for f in lib_files():
        lines = open(os.path.join(TOP, 'lib', f)).read().split('\n')
        if names:
            # The units that define one of names go whole, not by line.
            keep = {i for u in units(lines) if u[3] & names
                    for i in range(u[0], u[1] + 1)}
            lines = without(lines, names, True, keep)
        out[f] = (lines, units(lines))
    return out


def needed(libs, roots, where=None):
    """The (file, unit index) pairs that roots need, transitively. A
    static definition is seen from its own file only, and hides the
    others of its name there."""
    by_name = {}
    for f, (lines, us) in libs.items():
        for k, u in enumerate(us):
            local = lines[u[0]:u[1] + 1]
            static = f.endswith('.c') and \
                any(ln.startswith('static ') for ln in local)
            # A GNU attribute is not a name a unit defines.
            for name in u[3] - {'__attribute__'}:
                by_name.setdefault(name, []).append((f, k, static))
    keep, todo = set(), [(where, name) for name in roots]
    seen = set()
    while todo:
        where, name = todo.pop()
        if (where, name) in seen:
            continue
        seen.add((where, name))
        defs = by_name.get(name, [])
        own = [d for d in defs if d[0] == where and d[2]]
        for f, k, _ in own or [d for d in defs if not d[2]]:
            if (f, k) not in keep:
                keep.add((f, k))
                todo.extend((f, ref) for ref in libs[f][1][k][4])
    return keep


def slice_file(lines, us, keep_idx):
    """The file with only the kept units (and what always stays)."""
    kept = [False] * len(us)
    for k, u in enumerate(us):
        kept[k] = u[2] == 'keep' or k in keep_idx
    drop = set()
    for k, u in enumerate(us):
        if kept[k]:
            continue
        start = u[0]
        first_of_group = k == 0 or us[k - 1][5] != u[5]
        later = any(kept[m] for m in range(k + 1, len(us))
                    if us[m][5] == u[5])
        # A plain comment heading a group stays with the group.
        if first_of_group and later and lines[start].startswith('/* '):
            while '*/' not in lines[start]:
                start += 1
            start += 1
        drop.update(range(start, u[1] + 1))
    out = [ln for i, ln in enumerate(lines) if i not in drop]
    text = '\n'.join(out)
    # Conditional blocks left empty, then runs of blank lines.
    text = re.sub(r'\n#if(n?def)? [^\n]*\n(\n)*#endif[^\n]*\n', '\n', text)
    text = re.sub(r'\n{3,}', '\n\n', text)
    return text


def has_api(us, keep_idx, used):
    """True when a test uses something of the file (not only what stays
    throughout, as its include guard)."""
    return any(k in keep_idx and k in used for k in range(len(us)))


def stage(dest, chosen, ext4_xfs=False):
    """chosen: the names of the tests; ext4_xfs: without MORE_FS."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    for d in ('selftests-mm', 'lib', 'scripts'):
        os.makedirs(os.path.join(dest, d))
    roots = set()
    for t in chosen:
        text = source(t)
        if patched(t):
            shutil.copy2(os.path.join(TOP, 'selftests-mm', t + '.patch'),
                         os.path.join(dest, 'selftests-mm'))
        else:
            if ext4_xfs:
                text = ext4_xfs_only(text)
            open(os.path.join(dest, 'selftests-mm', t + '.c'),
                 'w').write(text)
        roots |= set(IDENT.findall(strip_code(text)))
    # What any test uses at all (allk) is seen on the whole lib, what a
    # stage keeps on the lib it is cut from: without MORE_FS, their units
    # are used by none of its tests and their statements are gone.
    whole = lib_units()
    libs = lib_units(MORE_FS) if ext4_xfs else whole
    every, common = set(), None
    for t in test_names():
        names = set(IDENT.findall(strip_code(source(t))))
        every |= names
        if ext4_xfs and not patched(t):
            names = set(IDENT.findall(strip_code(ext4_xfs_only(
                source(t)))))
        used = needed(libs, names)
        # The category's harness: what every test of the category uses
        # (mm's own tests with cases on the lib do not narrow it).
        if not patched(t):
            common = used if common is None else common & used
    allk = needed(whole, every)
    # A constructor or destructor runs with its file: it comes with the
    # file's first helper a test uses, never alone.
    hooks = {(f, k) for f, (lines, us) in libs.items()
             for k, u in enumerate(us)
             if re.search(r'__attribute__\(\((con|de)structor',
                          '\n'.join(lines[u[0]:u[1] + 1]))}
    # What no test uses (nothing would ever bring it in) stays throughout.
    for f, (_, us) in libs.items():
        for k, u in enumerate(us):
            if (f, k) not in allk and (f, k) not in hooks:
                roots |= u[3]
    keep = needed(libs, roots)
    # The category: what every test uses, directly or through the helpers
    # it calls, in every stage (a stage of mm's own test alone too).
    keep |= common or set()
    files = {f for f, k in keep if (f, k) in allk}
    for f, k in hooks:
        if f in files:
            keep |= {(f, k)} | needed(libs, libs[f][1][k][4], f)
    for f, (lines, us) in libs.items():
        idx = {k for g, k in keep if g == f}
        if has_api(us, idx, {k for g, k in allk if g == f}):
            # A slice that ends where a unit was left out ends with
            # its last kept line, not a blank one.
            text = slice_file(lines, us, idx).rstrip('\n') + '\n'
            for h, ident in MORE_FS_HEADERS.items():
                if ext4_xfs and not re.search(r'\b%s\(' % ident, text):
                    text = text.replace('#include <%s>\n' % h, '')
            open(os.path.join(dest, 'lib', f), 'w').write(text)
    for f in ('config', 'run_vmtests-snippet.sh',
              'scripts/install-in-tree.sh'):
        shutil.copy2(os.path.join(TOP, f), os.path.join(dest, f))
    if ext4_xfs:
        lines = open(os.path.join(TOP, 'config')).readlines()
        open(os.path.join(dest, 'config'), 'w').writelines(
            ln for ln in lines if not MORE_FS_CONFIG.match(ln))


def verdict_problems():
    """Each series' verdicts, as the header says."""
    cols, rows = table()
    base = base_columns(cols)
    series, problems = plan()
    first = [c for t, _ in series[0][3] for c in cases_of(t, rows)]
    for name, fix, _, tests in series:
        cases = [c for t, _ in tests for c in cases_of(t, rows)]
        if not cases:
            problems.append('%s: no case' % name)
        if not fix:
            # The first series and those without a kernel change.
            for c in cases:
                bad = [b for b in base if rows[c].get(b) == 'FAIL']
                if bad:
                    problems.append('%s: FAIL on %s, in series %s' %
                                    (c, ', '.join(bad), name))
            continue
        fcols = fix_columns(fix, cols)
        if not fcols:
            problems.append('%s: no column of %s' % (name, fix))
        for c in cases:
            for col in fcols:
                if not passes(rows[c], col, cols):
                    problems.append('%s: %s on %s' %
                                    (c, rows[c].get(col), col))
        for c in first:
            for col in fcols:
                if rows[c].get(col) == 'FAIL':
                    problems.append('%s (first series): FAIL on %s' %
                                    (c, col))
    return problems


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == 'plan':
        series, problems = plan()
        for name, fix, patches, tests in series:
            print('series %s%s' % (name, ' ' + fix if fix else ''))
            if onto(name) == 'base':
                print('onto base')
            for p in patches:
                print('patch %s' % p)
            for t, _ in tests:
                print('test %s' % t)
        for p in problems:
            print('problem %s' % p)
    elif cmd == 'stage' and len(sys.argv) >= 3:
        rest = sys.argv[3:]
        only = rest[:1] == ['--ext4-xfs']
        stage(sys.argv[2], rest[1:] if only else rest, only)
    elif cmd == 'verdicts':
        problems = verdict_problems()
        for p in problems:
            print(p)
        sys.exit(1 if problems else 0)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
