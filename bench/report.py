#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn bench/run-jobs.sh logs into bench/RESULTS.md and a gnuplot chart.

usage: report.py --results FILE --chart FILE.png [--command CMD] LOG...

Each LOG is one kernel's output as bench/bench.sh saves it: a first line
"@@bench-label <name> <how>", then run-jobs.sh's records. Per workload
and kernel: major faults (fio's majf, summed over a section's jobs), MiB
read from the loop device, and the fio runtime as a ratio to the first
kernel of the same kind (QEMU or host) that ran the workload: under TCG
absolute times mean little, and host and guest times are not comparable.
Per phase of a sqlite3 job and kernel: sqlite3's major faults, MiB read
and the phase's wall time as the same kind of ratio, in a table of their
own.

A fio record is a "@@bench-run" line of key=value fields, fio's JSON and
a "@@bench-end" line; a damaged one (cut short, bad header, bad JSON, a
fio error) is skipped with a warning on stderr. A sqlite3 record is one
"@@bench-sqlite" line of key=value fields, skipped the same way when a
field is missing or bad. Kernels that did not run, or not every
workload, are listed with the last error line of their log. The chart
shows the fio workloads; without any, it is not written.

Exit status: 0 written; 1 no results in any log; 3 a log, RESULTS.md or
the chart could not be read or written.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ('fs', 'ra_kb', 'job', 'read_ios', 'read_sectors')
SQL_FIELDS = ('fs', 'ra_kb', 'job', 'phase', 'rows', 'majflt', 'read_ios',
              'read_sectors', 'wall_ms', 'db_bytes', 'sqlite')


class Fatal(Exception):
    """An error that ends the report with one line and status 3."""


def warn(msg):
    print(f'report.py: {msg}', file=sys.stderr)


def records(text):
    """Yield (header, body, problem) per record; problem None when whole."""
    head, body = None, []
    for line in text.split('\n'):
        if line.startswith('@@bench-run'):
            if head is not None:
                yield head, None, 'cut short (no @@bench-end)'
            head, body = line[len('@@bench-run'):], []
        elif line == '@@bench-end' and head is not None:
            yield head, '\n'.join(body), None
            head = None
        elif head is not None:
            body.append(line)
    if head is not None:
        yield head, None, 'cut short at the end of the log'


def parse_run(head, body):
    """Return (key, figures) of a record, or raise ValueError."""
    kv = fields(head)
    missing = [k for k in FIELDS if k not in kv]
    if missing:
        raise ValueError('no ' + ', '.join(missing))
    try:
        data = json.loads(body)
    except ValueError as e:
        raise ValueError(f'bad JSON ({e})') from None
    jobs = data.get('jobs') if isinstance(data, dict) else None
    if not jobs:
        raise ValueError('no jobs in the JSON')
    errs = [j.get('error') for j in jobs if j.get('error')]
    if errs:
        raise ValueError(f'fio error {errs[0]}')
    try:
        figures = {
            'majf': sum(int(j['majf']) for j in jobs),
            'mib': int(kv['read_sectors']) * 512 / 2**20,
            'ios': int(kv['read_ios']),
            'ms': max(int(j['job_runtime']) for j in jobs),
        }
        key = (kv['job'], kv['fs'], int(kv['ra_kb']))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f'bad figure ({e!r})') from None
    return key, figures


def fields(head):
    """The key=value fields of a record line, or raise ValueError."""
    kv = {}
    for field in head.split():
        if '=' not in field:
            raise ValueError(f"bad field '{field}'")
        k, v = field.split('=', 1)
        kv[k] = v
    return kv


def parse_sql(head):
    """Return (key, figures) of a @@bench-sqlite line, or raise ValueError."""
    kv = fields(head)
    missing = [k for k in SQL_FIELDS if k not in kv]
    if missing:
        raise ValueError('no ' + ', '.join(missing))
    try:
        figures = {
            'majf': int(kv['majflt']),
            'mib': int(kv['read_sectors']) * 512 / 2**20,
            'ios': int(kv['read_ios']),
            'ms': int(kv['wall_ms']),
            'rows': int(kv['rows']),
            'db_mib': int(kv['db_bytes']) / 2**20,
            'sqlite': kv['sqlite'],
        }
        key = (kv['job'], kv['fs'], int(kv['ra_kb']), kv['phase'])
    except ValueError as e:
        raise ValueError(f'bad figure ({e})') from None
    return key, figures


