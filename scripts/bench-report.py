#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print the tables of a `make bench` run.

  bench-report.py DIR... [--other NAME --pair PROFILE OURS THEIRS ...]
                         [--cross-host NAME NODE0_DIR ...]
      DIR: one results folder per VM profile (build/bench/PROFILE); each --pair names one
      boot of ours and one of the other image (make bench COMPARE=); each --cross-host
      node0's folder of a two-guest run (tests/bench/cluster/)

Each guest benchmark writes a CSV file into its profile's folder; each section below
turns one kind of CSV into a table with the ratios between the modes measured side by
side in that run. A benchmark that wrote nothing is reported as missing (exit status 1).
"""
import argparse
import csv
import os
import re
import statistics
import sys


def read_csv(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def ratio(a, b):
    if not b:
        return 'n/a'
    r = a / b
    return f'{r:.2f}x' if r >= 0.1 else f'{r:.2g}x'


def table(intro, columns, rows):
    """Print intro, then rows under columns [(title, format spec)]; None shows as "-"."""
    print(intro.strip('\n'))
    print()
    width = [re.match(r'[<>](\d+)', spec) for _, spec in columns]
    head = ''.join(f'{t:{spec[0]}{w.group(1)}}' for (t, spec), w in zip(columns, width))
    print(head)
    print('-' * len(head))
    for row in rows:
        print(''.join(f'{"-":>{w.group(1)}}' if v is None else f'{v:{spec}}'
                      for v, (_, spec), w in zip(row, columns, width)))
    print()


def by_rep(csv_rows, key, value):
    """{key(row): {rep: value(row)}}: a repetition that failed in one way is missing there."""
    v = {}
    for r in csv_rows:
        v.setdefault(key(r), {})[int(r.get('rep') or 0)] = value(r)
    return v


def rep_spread(reps):
    return spread(list(reps.values()))


def rep_ratio(a, b):
    """ratio_spread() of the repetitions both ways measured, paired by their number."""
    both = sorted(set(a) & set(b))
    return ratio_spread([a[i] for i in both], [b[i] for i in both]) if both else None


def dma_map_section(runs):
    """runs: [(profile, rows of 10-dma-map.csv)]"""
    rows = []
    for profile, csv_rows in runs:
        cost = by_rep(csv_rows, lambda r: (int(r['pages']), r['mode']),
                      lambda r: float(r['map_ns_per_page']) + float(r['unmap_ns_per_page']))
        for pages in sorted({p for p, _ in cost}):
            page, iova, link = (cost.get((pages, m)) for m in ('pages', 'iova', 'iova-link'))
            rows.append((profile, pages, rep_spread(page) if page else None,
                         rep_spread(iova) if iova else None,
                         rep_ratio(page, iova) if page and iova else None,
                         rep_spread(link) if link else None,
                         rep_ratio(page, link) if page and link else None))
    table('''
DMA mapping cost per page, map + unmap, in ns (dma_map_benchmark on the edu device,
FROM_DEVICE, one thread): the median of the repetitions, the three ways taking turns,
with their range. "ratio" = dma_map_page cost / IOVA cost, repetition by repetition:
above 1 the IOVA-based API is cheaper per page.
  one by one:  dma_map_page() of each page, dma_unmap_page() of each page
  IOVA:        dma_iova_try_alloc(), dma_iova_link() of each page, one dma_iova_sync(),
               one dma_iova_destroy()
  preallocated: IOVA allocated once; link each page, one sync, one dma_iova_unlink()
''', [('profile', '<14'), ('pages', '>6'), ('one by one', '>24'), ('IOVA', '>24'),
      ('ratio', '>22'), ('preallocated', '>24'), ('ratio', '>22')], rows)


def hmm_dma_section(runs):
    """runs: [(profile, rows of 20-hmm-dma.csv)]"""
    rows = []
    for profile, csv_rows in runs:
        single = by_rep(csv_rows, lambda r: int(r['pages']),
                        lambda r: float(r['single_ns_per_page']))
        run = by_rep(csv_rows, lambda r: int(r['pages']), lambda r: float(r['run_ns_per_page']))
        for pages in sorted(single):
            rows.append((profile, pages, rep_spread(single[pages]), rep_spread(run.get(pages, {}))
                         if run.get(pages) else None, rep_ratio(single[pages], run.get(pages, {}))))
    table('''
HMM DMA helpers: mapping a faulted run of pages, in ns per page (test_hmm DMA mode
on the edu device), the median of the repetitions with their range. "single":
hmm_dma_map_pfn() per page, one IOTLB sync each; "run": one hmm_dma_map_pfns() for the
run, one sync. "ratio" = single / run, repetition by repetition.
''', [('profile', '<14'), ('pages', '>6'), ('single', '>24'), ('run', '>24'),
      ('ratio', '>22')], rows)


def odp_reps(csv_rows):
    """{(section, metric, memory, size): ([value of each repetition], unit)} of odp-bench's CSV"""
    def key(r):
        return (r['section'], r['metric'], r['memory'], int(r['size_bytes']))

    units = {key(r): r['unit'] for r in csv_rows}
    return {k: ([reps[i] for i in sorted(reps)], units[k])
            for k, reps in by_rep(csv_rows, key, lambda r: float(r['value'])).items()}


