#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print the tables of a `make bench` run.

  bench-report.py DIR...   one results folder per VM profile (build/bench/PROFILE)

Each guest benchmark writes a CSV file into its profile's folder; each section below
turns one kind of CSV into a table with the ratios between the modes measured side by
side in that run. A benchmark that wrote nothing is reported as missing (exit status 1).
"""
import csv
import os
import re
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


def dma_map_section(runs):
    """runs: [(profile, rows of 10-dma-map.csv)]"""
    rows = []
    for profile, csv_rows in runs:
        cost = {(int(r['pages']), r['mode']): float(r['map_ns_per_page']) +
                float(r['unmap_ns_per_page']) for r in csv_rows}
        for pages in sorted({p for p, _ in cost}):
            page, iova, link = (cost.get((pages, m)) for m in ('pages', 'iova', 'iova-link'))
            rows.append((profile, pages, page, iova,
                         ratio(page, iova) if page and iova else None,
                         link, ratio(page, link) if page and link else None))
    table('''
DMA mapping cost per page, map + unmap, in ns (dma_map_benchmark on the edu device,
FROM_DEVICE, one thread). "ratio" = dma_map_page cost / IOVA cost: above 1 the
IOVA-based API is cheaper per page.
  one by one:  dma_map_page() of each page, dma_unmap_page() of each page
  IOVA:        dma_iova_try_alloc(), dma_iova_link() of each page, one dma_iova_sync(),
               one dma_iova_destroy()
  preallocated: IOVA allocated once; link each page, one sync, one dma_iova_unlink()
''', [('profile', '<14'), ('pages', '>6'), ('one by one', '>12.1f'), ('IOVA', '>10.1f'),
      ('ratio', '>8'), ('preallocated', '>14.1f'), ('ratio', '>8')], rows)


def hmm_dma_section(runs):
    """runs: [(profile, rows of 20-hmm-dma.csv)]"""
    rows = []
    for profile, csv_rows in runs:
        for r in csv_rows:
            single, run = float(r['single_ns_per_page']), float(r['run_ns_per_page'])
            rows.append((profile, int(r['pages']), single, run, ratio(single, run)))
    table('''
HMM DMA helpers: mapping a faulted run of pages, in ns per page (test_hmm DMA mode
on the edu device). "single": hmm_dma_map_pfn() per page, one IOTLB sync each;
"run": one hmm_dma_map_pfns() for the run, one sync. "ratio" = single / run.
''', [('profile', '<14'), ('pages', '>6'), ('single', '>10.1f'), ('run', '>10.1f'),
      ('ratio', '>8')], rows)


def odp_section(runs):
    """runs: [(profile, rows of 30-odp.csv)]"""
    rows, mem = [], []
    for profile, csv_rows in runs:
        v = {(r['metric'], r['memory'], r['path']): float(r['value']) for r in csv_rows}
        for path in ('linked', 'virtual-dma'):
            ft_o, ft_p, st_o, st_p = (v.get((metric, memory, path))
                                      for metric in ('first_touch', 'steady_write')
                                      for memory in ('odp', 'pinned'))
            if None not in (ft_o, ft_p, st_o, st_p):
                rows.append((profile, path, ft_o, ft_p, ratio(ft_o, ft_p), st_o, st_p,
                             ratio(st_o, st_p)))
            m = v.get(('kernel_memory', 'odp', path))
            if m is not None:
                mem.append(f'{profile} {path}: {m:.2f}')
    table('''
rxe On-Demand Paging against pinned memory (RC loopback, 4 MiB buffer). First touch:
register and RDMA WRITE all of it once, pages per second; steady: the same WRITE
repeated, MB/s. "linked": ODP pages linked into an IOVA on the NIC and reached through
the IOMMU (rxe default); "virtual-dma": rxe.odp_virt_dma=1, pages used directly.
''', [('profile', '<14'), ('path', '<13'), ('first touch ODP', '>16.0f'),
      ('pinned', '>10.0f'), ('ratio', '>8'), ('steady ODP', '>12.1f'), ('pinned', '>10.1f'),
      ('ratio', '>8')], rows)
    print('Kernel memory per registered ODP page (VmallocUsed growth for a 16 GiB ODP MR, bytes;')
    print('Linux 6.12 keeps 16: a PFN and a DMA address): ' + '; '.join(mem))
    print()


def odp_lib_section(runs):
    """runs: [(profile, rows of 40-odp-lib.csv)]"""
    rows = []
    for profile, csv_rows in runs:
        v = {(r['section'], r['metric'], r['memory'], int(r['size_bytes'])):
             (float(r['value']), r['unit']) for r in csv_rows}
        for (section, metric, memory, size), (value, unit) in v.items():
            if memory != 'odp':
                continue
            pinned = v.get((section, metric, 'pinned', size))
            rows.append((profile, f'{section} {metric}', size_text(size), f'{value:.1f} {unit}',
                         f'{pinned[0]:.1f} {unit}' if pinned else None,
                         ratio(value, pinned[0]) if pinned else None))
    table('''
libibodp odp-bench: ODP against pinned memory on rxe (RC loopback), side by side in one run.
registration: time to register (ODP maps nothing; pinned pins every page); first_touch:
pages per second of the first transfer into (out of, for READ) memory the device never
touched; steady: 1 MiB WRITE bandwidth and 64-byte WRITE latency; invalidate: a WRITE
into present pages and an MADV_DONTNEED + WRITE cycle; prefetch: a first WRITE without
and after a synchronous PREFETCH_WRITE. "ratio" = ODP / pinned.
''', [('profile', '<14'), ('measurement', '<34'), ('size', '>8'), ('ODP', '>16'),
      ('pinned', '>16'), ('ratio', '>10')], rows)
    for profile, csv_rows in runs:
        v = {(r['section'], r['metric']): float(r['value']) for r in csv_rows}
        w, dw = v.get(('invalidate', 'write')), v.get(('invalidate', 'dontneed_and_write'))
        cold, pf, after = (v.get(('prefetch', m)) for m in
                           ('write_cold', 'prefetch_write', 'write_after_prefetch'))
        if w and dw:
            print(f'{profile}: invalidate + refault costs {ratio(dw, w)} a WRITE into present pages')
        if cold and pf and after:
            print(f'{profile}: a first WRITE after PREFETCH_WRITE takes {ratio(after, cold)} the '
                  f'time of one without; prefetch + WRITE {ratio(pf + after, cold)}')
    print()


def size_text(size):
    for unit, shift in (('G', 30), ('M', 20), ('K', 10)):
        if size >= 1 << shift and not size % (1 << shift):
            return f'{size >> shift}{unit}'
    return str(size)


SECTIONS = [
    ('10-dma-map.csv', dma_map_section),
    ('20-hmm-dma.csv', hmm_dma_section),
    ('30-odp.csv', odp_section),
    ('40-odp-lib.csv', odp_lib_section),
]


def main():
    dirs = sys.argv[1:]
    if not dirs:
        sys.exit(__doc__)
    missing = 0
    for name, section in SECTIONS:
        runs = []
        for d in dirs:
            path = os.path.join(d, name)
            rows = read_csv(path) if os.path.exists(path) else []
            if not rows:
                print(f'missing: {path} (see the benchmark log next to it)', file=sys.stderr)
                missing += 1
                continue
            runs.append((os.path.basename(os.path.normpath(d)), rows))
        if runs:
            section(runs)
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
