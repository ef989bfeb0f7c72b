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
import sys


def read_csv(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def ratio(a, b):
    return f'{a / b:.2f}x' if b else 'n/a'


def dma_map_section(runs):
    """runs: [(profile, rows of 10-dma-map.csv)]"""
    print('DMA mapping cost per page, map + unmap, in ns (dma_map_benchmark on the edu device,')
    print('FROM_DEVICE, one thread). "ratio" = dma_map_page cost / IOVA cost: above 1 the')
    print('IOVA-based API is cheaper per page.')
    print('  one by one:  dma_map_page() of each page, dma_unmap_page() of each page')
    print('  IOVA:        dma_iova_try_alloc(), dma_iova_link() of each page, one dma_iova_sync(),')
    print('               one dma_iova_destroy()')
    print('  preallocated: IOVA allocated once; link each page, one sync, one dma_iova_unlink()')
    print()
    head = (f'{"profile":<14}{"pages":>6}{"one by one":>12}{"IOVA":>10}{"ratio":>8}'
            f'{"preallocated":>14}{"ratio":>8}')
    print(head)
    print('-' * len(head))
    for profile, rows in runs:
        cost = {}
        for r in rows:
            cost[(int(r['pages']), r['mode'])] = (float(r['map_ns_per_page']) +
                                                  float(r['unmap_ns_per_page']))
        for pages in sorted({p for p, _ in cost}):
            page = cost.get((pages, 'pages'))
            iova = cost.get((pages, 'iova'))
            link = cost.get((pages, 'iova-link'))

            def cell(v, w):
                return f'{v:>{w}.1f}' if v is not None else f'{"-":>{w}}'

            print(f'{profile:<14}{pages:>6}{cell(page, 12)}{cell(iova, 10)}'
                  f'{(ratio(page, iova) if page and iova else "-"):>8}'
                  f'{cell(link, 14)}{(ratio(page, link) if page and link else "-"):>8}')
    print()


def hmm_dma_section(runs):
    """runs: [(profile, rows of 20-hmm-dma.csv)]"""
    print('HMM DMA helpers: mapping a faulted run of pages, in ns per page (test_hmm DMA mode')
    print('on the edu device). "single": hmm_dma_map_pfn() per page, one IOTLB sync each;')
    print('"run": one hmm_dma_map_pfns() for the run, one sync. "ratio" = single / run.')
    print()
    head = f'{"profile":<14}{"pages":>6}{"single":>10}{"run":>10}{"ratio":>8}'
    print(head)
    print('-' * len(head))
    for profile, rows in runs:
        for r in rows:
            single, run = float(r['single_ns_per_page']), float(r['run_ns_per_page'])
            print(f'{profile:<14}{int(r["pages"]):>6}{single:>10.1f}{run:>10.1f}'
                  f'{ratio(single, run):>8}')
    print()


def odp_section(runs):
    """runs: [(profile, rows of 30-odp.csv)]"""
    print('rxe On-Demand Paging against pinned memory (RC loopback, 4 MiB buffer). First touch:')
    print('register and RDMA WRITE all of it once, pages per second; steady: the same WRITE')
    print('repeated, MB/s. "linked": ODP pages linked into an IOVA on the NIC and reached through')
    print('the IOMMU (rxe default); "virtual-dma": rxe.odp_virt_dma=1, pages used directly.')
    print()
    head = (f'{"profile":<14}{"path":<13}{"first touch ODP":>16}{"pinned":>10}{"ratio":>8}'
            f'{"steady ODP":>12}{"pinned":>10}{"ratio":>8}')
    print(head)
    print('-' * len(head))
    mem = []
    for profile, rows in runs:
        v = {(r['metric'], r['memory'], r['path']): float(r['value']) for r in rows}
        for path in ('linked', 'virtual-dma'):
            ft_o, ft_p = v.get(('first_touch', 'odp', path)), v.get(('first_touch', 'pinned', path))
            st_o, st_p = v.get(('steady_write', 'odp', path)), v.get(('steady_write', 'pinned', path))
            if None in (ft_o, ft_p, st_o, st_p):
                continue
            print(f'{profile:<14}{path:<13}{ft_o:>16.0f}{ft_p:>10.0f}{ratio(ft_o, ft_p):>8}'
                  f'{st_o:>12.1f}{st_p:>10.1f}{ratio(st_o, st_p):>8}')
        for path in ('linked', 'virtual-dma'):
            m = v.get(('kernel_memory', 'odp', path))
            if m is not None:
                mem.append(f'{profile} {path}: {m:.2f}')
    print()
    print('Kernel memory per registered ODP page (VmallocUsed growth for a 16 GiB ODP MR, bytes;')
    print('Linux 6.12 keeps 16: a PFN and a DMA address): ' + '; '.join(mem))
    print()


SECTIONS = [
    ('10-dma-map.csv', dma_map_section),
    ('20-hmm-dma.csv', hmm_dma_section),
    ('30-odp.csv', odp_section),
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