def num(v):
    """A number in a few characters: 48.5, 1234, 12.1k, 3.81M."""
    if abs(v) >= 1e6:
        return f'{v / 1e6:.3g}M'
    if abs(v) >= 1e4:
        return f'{v / 1e3:.3g}k'
    return f'{v:.4g}' if abs(v) >= 1 else f'{v:.3g}'


def spread(vals):
    """'12.3 (11.9-13.0)': the median and the range of repetitions."""
    return f'{num(statistics.median(vals))} ({num(min(vals))}-{num(max(vals))})'


def ratio_spread(a, b):
    """Median and range of a[i] / b[i], the repetitions taken side by side."""
    r = [x / y for x, y in zip(a, b) if y]
    if not r:
        return 'n/a'
    return f'{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})'


ODP_PATHS = {
    'linked': '''
rxe On-Demand Paging against pinned memory, libibodp's odp-bench (RC loopback), ODP pages
linked into an IOVA on the NIC and reached through the IOMMU (rxe's default). ODP and
pinned take turns in one run; each cell is the median of the repetitions with their range.
registration: time to register (ODP maps nothing; pinned pins every page); first_touch:
pages per second of the first transfer, in 1 MiB messages, into (out of, for READ)
memory the device never touched; faults: ODP faults per MiB of it (one per MiB = one per
message); steady: 1 MiB WRITE bandwidth and 64-byte WRITE latency; invalidate: a WRITE
into present pages and an MADV_DONTNEED + WRITE cycle; prefetch: a first WRITE without
and after a synchronous PREFETCH_WRITE; memory: kernel memory per page of a 16 GiB ODP
MR (VmallocUsed growth; Linux 6.12 keeps 16 bytes, a PFN and a DMA address). "ratio" =
ODP / pinned, repetition by repetition.
''',
    'virtual-dma': '''
The same with rxe.odp_virt_dma=1: ODP pages used directly, with no DMA mapping (first
touch, steady state and kernel memory only).
''',
}


def odp_section(runs, path='linked'):
    """runs: [(profile, rows of odp-bench's CSV)] of one DMA path (ODP_PATHS)"""
    rows = []
    for profile, csv_rows in runs:
        v = odp_reps(csv_rows)
        for (section, metric, memory, size), (vals, unit) in v.items():
            if memory != 'odp':
                continue
            pinned = v.get((section, metric, 'pinned', size))
            rows.append((profile, f'{section} {metric}', size_text(size), unit, spread(vals),
                         spread(pinned[0]) if pinned else None,
                         ratio_spread(vals, pinned[0]) if pinned else None))
    table(ODP_PATHS[path], [('profile', '<14'), ('measurement', '<40'), ('size', '>6'),
                            ('unit', '>9'), ('ODP', '>26'), ('pinned', '>26'),
                            ('ratio', '>24')], rows)
    for profile, csv_rows in runs:
        v = odp_reps(csv_rows)
        w, dw = v.get(('invalidate', 'write', 'odp', 1 << 20)), \
            v.get(('invalidate', 'dontneed_and_write', 'odp', 1 << 20))
        if w and dw:
            print(f'{profile}: invalidate + refault costs {ratio_spread(dw[0], w[0])} a WRITE '
                  'into present pages')
        cold = [k for k in v if k[:2] == ('prefetch', 'write_cold')]
        if cold:
            size = cold[0][3]
            after = v.get(('prefetch', 'write_after_prefetch', 'odp', size))
            pf = v.get(('prefetch', 'prefetch_write', 'odp', size))
            if after and pf:
                both = [a + b for a, b in zip(after[0], pf[0])]
                print(f'{profile}: a first WRITE after PREFETCH_WRITE takes '
                      f'{ratio_spread(after[0], v[cold[0]][0])} the time of one without; '
                      f'prefetch + WRITE {ratio_spread(both, v[cold[0]][0])}')
    print()


