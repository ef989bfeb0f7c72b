#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Draw the plots of a `make bench` run with gnuplot, as PNG files.

  bench-plots.py OUTDIR DIR... [--other NAME --pair PROFILE OURS THEIRS ...]
      DIR: one results folder per VM profile (build/bench/PROFILE); each --pair names one
      boot of ours and one of the other image (make bench COMPARE=)

For each profile and each benchmark that wrote its CSV: the data (.dat), the gnuplot
script (.gp) and the picture (.png) in OUTDIR, so a plot can be redrawn or restyled by
hand. Prints the PNG files it wrote; exit status 1 when gnuplot failed.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys

STYLE = '''set terminal png size 960,560 font ",11" noenhanced
set grid ytics
set key top left
set style fill solid 0.8 border -1
'''


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def plot(outdir, name, data, script):
    """Write NAME.dat and NAME.gp, run gnuplot; the PNG path, or None on failure."""
    dat, gp, png = (os.path.join(outdir, f'{name}.{ext}') for ext in ('dat', 'gp', 'png'))
    write(dat, data)
    write(gp, STYLE + f'set output "{png}"\n' + script.replace('DATA', f'"{dat}"'))
    r = subprocess.run(['gnuplot', gp], capture_output=True, text=True)
    if r.returncode:
        print(f'gnuplot {gp}: {r.stderr.strip()}', file=sys.stderr)
        return None
    return png


def medians(rows, key, value):
    """{key(row): the median of value(row) over the repetitions}"""
    v = {}
    for r in rows:
        v.setdefault(key(r), []).append(value(r))
    return {k: statistics.median(vals) for k, vals in v.items()}


def dma_map(outdir, profile, rows):
    cost = {}
    for (pages, mode), c in medians(rows, lambda r: (int(r['pages']), r['mode']),
                                    lambda r: float(r['map_ns_per_page']) +
                                    float(r['unmap_ns_per_page'])).items():
        cost.setdefault(pages, {})[mode] = c
    data = '# pages one-by-one iova preallocated (medians of the repetitions)\n' + ''.join(
        f'{p} {c.get("pages", "NaN")} {c.get("iova", "NaN")} {c.get("iova-link", "NaN")}\n'
        for p, c in sorted(cost.items()))
    return plot(outdir, f'dma-map-{profile}', data, f'''
set title "DMA mapping cost per page, map + unmap ({profile})"
set xlabel "pages per mapping"
set ylabel "ns per page"
set logscale x 2
set logscale y
plot DATA using 1:2 with linespoints lw 2 title "dma_map_page() one by one", \\
     DATA using 1:3 with linespoints lw 2 title "IOVA: link each page, one sync", \\
     DATA using 1:4 with linespoints lw 2 title "preallocated IOVA"
''')


def hmm_dma(outdir, profile, rows):
    single = medians(rows, lambda r: int(r['pages']), lambda r: float(r['single_ns_per_page']))
    run = medians(rows, lambda r: int(r['pages']), lambda r: float(r['run_ns_per_page']))
    data = '# pages single run (medians of the repetitions)\n' + ''.join(
        f'{p} {single[p]} {run[p]}\n' for p in sorted(single))
    return plot(outdir, f'hmm-dma-{profile}', data, f'''
set title "HMM DMA helpers: mapping a faulted run ({profile})"
set xlabel "pages in the run"
set ylabel "ns per page"
set logscale x 2
plot DATA using 1:2 with linespoints lw 2 title "hmm_dma_map_pfn() per page", \\
     DATA using 1:3 with linespoints lw 2 title "hmm_dma_map_pfns(), one sync"
''')


def odp_medians(rows):
    """{(section, metric, memory, size): median of the repetitions} of 30-odp.csv"""
    return medians(rows, lambda r: (r['section'], r['metric'], r['memory'], int(r['size_bytes'])),
                   lambda r: float(r['value']))


