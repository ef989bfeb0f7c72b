#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the results of guest runs and print the summary lines.

  results.py profile NAME DIR --expect-group TYPE --qemu-rc N --timeout S --seconds S
      Reads DIR (console.log with the guest's "vmtest: error:" lines, the TAP files
      the guest wrote and their exit statuses, facts, kmemleak, done), prints one line
      per suite and one for the profile, and writes DIR/summary.json. With
      --expected-skips FOLDER, a skip its SUITE.skips file does not allow fails.
  results.py cluster NAME DIR --nodes N --status S --log FILE --seconds S
      The two-host suites (scripts/cluster.sh with scripts/guest/cluster-suites.sh):
      every node's console (DIR/nodeI), cluster.sh's exit status, node0's TAP files.
  results.py tap NAME FILE...
      Counts host-side TAP files as one suite (for suites that run on the host).
  results.py total DIR...
      Adds up the summary.json files and prints `N passed, N failed, N skipped`.
      Exit status 1 when anything failed.
"""
import argparse
import json
import os
import sys

# Loaded by path (the harness tests do) as well as run: its sibling modules are beside it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from results_parse import (Counts, ERR_LINES, find_splat, guest_lines,  # noqa: E402
                           judge_exit, parse_ktap, parse_tap, read_facts, read_lines)
from results_skips import judge_skips, read_expected_skips, suite_file  # noqa: E402


def print_suite(profile, name, c):
    print(f'  {profile:<13} {name:<28} {c.line()}')
    for i, (fname, why) in enumerate(c.failures[:20]):
        print(f'      FAIL {fname}' + (f': {why}' if why else ''))
        for line in c.diags.get(i, []):
            print(f'        # {line}')
    if len(c.failures) > 20:
        print(f'      ... and {len(c.failures) - 20} more failures')
    for note in c.notes:
        print(f'      note: {note}')


def tap_suites(d, profile, expected_skips):
    """[(suite, Counts)] of the TAP files in folder d (NAME.tap, with NAME.exit when the
    program's exit status was recorded), their skips judged against the expected ones."""
    suites = []
    for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if fn.endswith('.tap'):
            c = parse_tap(read_lines(os.path.join(d, fn)), Counts())
            exit_file = os.path.join(d, fn[:-4] + '.exit')
            if os.path.exists(exit_file):
                judge_exit(exit_file, c)
            err_file = os.path.join(d, fn[:-4] + '.err')
            if c.failed and os.path.exists(err_file):
                # What a failed program said on stderr (a completion that never came, a
                # verb that failed) is often the reason its TAP line could not give.
                tail = [line for line in read_lines(err_file) if line.strip()][-ERR_LINES:]
                c.notes += [f'stderr: {line}' for line in tail]
            name = fn[:-4]
            for prefix in ('verbs-', 'two-host-'):
                if name.startswith(prefix):
                    name = prefix[:-1] + '/' + name[len(prefix):]
                    break
            suites.append((name, c))
    if expected_skips:
        rules = read_expected_skips(expected_skips)
        for name, c in suites:
            judge_skips(name, profile, c, rules.get(suite_file(name), []))
    return suites


def report(name, suites, d, head, tail, facts):
    """Print each suite's line and the run's "HEAD N passed, ... TAIL" line, and write
    D/summary.json."""
    total = Counts()
    for suite, c in suites:
        print_suite(name, suite, c)
        total.add(c)
    print(f'{head}{total.line()} {tail}' +
          (f' -- only the guest suites matching SUITES={facts["suites"]} ran'
           if 'suites' in facts else ''))
    with open(os.path.join(d, 'summary.json'), 'w') as f:
        json.dump({'passed': total.passed, 'failed': total.failed,
                   'skipped': total.skipped}, f)
    return 0


def judge_cluster(args):
    """The two-host suites: every node booted and logged no kernel problem, node0 ran
    the suites to their end (scripts/guest/cluster-suites.sh), and their TAP files."""
    d = args.dir
    checks = Counts()
    facts = read_facts(os.path.join(d, 'node0', 'facts'))

    def check(ok, name, why):
        if ok:
            checks.passed += 1
        else:
            checks.fail(name, why)

    for i in range(args.nodes):
        console = os.path.join(d, f'node{i}', 'console.log')
        lines = read_lines(console) if os.path.exists(console) else []
        guest = guest_lines(lines)
        check(any(line.startswith('vmtest: initramfs started') for line in guest),
              f'node{i} boot', f'the kernel never reached the initramfs (console: {console})')
        splat = find_splat(lines)
        check(splat is None, f'node{i} kernel log',
              f'{splat[0]}: {splat[1]} (console: {console})' if splat else '')
        for line in guest:
            if line.startswith('vmtest: error: '):
                checks.fail(f'node{i}', line[len('vmtest: error: '):])
    log = read_lines(args.log) if args.log and os.path.exists(args.log) else []
    last = next((line for line in reversed(log) if line.strip()), '')
    check(args.status == 0, 'cluster',
          f'scripts/cluster.sh exited {args.status}: {last} (log: {args.log})')
    check(os.path.exists(os.path.join(d, 'node0', 'done')), 'finish',
          'node0 did not finish the two-host suites (console: '
          f'{os.path.join(d, "node0", "console.log")})')

    suites = tap_suites(os.path.join(d, 'node0'), args.name, args.expected_skips)
    suites.append(('checks', checks))
    return report(args.name, suites, d, f'{args.name}: ',
                  f'in {args.seconds} s on {args.nodes} guests (kernel '
                  f'{facts.get("kernel", "?")}, IOMMU group {facts.get("iommu_group", "?")})',
                  facts)


def judge_profile(args):
    d = args.dir
    console = os.path.join(d, 'console.log')
    lines = read_lines(console) if os.path.exists(console) else []
    checks = Counts()

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
    nodes = facts.get('numa_nodes', '?')
    if args.expect_numa_nodes and booted and finished:
        check(nodes == args.expect_numa_nodes, 'numa nodes',
              f'the guest kernel sees {nodes} NUMA nodes, the profile expects '
              f'{args.expect_numa_nodes}')
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
    suites += tap_suites(d, args.name, args.expected_skips)
    suites.append(('checks', checks))
    return report(args.name, suites, d, f'profile {args.name}: ',
                  f'in {args.seconds} s (kernel {facts.get("kernel", "?")}, IOMMU group '
                  f'{group}, swiotlb high-water {hiwater})', facts)


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
    p.add_argument('--expect-numa-nodes', default='',
                   help='the number of NUMA nodes the guest kernel must see')
    p.add_argument('--qemu-rc', type=int, default=0)
    p.add_argument('--timeout', type=int, default=0)
    p.add_argument('--seconds', type=int, default=0)
    p.add_argument('--expected-skips', default='',
                   help='folder of SUITE.skips files; skips they do not allow fail')
    p.set_defaults(func=judge_profile)
    c = sub.add_parser('cluster')
    c.add_argument('name')
    c.add_argument('dir')
    c.add_argument('--nodes', type=int, default=2)
    c.add_argument('--status', type=int, default=0, help="scripts/cluster.sh's exit status")
    c.add_argument('--log', default='', help="scripts/cluster.sh's output")
    c.add_argument('--seconds', type=int, default=0)
    c.add_argument('--expected-skips', default='',
                   help='folder of SUITE.skips files; skips they do not allow fail')
    c.set_defaults(func=judge_cluster)
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