def cross_host_section(runs):
    """runs: [(name, rows of 50-cross-host.csv)]: repetitions paired by their number."""
    rows = []
    for name, csv_rows in runs:
        v = by_rep(csv_rows, lambda r: (r['section'], r['metric'], int(r['size_bytes']),
                                        r['memory']), lambda r: float(r['value']))
        units = {(r['section'], r['metric'], int(r['size_bytes'])): r['unit'] for r in csv_rows}
        for (section, metric, size), unit in units.items():
            odp = v.get((section, metric, size, 'odp'))
            pinned = v.get((section, metric, size, 'pinned'))
            rows.append((name, f'{section} {metric}', size_text(size), unit,
                         rep_spread(odp) if odp else None, rep_spread(pinned) if pinned else None,
                         rep_ratio(odp, pinned) if odp and pinned else None,
                         f'{len(set(odp or {}) & set(pinned or {}))}'))
    table('''
Across two guests (a two-node make cluster on a QEMU link): ODP against pinned memory with
perftest and ucx_perftest from node0 to node1, ODP and pinned taking turns; each cell is
the median of the repetitions with their range. steady: the same buffers over and over
(perftest's --odp, ucx_perftest's explicit ODP with -B); first_touch: the first five 1 MiB
messages of a new ib_write_bw, or puts of a new ucx_perftest with no warm-up, its buffers
untouched by the device on both nodes. "ratio" = ODP / pinned, repetition by repetition
(for latency in us, above 1 means ODP is slower); "n": the repetitions paired.
''', [('run', '<22'), ('measurement', '<26'), ('size', '>6'), ('unit', '>5'),
      ('ODP', '>24'), ('pinned', '>24'), ('ratio', '>24'), ('n', '>3')], rows)


def not_measured(log):
    """{(section, metric or None): why} from an odp-bench log: each "SECTION [METRIC] not
    measured" line with the failure said just before it ("byte 1024 differs")."""
    why, reasons = 'see its log', {}
    if not os.path.exists(log):
        return reasons
    with open(log, errors='replace') as f:
        for line in f:
            m = re.match(r'odp-bench: (\S+)(?: (.+))? not measured$', line.strip())
            if m:
                reasons[(m.group(1), m.group(2))] = why
            elif line.startswith('odp-bench: ') and ': ' in line[11:]:
                why = line.strip().rsplit(': ', 1)[1]
    return reasons


def compare_section(pairs, other):
    """pairs: [(profile, [(rows of ours, rows of theirs, reasons) per pair of boots])]: ours
    against @other on the odp-bench rows both ran, as a speed ratio (above 1: ours is
    faster); reasons (not_measured()) say why the other left a row out."""
    rows = []
    for profile, boots in pairs:
        ours = [odp_reps(o) for o, _, _ in boots]
        theirs = [odp_reps(t) for _, t, _ in boots]
        reasons = {}
        for _, _, r in boots:
            reasons.update(r)
        for key in ours[0]:
            section, metric, memory, size = key
            unit = ours[0][key][1]
            mine = [statistics.median(b[key][0]) for b in ours if key in b]
            other_vals = [statistics.median(b[key][0]) for b in theirs if key in b]
            label = f'{section} {metric} {memory}'
            if not other_vals:
                why = reasons.get((section, metric), reasons.get((section, None), 'see its log'))
                rows.append((profile, label, size_text(size), unit,
                             spread(mine), f'not measured: {why}', None))
                continue
            # Lower is better for times, fault counts and kernel memory.
            faster = unit in ('us', 'bytes') or section in ('faults', 'memory')
            r = ratio_spread(other_vals, mine) if faster else ratio_spread(mine, other_vals)
            rows.append((profile, label, size_text(size), unit, spread(mine),
                         spread(other_vals), r))
        for key in theirs[0]:
            if key not in ours[0]:
                rows.append((profile, ' '.join(map(str, key[:3])), size_text(key[3]),
                             theirs[0][key][1], 'not measured', spread(
                                 [statistics.median(b[key][0]) for b in theirs if key in b]),
                             None))
    table(f'''
Ours against {other}, odp-bench rows, booted in turn ({len(pairs[0][1])} boots of each per
profile): each cell is the median over boots of each boot's median, with the range over
boots; "ours/theirs" is a speed ratio per pair of boots (for times, fault counts and
kernel memory the inverse), above 1 when ours is faster, faults less or keeps less per
page. A row one kernel did not measure
says so (its odp-bench log says why).
''', [('profile', '<14'), ('measurement', '<40'), ('size', '>6'), ('unit', '>9'),
      ('ours', '>26'), ('theirs', '>32'), ('ours/theirs', '>24')], rows)