def odp_plots(outdir, profile, rows):
    v = odp_medians(rows)
    pngs = []
    sizes = sorted({s for (sec, _, _, s) in v if sec == 'registration'})
    data = '# size_KiB odp_us pinned_us\n' + ''.join(
        f'{s >> 10} {v.get(("registration", "register", "odp", s), "NaN")} '
        f'{v.get(("registration", "register", "pinned", s), "NaN")}\n' for s in sizes)
    pngs.append(plot(outdir, f'odp-registration-{profile}', data, f'''
set title "Registering an MR: ODP against pinned ({profile})"
set xlabel "MR size (KiB)"
set ylabel "time to register (us)"
set logscale xy
plot DATA using 1:2 with linespoints lw 2 title "ODP (no pages)", \\
     DATA using 1:3 with linespoints lw 2 title "pinned (every page)"
'''))
    ops = [(sec, m) for (sec, m, mem, _) in v if sec == 'first_touch' and mem == 'odp']
    data = '# operation odp pinned\n' + ''.join(
        f'"{m}" {val} {v.get((sec, m, "pinned", s), "NaN")}\n'
        for (sec, m, mem, s), val in v.items() if sec == 'first_touch' and mem == 'odp')
    if ops:
        pngs.append(plot(outdir, f'odp-first-touch-{profile}', data, f'''
set title "First touch: pages per second of the first transfer ({profile})"
set ylabel "pages per second"
set style data histograms
set style histogram clustered gap 1
set yrange [0:*]
plot DATA using 2:xtic(1) title "ODP (faults)", DATA using 3 title "pinned"
'''))
    rows_out = []
    for sec, m, label in (('steady', 'write_bandwidth', 'WRITE MB/s'),
                          ('steady', 'write_latency', 'WRITE latency us')):
        o = [val for (s2, m2, mem, _), val in v.items() if (s2, m2, mem) == (sec, m, 'odp')]
        p = [val for (s2, m2, mem, _), val in v.items() if (s2, m2, mem) == (sec, m, 'pinned')]
        if o and p:
            rows_out.append(f'"{label}" {o[0]} {p[0]}\n')
    if rows_out:
        pngs.append(plot(outdir, f'odp-steady-{profile}', '# metric odp pinned\n' +
                         ''.join(rows_out), f'''
set title "Steady state: ODP against pinned ({profile})"
set style data histograms
set style histogram clustered gap 1
set yrange [0:*]
plot DATA using 2:xtic(1) title "ODP", DATA using 3 title "pinned"
'''))
    bars = [('invalidate', 'write', 'WRITE 1M, present'),
            ('invalidate', 'dontneed_and_write', 'MADV_DONTNEED + WRITE 1M'),
            ('prefetch', 'write_cold', 'first WRITE 4M'),
            ('prefetch', 'prefetch_write', 'PREFETCH_WRITE 4M'),
            ('prefetch', 'write_after_prefetch', 'first WRITE 4M after prefetch')]
    data = ''.join(f'"{label}" {val}\n' for sec, m, label in bars
                   for (s2, m2, mem, _), val in v.items() if (s2, m2) == (sec, m))
    if data:
        pngs.append(plot(outdir, f'odp-invalidate-prefetch-{profile}', '# what us\n' + data, f'''
set title "Invalidate + refault, and prefetch (ODP, {profile})"
set ylabel "us"
set style data histograms
set yrange [0:*]
set xtics rotate by -20
plot DATA using 2:xtic(1) notitle
'''))
    return pngs


def compare(outdir, profile, other, boots):
    """First-touch pages per second of ODP, ours against the other image, per boot pair."""
    ours = [odp_medians(o) for o, _ in boots]
    theirs = [odp_medians(t) for _, t in boots]
    # The rows both kernels measured (the report says which the other could not).
    keys = [k for k in ours[0] if k[0] == 'first_touch' and k[2] == 'odp' and
            any(k in b for b in theirs)]
    if not keys:
        print(f'no comparison plot for {profile}: {other} measured no ODP first touch',
              file=sys.stderr)
        return []
    data = '# operation ours theirs (medians over boots)\n' + ''.join(
        f'"{k[1]}" {statistics.median([b[k] for b in ours if k in b])} '
        f'{statistics.median([b[k] for b in theirs if k in b])}\n' for k in keys)
    return [plot(outdir, f'odp-first-touch-compare-{profile}', data, f'''
set title "ODP first touch, pages per second: ours against {os.path.basename(other)} ({profile})"
set ylabel "pages per second"
set style data histograms
set style histogram clustered gap 1
set yrange [0:*]
set xtics rotate by -20
plot DATA using 2:xtic(1) title "ours", DATA using 3 title "{os.path.basename(other)}"
''')]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('outdir')
    ap.add_argument('dirs', nargs='+')
    ap.add_argument('--other', default='the other image')
    ap.add_argument('--pair', nargs=3, action='append', default=[],
                    metavar=('PROFILE', 'OURS', 'THEIRS'))
    args = ap.parse_args()
    outdir, dirs = args.outdir, args.dirs
    os.makedirs(outdir, exist_ok=True)
    pngs = []
    by_profile = {}
    for profile, ours, theirs in args.pair:
        rows = [read_csv(os.path.join(d, '30-odp.csv')) for d in (ours, theirs)]
        if rows[0]:
            by_profile.setdefault(profile, []).append(tuple(rows))
    for profile, boots in by_profile.items():
        pngs.extend(compare(outdir, profile, args.other, boots))
    for d in dirs:
        profile = os.path.basename(os.path.normpath(d))
        rows = read_csv(os.path.join(d, '10-dma-map.csv'))
        if rows:
            pngs.append(dma_map(outdir, profile, rows))
        rows = read_csv(os.path.join(d, '20-hmm-dma.csv'))
        if rows:
            pngs.append(hmm_dma(outdir, profile, rows))
        rows = read_csv(os.path.join(d, '30-odp.csv'))
        if rows:
            pngs.extend(odp_plots(outdir, profile, rows))
    for p in pngs:
        if p:
            print(f'plot: {p}')
    return 1 if None in pngs or not pngs else 0


if __name__ == '__main__':
    sys.exit(main())