def parse_log(path):
    """Return (label, how, release, {workload: figures}, {sqlite phase:
    figures}, [load], error, number of bad records)."""
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
    except OSError as e:
        raise Fatal(f'cannot read {path}: {e.strerror}') from None
    m = re.search(r'^@@bench-label (\S+) (\S+)', text, re.M)
    label, how = (m.group(1), m.group(2)) if m else (os.path.basename(path), 'qemu')
    m = re.search(r'^@@bench-kernel (\S+)', text, re.M)
    release = m.group(1) if m else None
    load = re.findall(r'^@@bench-load (\S+)', text, re.M)
    # Why a kernel gave nothing: the last "program: message" line.
    errors = [e for e in re.findall(r'^[\w.-]+: .+$', text, re.M)
              if 'exited with status' not in e]
    runs_error = errors[-1] if errors else None
    runs = {}
    sql = {}
    bad = 0
    for line in re.findall(r'^@@bench-sqlite(.*)$', text, re.M):
        try:
            key, figures = parse_sql(line)
            sql[key] = figures
        except ValueError as e:
            m = re.search(r'(?:^|\s)phase=(\S*)', line)
            warn(f"{path}: sqlite phase {m.group(1) if m else '?'}: {e}, skipped")
            bad += 1
    for head, body, problem in records(text):
        if problem is None:
            try:
                key, figures = parse_run(head, body)
                runs[key] = figures
                continue
            except ValueError as e:
                problem = str(e)
        m = re.search(r'(?:^|\s)job=(\S*)', head)
        job = m.group(1) if m else '?'
        warn(f'{path}: job {job}: {problem}, skipped')
        bad += 1
    return label, how, release, runs, sql, load, runs_error, bad


def partly_why(k, order, sql_order):
    """What a kernel that ran only partly lacks, and its last error."""
    why = []
    if len(k['runs']) < len(order):
        why.append(f"{len(order) - len(k['runs'])} of {len(order)} "
                   'workloads missing')
    if len(k['sql']) < len(sql_order):
        why.append(f"{len(sql_order) - len(k['sql'])} of {len(sql_order)} "
                   'sqlite3 phases missing')
    if k['bad']:
        why.append(f"{k['bad']} damaged record{'s' if k['bad'] > 1 else ''}")
    if k['error']:
        why.append(f"`{k['error']}`")
    return ', '.join(why)


def workload_order(kernels, what='runs'):
    """Workloads (or sqlite3 phases) in the order of the first log that
    has them."""
    order = []
    for k in kernels:
        for key in k[what]:
            if key not in order:
                order.append(key)
    return order


def commit():
    """Short hash of the checkout's HEAD, "-dirty" when it has changes."""
    def git(*argv):
        return subprocess.run(['git', '-C', TOP, *argv], capture_output=True,
                              text=True, check=False)
    try:
        head = git('rev-parse', '--short', 'HEAD')
        if head.returncode:
            return 'unknown'
        dirty = git('diff', '--quiet', 'HEAD').returncode != 0
    except OSError:
        return 'unknown'
    return head.stdout.strip() + ('-dirty' if dirty else '')


def wname(key):
    job, fs, ra = key
    return f'{job} {fs} ra{ra}'


def fmt_mib(v):
    return f'{v:.0f}' if v >= 10 else f'{v:.1f}'


