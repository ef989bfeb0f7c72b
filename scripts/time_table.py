#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Print `make test`'s time table: where the wall time went.

  time_table.py TIMES RESULTS

TIMES is the file scripts/test.sh fills through record_time (lib.sh): one step per line,
KIND<TAB>NAME<TAB>SECONDS<TAB>NOTE, with KIND step, kernel, two-host, profile or wall.
RESULTS is the results folder: each profile's console.log says how long each suite took
("vmtest: suite NAME exited RC after Ns"), each program's NAME.exit its seconds (third
field); the two-host suites are in two-host-PROFILE/node0/console.log.
"""
import os
import re
import sys

SUITE_RE = re.compile(r'vmtest: (?:two-host )?suite (\S+) exited \S+ after (\d+)s')
LONGEST = 12


def read_steps(path):
    steps = []
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            parts = line.rstrip('\n').split('\t')
            if len(parts) >= 3 and parts[2].isdigit():
                steps.append((parts[0], parts[1], int(parts[2]),
                              parts[3] if len(parts) > 3 else ''))
    return steps


def suite_times(console):
    """[(suite, seconds)] in the order the guest ran them."""
    if not os.path.exists(console):
        return []
    with open(console, encoding='utf-8', errors='replace') as f:
        return [(m.group(1), int(m.group(2))) for m in map(SUITE_RE.search, f) if m]


def program_times(d):
    """{program: seconds} from the NAME.exit files of folder d."""
    times = {}
    for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if fn.endswith('.exit'):
            with open(os.path.join(d, fn), encoding='utf-8', errors='replace') as f:
                fields = f.read().split()
            if len(fields) >= 3 and fields[2].isdigit():
                times[fn[:-5]] = int(fields[2])
    return times


def row(name, seconds, note=''):
    return f'    {name:<44} {seconds:>6} s' + (f'  {note}' if note else '')


def main():
    steps = read_steps(sys.argv[1])
    results = sys.argv[2]
    wall = next((s for k, _, s, _ in steps if k == 'wall'), None)
    out = [f'==> time table: where {wall if wall is not None else "?"} s of make test went '
           f'({os.path.join(results, "time-table.txt")})']
    out.append('  build and host')
    for kind, name, seconds, note in steps:
        if kind in ('step', 'kernel') and not name.startswith('profiles,'):
            out.append(row(name if kind == 'step' else f'kernel {name}', seconds, note))
    guests = [(k, n, s) for k, n, s, _ in steps if k in ('two-host', 'profile')]
    if any(k == 'two-host' for k, _, _ in guests):
        out.append('  two-host suites, one cluster at a time (its two guests take both cores)')
    programs = []
    for kind, name, seconds in guests:
        if kind != 'two-host':
            continue
        d = os.path.join(results, f'two-host-{name}')
        parts = ', '.join(f'{n} {s}' for n, s in suite_times(os.path.join(d, 'node0',
                                                                          'console.log')))
        out.append(row(name, seconds, parts))
        programs += [(s, f'{p} (two-host {name})') for p, s in
                     program_times(os.path.join(d, 'node0')).items()]
    lanes = next(((n, s) for k, n, s, _ in steps if k == 'step' and n.startswith('profiles,')),
                 None)
    if lanes:
        out.append(f'  {lanes[0]}: {lanes[1]} s of wall time, '
                   f'{sum(s for k, _, s in guests if k == "profile")} s of VM time')
    for kind, name, seconds in guests:
        if kind != 'profile':
            continue
        d = os.path.join(results, name)
        parts = ', '.join(f'{n} {s}' for n, s in suite_times(os.path.join(d, 'console.log')))
        out.append(row(name, seconds, parts))
        programs += [(s, f'{p} ({name})') for p, s in program_times(d).items()]
    if programs:
        programs.sort(key=lambda x: (-x[0], x[1]))
        out.append(f'  the {min(LONGEST, len(programs))} longest programs')
        out += [row(n, s) for s, n in programs[:LONGEST]]
    print('\n'.join(out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
