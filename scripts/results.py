#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the results of guest runs and print the summary lines.

  results.py profile NAME DIR --expect-group TYPE --qemu-rc N --timeout S --seconds S
      Reads DIR (console.log with the guest's "vmtest: error:" lines, the TAP files
      the guest wrote, facts, kmemleak, done), prints one line per suite and one for the profile, and writes
      DIR/summary.json.
  results.py tap NAME FILE...
      Counts host-side TAP files as one suite (for suites that run on the host).
  results.py total DIR...
      Adds up the summary.json files and prints `N passed, N failed, N skipped`.
      Exit status 1 when anything failed.
"""
import argparse
import json
import os
import re
import sys

TIMESTAMP = re.compile(r'^\[\s*\d+\.\d+\]\s?')

# Console lines that mean the kernel found a bug, in itself or in our code.
SPLATS = [
    (re.compile(r'Kernel panic - not syncing'), 'kernel panic'),
    (re.compile(r'BUG: KASAN'), 'KASAN report'),
    (re.compile(r'BUG: KFENCE'), 'KFENCE report'),
    (re.compile(r'UBSAN:'), 'UBSAN report'),
    (re.compile(r'WARNING: (possible|inconsistent|suspicious|bad unlock|held lock|'
                r'lock held|nested lock|circular)'), 'lockdep report'),
    # Not the two lines dma-debug prints when it starts.
    (re.compile(r'DMA-API: (?!preallocated \d+ debug entries|debugging enabled by kernel config)'),
     'DMA API debug report'),
    (re.compile(r'kernel BUG at'), 'kernel BUG'),
    (re.compile(r'BUG: '), 'kernel BUG'),
    (re.compile(r'Oops: |general protection fault'), 'kernel oops'),
    (re.compile(r'WARNING: CPU: \d+ PID: \d+ at'), 'kernel WARN'),
    (re.compile(r'INFO: task .* blocked for more than'), 'hung task'),
    (re.compile(r'rcu: INFO: .* detected stalls'), 'RCU stall'),
    (re.compile(r'kmemleak: \d+ new suspected memory leaks'), 'kmemleak report'),
    # A device used a DMA address the IOMMU had no mapping for (intel-iommu, virtio-iommu).
    (re.compile(r'DMAR: \[DMA (Read|Write)|DMAR: DRHD: handling fault'), 'IOMMU fault'),
    (re.compile(r'fault from EP \d+'), 'IOMMU fault'),
]

TAP_LINE = re.compile(r'^(?P<ok>ok|not ok)\b\s*(?P<num>\d+)?\s*(?:-\s*)?(?P<desc>[^#]*?)'
                      r'\s*(?:#\s*(?P<dir>SKIP|TODO)\S*\s*(?P<why>.*))?$', re.I)
TAP_PLAN = re.compile(r'^1\.\.(\d+)')


class Counts:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []   # (name, why) of each failure
        self.notes = []      # things a person should look at that are not failures

    def add(self, other):
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped

    def fail(self, name, why=''):
        self.failed += 1
        self.failures.append((name, why))

    def line(self):
        return f'{self.passed} passed, {self.failed} failed, {self.skipped} skipped'


def read_lines(path):
    with open(path, errors='replace') as f:
        return [line.rstrip('\r\n') for line in f]


def parse_tap(lines, counts):
    """Count a TAP stream. A plan that promises more results than arrived is a failure."""
    plan, seen = None, 0
    for line in lines:
        m = TAP_PLAN.match(line)
        if m:
            plan = int(m.group(1))
            continue
        if line.startswith('Bail out!'):
            counts.fail('bail out', line[9:].strip())
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        seen += 1
        ok = m.group('ok').lower() == 'ok'
        directive = (m.group('dir') or '').upper()
        desc = m.group('desc').strip()
        why = m.group('why') or ''
        if directive == 'SKIP':
            counts.skipped += 1
        elif directive == 'TODO':
            if ok:
                counts.passed += 1
                counts.notes.append(f'{desc}: {why}')
            else:
                counts.skipped += 1
        elif ok:
            counts.passed += 1
        else:
            counts.fail(desc)
    if plan is None:
        counts.fail('no TAP plan', 'the program died before printing its plan')
    elif seen < plan:
        counts.failed += plan - seen
        counts.failures.append(('missing results', f'{plan - seen} of {plan} never reported'))
    return counts


def parse_ktap(lines):
    """KUnit results from a console log: {suite: Counts}, counted per test case.

    Suites are the results at indentation 0 of the top-level KTAP document, their cases
    at indentation 4; parameterised sub-cases (deeper) roll up into their case.
    """
    suites, current, in_ktap = {}, None, False
    for raw in lines:
        line = TIMESTAMP.sub('', raw)
        if line.startswith('KTAP version') or line.startswith('TAP version'):
            in_ktap = True
            continue
        if not in_ktap:
            continue
        if line.startswith('    # Subtest: '):
            current = line[len('    # Subtest: '):].strip()
            suites.setdefault(current, Counts())
            continue
        if current is None:
            continue
        if line.startswith('    ') and not line.startswith('     '):
            m = TAP_LINE.match(line[4:])
            if m:
                c = suites[current]
                directive = (m.group('dir') or '').upper()
                if directive == 'SKIP':
                    c.skipped += 1
                elif m.group('ok').lower() == 'ok':
                    c.passed += 1
                else:
                    c.fail(m.group('desc').strip())
            continue
        m = TAP_LINE.match(line)
        if m and m.group('desc').strip() == current:
            c = suites[current]
            if m.group('ok').lower() != 'ok' and not c.failed:
                c.fail(current, 'suite failed without a failing case (crash?)')
            elif (m.group('dir') or '').upper() == 'SKIP' and not (c.passed or c.skipped):
                # A suite skipped as a whole (no case ran) still shows up as one skip.
                c.skipped += 1
            current = None
    return suites


# Tests that check a WARN_ON() guard print these around the call that trips it.
EXPECT_WARN = re.compile(r'expect WARNING in (?P<func>\w+): (?P<edge>begin|end)')
WARN_SITE = re.compile(r'WARNING: CPU: \d+ PID: \d+ at \S+ (?P<func>\w+)\+0x')


def find_splat(lines):
    """The first report of a kernel bug, as (what, line), or None.

    A WARN from function F between "expect WARNING in F: begin" and "...: end" is the
    expected result of a test and not a report; any other report in that window is."""
    expected = None
    for raw in lines:
        line = TIMESTAMP.sub('', raw)
        m = EXPECT_WARN.search(line)
        if m:
            expected = m['func'] if m['edge'] == 'begin' else None
            continue
        site = WARN_SITE.search(line)
        if site and expected and site['func'] == expected:
            continue
        for pattern, what in SPLATS:
            if pattern.search(line):
                return what, line.strip()
    return None


def read_facts(path):
    facts = {}
    if os.path.exists(path):
        for line in read_lines(path):
            k, _, v = line.partition('=')
            facts[k] = v
    return facts


def print_suite(profile, name, c):
    print(f'  {profile:<13} {name:<28} {c.line()}')
    for fname, why in c.failures[:20]:
        print(f'      FAIL {fname}' + (f': {why}' if why else ''))
    if len(c.failures) > 20:
        print(f'      ... and {len(c.failures) - 20} more failures')
    for note in c.notes:
        print(f'      note: {note}')


# A kernel message printed while the guest writes a line to the console lands inside that
# line ("vmtest: initramf[    2.11] tsc: ...MHz" then "s started on 6.12"): the guest's own
# lines are what is left once every kernel message, from its time stamp to the end of its
# line, is cut out.
KMSG = re.compile(r'\[\s*\d+\.\d+\] [^\n]*\n')


def guest_lines(lines):
    return KMSG.sub('', '\n'.join(lines) + '\n').splitlines()


def judge_profile(args):
    d = args.dir
    console = os.path.join(d, 'console.log')
    lines = read_lines(console) if os.path.exists(console) else []
    total, checks = Counts(), Counts()

    def check(ok, name, why):
        if ok:
            checks.passed += 1
        else:
            checks.fail(name, f'{why} (console: {console})')

    guest = guest_lines(lines)
    booted = any(line.startswith('vmtest: initramfs started') for line in guest)
    check(booted, 'boot', 'the kernel never reached the initramfs'
          if lines else 'QEMU printed nothing; see ' + os.path.join(d, 'qemu.log'))
    finished = os.path.exists(os.path.join(d, 'done'))
    if args.qemu_rc == 124:
        why = f'the guest hung: killed after {args.timeout} s'
    else:
        why = f'the guest stopped before finishing (QEMU exit status {args.qemu_rc})'
    check(finished, 'finish', why)
    splat = find_splat(lines)
    check(splat is None, 'kernel log', f'{splat[0]}: {splat[1]}' if splat else '')

    facts = read_facts(os.path.join(d, 'facts'))
    group = facts.get('iommu_group', '?')
    if args.expect_group and booted and finished:
        check(group == args.expect_group, 'iommu group',
              f'the NIC\'s IOMMU group type is {group}, the profile expects '
              f'{args.expect_group}')
    hiwater = facts.get('swiotlb_hiwater', 'unknown')
    if args.expect_swiotlb and booted and finished:
        used = hiwater.isdigit() and int(hiwater) > 0
        check(used == (args.expect_swiotlb == 'used'), 'swiotlb',
              f'the profile expects swiotlb to be {args.expect_swiotlb}, but its '
              f'high-water mark is {hiwater} slots')
    # The guest's own diagnoses (init and the job scripts print them on the console).
    for line in guest:
        if line.startswith('vmtest: error: '):
            checks.fail('guest', line[len('vmtest: error: '):])
    leaks = os.path.join(d, 'kmemleak')
    if os.path.exists(leaks):
        n = sum(1 for line in read_lines(leaks) if line.startswith('unreferenced object'))
        check(n == 0, 'kmemleak', f'{n} unreferenced objects, see {leaks}')

    suites = []
    for name, c in sorted(parse_ktap(lines).items()):
        suites.append((f'kunit/{name}', c))
    for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if fn.endswith('.tap'):
            suites.append((fn[:-4].replace('verbs-', 'verbs/'),
                           parse_tap(read_lines(os.path.join(d, fn)), Counts())))
    suites.append(('checks', checks))
    for name, c in suites:
        print_suite(args.name, name, c)
        total.add(c)
    print(f'profile {args.name}: {total.line()} in {args.seconds} s '
          f'(kernel {facts.get("kernel", "?")}, IOMMU group {group}, '
          f'swiotlb high-water {hiwater})' +
          (f' -- only the guest suites matching SUITES={facts["suites"]} ran'
           if 'suites' in facts else ''))
    with open(os.path.join(d, 'summary.json'), 'w') as f:
        json.dump({'passed': total.passed, 'failed': total.failed,
                   'skipped': total.skipped}, f)
    return 0


def judge_tap(args):
    c = Counts()
    for path in args.files:
        parse_tap(read_lines(path), c)
    print_suite('host', args.name, c)
    with open(args.summary, 'w') as f:
        json.dump({'passed': c.passed, 'failed': c.failed, 'skipped': c.skipped}, f)
    return 0


def judge_total(args):
    total = Counts()
    for d in args.dirs:
        path = os.path.join(d, 'summary.json') if os.path.isdir(d) else d
        try:
            with open(path) as f:
                s = json.load(f)
        except (OSError, ValueError) as e:
            print(f'error: no results in {path}: {e}', file=sys.stderr)
            total.failed += 1
            continue
        total.passed += s['passed']
        total.failed += s['failed']
        total.skipped += s['skipped']
    print(total.line())
    return 1 if total.failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    p = sub.add_parser('profile')
    p.add_argument('name')
    p.add_argument('dir')
    p.add_argument('--expect-group', default='')
    p.add_argument('--expect-swiotlb', default='', choices=['', 'used', 'unused'])
    p.add_argument('--qemu-rc', type=int, default=0)
    p.add_argument('--timeout', type=int, default=0)
    p.add_argument('--seconds', type=int, default=0)
    p.set_defaults(func=judge_profile)
    t = sub.add_parser('tap')
    t.add_argument('name')
    t.add_argument('summary')
    t.add_argument('files', nargs='+')
    t.set_defaults(func=judge_tap)
    s = sub.add_parser('total')
    s.add_argument('dirs', nargs='+')
    s.set_defaults(func=judge_total)
    args = ap.parse_args()
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