def table(kernels, order, cell):
    head = '| workload | ' + ' | '.join(k['col'] for k in kernels) + ' |'
    rule = '|---|' + '---:|' * len(kernels)
    rows = [head, rule]
    for key in order:
        cells = []
        for k in kernels:
            r = k['runs'].get(key)
            cells.append(cell(k, key, r) if r else '-')
        rows.append(f'| {wname(key)} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(rows)


def ratio_cell(kernels, what='runs'):
    """Runtime ratio to the first kernel of the same kind with the workload."""
    def cell(k, key, r):
        for ref in kernels:
            if ref['how'] == k['how'] and key in ref[what]:
                base = ref[what][key]['ms']
                break
        if base <= 0:
            return '-'
        return f"{r['ms'] / base:.2f}"
    return cell


def sql_section(kernels, order):
    """The sqlite3 job's table: a row per kernel and phase."""
    first = next(k['sql'][key] for k in kernels for key in order
                 if key in k['sql'])
    jobs = sorted({key[0] for key in order})
    setups = sorted({(key[1], key[2]) for key in order})
    out = ['## SQLite: point lookups, then a full scan\n']
    out.append(
        f"Debian's sqlite3 ({first['sqlite']}) in one process reads a "
        f"{first['db_mib']:.0f} MiB table (one 4000-byte row per 4 KiB page) "
        'through a mapping of the whole database file (`PRAGMA mmap_size`), '
        'on ' + ', '.join(f'{fs} at `read_ahead_kb` {ra}' for fs, ra in setups)
        + ', from a cold page cache: `lookups`, 300 point lookups by '
        'rowid, then `scan`, a full scan in key order ('
        + ', '.join(f'`jobs/{j}.sql`' for j in jobs) + '). Major faults are '
        "sqlite3's own (`/proc/<pid>/stat`) and MiB read the loop device's, "
        'per phase; time is the phase\'s wall time divided by that of the '
        'first kernel of the same kind (QEMU or host).\n')
    out.append('Expected: on a healthy kernel the scan gets readahead, a major '
               'fault only where it comes out of a range the lookups left '
               'cached (a few hundred, for 100000 pages), and the two phases '
               'read the table about once; where `mmap_miss` sticks after the '
               'lookups (7.2, 7.3) the scan takes one major fault, and one '
               'read, for most of its pages.\n')
    multi = len(jobs) > 1 or len(setups) > 1
    head = ('| kernel | ' + ('job | ' if multi else '') + 'phase | rows | '
            'major faults | MiB read | device reads | time ratio |')
    rows = [head, '|---|' + ('---|' if multi else '') + '---|' + '---:|' * 5]
    ratio = ratio_cell(kernels, 'sql')
    for k in kernels:
        for key in order:
            r = k['sql'].get(key)
            if not r:
                continue
            job = f'{key[0]} {key[1]} ra{key[2]} | ' if multi else ''
            rows.append(f"| {k['col']} | {job}{key[3]} | {r['rows']} | "
                        f"{r['majf']} | {fmt_mib(r['mib'])} | {r['ios']} | "
                        f"{ratio(k, key, r)} |")
    out.append('\n'.join(rows))
    return out


def write_chart(kernels, order, chart):
    """Two panels of clustered bars: MiB read and major faults."""
    # read() jobs take no major faults: no panel of faults without any.
    faults = any(r['majf'] for k in kernels for r in k['runs'].values())
    fd, data = tempfile.mkstemp(suffix='.dat')
    with os.fdopen(fd, 'w') as f:
        for key in order:
            vals = []
            for k in kernels:
                r = k['runs'].get(key)
                vals += [f"{r['mib']:.2f}", str(r['majf'])] if r else ['NaN', 'NaN']
            f.write('"%s" %s\n' % (wname(key), ' '.join(vals)))
    n = len(kernels)
    def plot(col):
        parts = []
        for i, k in enumerate(kernels):
            c = 2 + 2 * i + col
            title = k['col'].replace('_', '\\\\_')
            xt = ':xtic(1)' if i == 0 else ''
            parts.append(f"'{data}' using (${c} > 0 ? ${c} : 1/0){xt} title \"{title}\"")
        return 'plot ' + ', '.join(parts)
    width = max(1200, 60 * len(order) * max(n, 2) // 2 + 200)
    faults_panel = f"""set ylabel 'major faults'
set yrange [0.5:*]
set title 'major faults (fio majf, log scale)'
{plot(1)}""" if faults else ''
    script = f"""
set terminal pngcairo size {width},{1100 if faults else 550} font ",10"
set output '{chart}'
set multiplot layout {2 if faults else 1},1
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set grid ytics
set key top left
set xtics rotate by -35 font ",9"
set bmargin 7
set ylabel 'MiB read from the device'
set title 'fio mmap workloads: MiB read from the loop device (log scale)'
{plot(0)}
{faults_panel}
unset multiplot
"""
    try:
        # A set output that fails leaves the PNG on stdout.
        p = subprocess.run(['gnuplot'], input=script, text=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           check=False)
    except OSError as e:
        raise Fatal(f'cannot run gnuplot: {e.strerror}') from None
    finally:
        os.unlink(data)
    said = [line.strip() for line in p.stderr.splitlines() if line.strip()]
    if p.returncode:
        raise Fatal(f'gnuplot failed on {chart}: '
                    f"{said[-1] if said else f'status {p.returncode}'}")
    sys.stderr.write(p.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--results', required=True)
    ap.add_argument('--chart', required=True)
    ap.add_argument('--command', default='make bench')
    ap.add_argument('logs', nargs='+')
    args = ap.parse_args()

    try:
        return report(args)
    except Fatal as e:
        warn(str(e))
        return 3
    except OSError as e:
        warn(f'{e.filename}: {e.strerror}' if e.filename else str(e))
        return 3


def report(args):
    """Write RESULTS.md and the chart from the logs; the exit status."""
    kernels = []
    for path in args.logs:
        label, how, release, runs, sql, load, error, bad = parse_log(path)
        # 6.18.15+deb13-cloud-amd64 -> 6.18.15
        short = re.split(r'[+-]', release)[0] if release else None
        col = label if not short or short == label else f'{label} ({short})'
        if how == 'host':
            col = f'host {short}' if short else 'host'
        kernels.append({'label': label, 'how': how, 'release': release,
                        'runs': runs, 'sql': sql, 'col': col, 'load': load,
                        'error': error, 'bad': bad})
    ran = [k for k in kernels if k['runs'] or k['sql']]
    missing = [k for k in kernels if not k['runs'] and not k['sql']]
    if not ran:
        warn('no results in the logs ' + ', '.join(args.logs))
        return 1
    order = workload_order(ran)
    sql_order = workload_order(ran, 'sql')
    partly = [k for k in ran if k['bad'] or len(k['runs']) < len(order)
              or len(k['sql']) < len(sql_order)]
    fio_ran = [k for k in ran if k['runs']]

    out = []
    out.append(f'Generated by `{args.command}` at commit {commit()} on '
               f"{time.strftime('%Y-%m-%d', time.gmtime())}; "
               'do not edit by hand.\n')
    out.append('# Bench workloads: readahead cost per kernel\n')
    chart = ('; the chart is '
             f'[{os.path.basename(args.chart)}]({os.path.basename(args.chart)})'
             if order else '')
    out.append('Written by `bench/report.py` from the logs of that run'
               f'{chart}. '
               'Workloads are the job files in `jobs/` (section, '
               'filesystem, `read_ahead_kb` of the loop device); `jobs/plan` '
               'says which runs where. "host" ran natively, every other '
               'kernel in QEMU (TCG, 2 vCPUs, 2 GiB).\n')
    if missing:
        out.append('Did not run: ' + '; '.join(
            f"{k['label']} (`{k['error'] or 'no output'}`)"
            for k in missing) + '.\n')
    if partly:
        out.append('Ran only partly: ' + '; '.join(
            f"{k['label']} ({partly_why(k, order, sql_order)})"
            for k in partly) + '.\n')
    if order:
        out.append('## Major faults\n')
        out.append('fio\'s `majf`, summed over the jobs of a section.\n')
        out.append(table(fio_ran, order, lambda k, key, r: str(r['majf'])))
        out.append('\n## MiB read from the device\n')
        out.append('Read sectors of the loop device across the fio run '
                   '(`/sys/block/<dev>/stat`), in MiB.\n')
        out.append(table(fio_ran, order, lambda k, key, r: fmt_mib(r['mib'])))
        out.append('\n## Time, as a ratio\n')
        out.append('fio\'s job runtime divided by that of the first kernel of '
                   'the same kind (QEMU or host) in this run; only ratios '
                   'between kernels of one run mean something.\n')
        out.append(table(fio_ran, order, ratio_cell(fio_ran)))
    if sql_order:
        if order:
            out.append('')
        out += sql_section([k for k in ran if k['sql']], sql_order)
    loads = [f"{k['col']} {' to '.join(k['load'])}" for k in ran if k['load']]
    if loads:
        out.append('\nThe host\'s 1-minute load average before and after each '
                   'kernel (other work shares the CPUs; time ratios move '
                   'with it): ' + '; '.join(loads) + '.')
    out.append('')
    try:
        with open(args.results, 'w', encoding='utf-8') as f:
            f.write('\n'.join(out))
    except OSError as e:
        raise Fatal(f'cannot write {args.results}: {e.strerror}') from None
    if order:
        write_chart(fio_ran, order, args.chart)
        print(f'# wrote {args.results} and {args.chart}')
    else:
        print(f'# wrote {args.results} (no fio results: {args.chart} not written)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
