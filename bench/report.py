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
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

RUN_RE = re.compile(r'^@@bench-run ([^\n]*)\n(.*?)^@@bench-end$', re.S | re.M)


def parse_log(path):
    """Return (label, how, release, {workload: figures}, [load], error)."""
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    m = re.search(r'^@@bench-label (\S+) (\S+)', text, re.M)
    label, how = (m.group(1), m.group(2)) if m else (os.path.basename(path), 'qemu')
    m = re.search(r'^@@bench-kernel (\S+)', text, re.M)
    release = m.group(1) if m else None
    load = re.findall(r'^@@bench-load (\S+)', text, re.M)
    # Why a kernel gave nothing: the last "program: message" line.
    errors = [e for e in re.findall(r'^[\w.-]+: .+$', text, re.M)
              if 'exited with status' not in e]
    runs_error = errors[-1] if errors else 'no output'
    runs = {}
    for m in RUN_RE.finditer(text):
        kv = dict(f.split('=', 1) for f in m.group(1).split())
        try:
            data = json.loads(m.group(2))
        except ValueError:
            continue
        jobs = data.get('jobs', [])
        if not jobs or any(j.get('error') for j in jobs):
            continue
        key = (kv['job'], kv['fs'], int(kv['ra_kb']))
        runs[key] = {
            'majf': sum(j['majf'] for j in jobs),
            'mib': int(kv['read_sectors']) * 512 / 2**20,
            'ios': int(kv['read_ios']),
            'ms': max(j['job_runtime'] for j in jobs),
        }
    return label, how, release, runs, load, runs_error


def workload_order(kernels):
    """Workloads in the order of the first log that has them."""
    order = []
    for k in kernels:
        for key in k['runs']:
            if key not in order:
                order.append(key)
    return order


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


def ratio_cell(kernels):
    """Runtime ratio to the first kernel of the same kind with the workload."""
    def cell(k, key, r):
        for ref in kernels:
            if ref['how'] == k['how'] and key in ref['runs']:
                base = ref['runs'][key]['ms']
                break
        if base <= 0:
            return '-'
        return f"{r['ms'] / base:.2f}"
    return cell


def write_chart(kernels, order, chart):
    """Two panels of clustered bars: MiB read and major faults."""
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
    script = f"""
set terminal pngcairo size {width},1100 font ",10"
set output '{chart}'
set multiplot layout 2,1
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
set ylabel 'major faults'
set yrange [0.5:*]
set title 'major faults (fio majf, log scale)'
{plot(1)}
unset multiplot
"""
    try:
        subprocess.run(['gnuplot'], input=script, text=True, check=True)
    finally:
        os.unlink(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--results', required=True)
    ap.add_argument('--chart', required=True)
    ap.add_argument('--command', default='make bench')
    ap.add_argument('logs', nargs='+')
    args = ap.parse_args()

    kernels = []
    for path in args.logs:
        label, how, release, runs, load, error = parse_log(path)
        # 6.18.15+deb13-cloud-amd64 -> 6.18.15
        short = re.split(r'[+-]', release)[0] if release else None
        col = label if not short or short == label else f'{label} ({short})'
        if how == 'host':
            col = f'host {short}' if short else 'host'
        kernels.append({'label': label, 'how': how, 'release': release,
                        'runs': runs, 'col': col, 'load': load,
                        'error': error})
    ran = [k for k in kernels if k['runs']]
    missing = [k for k in kernels if not k['runs']]
    if not ran:
        print('report.py: no results in the logs', file=sys.stderr)
        return 1
    order = workload_order(ran)

    out = []
    out.append('# fio workloads: readahead cost per kernel\n')
    out.append('Written by `bench/report.py` from one run of '
               f'`{args.command}`; the chart is '
               f'[{os.path.basename(args.chart)}]({os.path.basename(args.chart)}). '
               'Workloads are the job files in `jobs/` (section, '
               'filesystem, `read_ahead_kb` of the loop device); `jobs/plan` '
               'says which runs where. "host" ran natively, every other '
               'kernel in QEMU (TCG, 2 vCPUs, 2 GiB).\n')
    if missing:
        out.append('Did not run: ' + '; '.join(
            f"{k['label']} (`{k['error']}`)" for k in missing) + '.\n')
    out.append('## Major faults\n')
    out.append('fio\'s `majf`, summed over the jobs of a section.\n')
    out.append(table(ran, order, lambda k, key, r: str(r['majf'])))
    out.append('\n## MiB read from the device\n')
    out.append('Read sectors of the loop device across the fio run '
               '(`/sys/block/<dev>/stat`), in MiB.\n')
    out.append(table(ran, order, lambda k, key, r: fmt_mib(r['mib'])))
    out.append('\n## Time, as a ratio\n')
    out.append('fio\'s job runtime divided by that of the first kernel of the '
               'same kind (QEMU or host) in this run; only ratios between '
               'kernels of one run mean something.\n')
    out.append(table(ran, order, ratio_cell(ran)))
    loads = [f"{k['col']} {' to '.join(k['load'])}" for k in ran if k['load']]
    if loads:
        out.append('\nThe host\'s 1-minute load average before and after each '
                   'kernel (other work shares the CPUs; time ratios move '
                   'with it): ' + '; '.join(loads) + '.')
    out.append('')
    with open(args.results, 'w', encoding='utf-8') as f:
        f.write('\n'.join(out))
    write_chart(ran, order, args.chart)
    return 0


if __name__ == '__main__':
    sys.exit(main())