def size_text(size):
    for unit, shift in (('G', 30), ('M', 20), ('K', 10)):
        if size >= 1 << shift and not size % (1 << shift):
            return f'{size >> shift}{unit}'
    return str(size)


def said_in_log(d, log, text):
    """Whether the benchmark's log in folder d says text (why it measured nothing)."""
    path = os.path.join(d, log)
    if not os.path.exists(path):
        return False
    with open(path, errors='replace') as f:
        return text in f.read()


# (CSV file, section; the log line that says why a kernel has nothing to measure there)
SECTIONS = [
    ('10-dma-map.csv', dma_map_section, None),
    ('20-hmm-dma.csv', hmm_dma_section, None),
    ('30-odp.csv', odp_section, None),
    ('30-odp-virtual-dma.csv', lambda runs: odp_section(runs, 'virtual-dma'),
     ('30-odp.log', 'no rxe.odp_virt_dma in this kernel')),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('dirs', nargs='+', help='one results folder per VM profile')
    ap.add_argument('--other', help='the image compared with ours (its name for the table)')
    ap.add_argument('--cross-host', nargs=2, action='append', default=[],
                    metavar=('NAME', 'DIR'),
                    help="node0's results folder of a cross-host run (50-cross-host.csv)")
    ap.add_argument('--pair', nargs=3, action='append', default=[],
                    metavar=('PROFILE', 'OURS', 'THEIRS'),
                    help='results folders of one boot of ours and one of the other image')
    args = ap.parse_args()
    missing = 0
    for name, section, absent in SECTIONS:
        runs = []
        for d in args.dirs:
            path = os.path.join(d, name)
            rows = read_csv(path) if os.path.exists(path) else []
            if not rows and absent and said_in_log(d, *absent):
                print(f'not measured: {path}: {absent[1]}', file=sys.stderr)
                continue
            if not rows:
                print(f'missing: {path} (see the benchmark log next to it)', file=sys.stderr)
                missing += 1
                continue
            runs.append((os.path.basename(os.path.normpath(d)), rows))
        if runs:
            section(runs)
    cross = []
    for name, d in args.cross_host:
        path = os.path.join(d, '50-cross-host.csv')
        rows = read_csv(path) if os.path.exists(path) else []
        if not rows:
            print(f'missing: {path} (see 50-cross-host.log next to it)', file=sys.stderr)
            missing += 1
            continue
        cross.append((name, rows))
    if cross:
        cross_host_section(cross)
    if args.pair:
        by_profile = {}
        for profile, ours, theirs in args.pair:
            rows = [read_csv(os.path.join(d, '30-odp.csv'))
                    if os.path.exists(os.path.join(d, '30-odp.csv')) else []
                    for d in (ours, theirs)]
            if not rows[0]:
                print(f'missing: {ours}/30-odp.csv', file=sys.stderr)
                missing += 1
                continue
            by_profile.setdefault(profile, []).append(
                (rows[0], rows[1], not_measured(os.path.join(theirs, '30-odp.log'))))
        if by_profile:
            compare_section(list(by_profile.items()), args.other or 'the other image')
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
