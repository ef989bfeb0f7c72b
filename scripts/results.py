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
import fnmatch
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
        self.diags = {}      # index in failures: the TAP diagnostics that came before it
        self.skips = []      # (name, why) of each skip
        self.notes = []      # things a person should look at that are not failures

    def add(self, other):
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped

    def fail(self, name, why='', diag=()):
        self.failed += 1
        if diag:
            self.diags[len(self.failures)] = list(diag)
        self.failures.append((name, why))

    def skip(self, name, why):
        self.skipped += 1
        self.skips.append((name, why))

    def line(self):
        return f'{self.passed} passed, {self.failed} failed, {self.skipped} skipped'


def read_lines(path):
    with open(path, errors='replace') as f:
        return [line.rstrip('\r\n') for line in f]


# How many of the diagnostic lines before a failed result are kept to print with it.
DIAG_LINES = 5
# And the last lines of a failed program's stderr.
ERR_LINES = 3
TAP_SKIP_ALL = re.compile(r'^1\.\.0\s*#\s*SKIP\S*\s*(?P<why>.*)$', re.I)


def parse_tap(lines, counts):
    """Count a TAP stream.

    A plan that promises more results than arrived, results beyond the plan, two plans
    and no plan at all are failures; `1..0 # SKIP why` is one skip, with its reason.
    """
    plans, plan, seen = 0, None, 0
    diag = []   # the diagnostics since the last result, which say why the next one failed
    for line in lines:
        if line.startswith('#'):
            diag = (diag + [line[1:].strip()])[-DIAG_LINES:]
            continue
        m = TAP_PLAN.match(line)
        if m:
            plans += 1
            if plans == 2:
                counts.fail('two plans', f'a second plan "{line}"')
            plan = int(m.group(1))
            skip_all = TAP_SKIP_ALL.match(line)
            if plan == 0 and skip_all:
                counts.skip('all', skip_all.group('why').strip() or 'no reason given')
            continue
        if line.startswith('Bail out!'):
            counts.fail('bail out', line[9:].strip())
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        seen += 1
        before, diag = diag, []
        ok = m.group('ok').lower() == 'ok'
        directive = (m.group('dir') or '').upper()
        desc = m.group('desc').strip()
        why = m.group('why') or ''
        if directive == 'SKIP':
            counts.skip(desc, why.strip())
        elif directive == 'TODO':
            if ok:
                counts.passed += 1
                counts.notes.append(f'{desc}: {why}')
            else:
                counts.skip(desc, f'TODO {why}'.strip())
        elif ok:
            counts.passed += 1
        else:
            counts.fail(desc, diag=before)
    if plan is None:
        counts.fail('no TAP plan', 'the program died before printing its plan'
                    if seen else 'no TAP at all: the program printed nothing it was started for')
    elif seen < plan:
        counts.failed += plan - seen
        counts.failures.append(('missing results', f'{plan - seen} of {plan} never reported'))
    elif seen > plan:
        counts.fail('results beyond the plan', f'{seen} results for a plan of {plan}')
    return counts


def judge_exit(path, counts):
    """A TAP program's exit status ("STATUS LIMIT TOOK" in NAME.exit, from the guest's
    run_tap): a timeout, a death by signal, or a non-zero status with every result
    passed is a failure, so a crash after the last result cannot pass."""
    try:
        rc, secs = (read_lines(path) or [''])[0].split()[:2]
        rc = int(rc)
    except (OSError, ValueError):
        counts.fail('exit status', f'unreadable {path}')
        return counts
    if rc == 124:
        counts.fail('timeout', f'killed after {secs} s')
    elif rc > 128:
        counts.fail('exit status', f'died of signal {rc - 128}')
    elif rc and not counts.failed:
        counts.fail('exit status', f'exited {rc} although every result it printed passed')
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
                    c.skip(m.group('desc').strip(), (m.group('why') or '').strip())
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
                c.skip('all', (m.group('why') or '').strip())
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


def suite_file(name):
    """The expected-skips file of a suite: verbs/odp -> verbs-odp.skips."""
    return name.replace('/', '-') + '.skips'


class SkipRule:
    def __init__(self, profiles, count, reason, where):
        self.profiles, self.count, self.where = profiles, count, where
        self.reason = re.compile(reason)

    def applies(self, profile):
        return any(fnmatch.fnmatchcase(profile, p) for p in self.profiles.split(','))


def read_expected_skips(d):
    """{file name: [SkipRule]} from DIR/*.skips. Each line: PROFILES COUNT REASON, where
    PROFILES is a comma-separated list of globs (* for all), COUNT the most skips the
    line allows per run, REASON a regular expression searched in the skip's reason."""
    rules = {}
    for fn in sorted(os.listdir(d)):
        if not fn.endswith('.skips'):
            continue
        for n, line in enumerate(read_lines(os.path.join(d, fn)), 1):
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            parts = line.split(None, 2)
            if len(parts) != 3 or not parts[1].isdigit():
                raise ValueError(f'{fn}:{n}: want "PROFILES COUNT REASON", got "{line}"')
            rules.setdefault(fn, []).append(SkipRule(parts[0], int(parts[1]), parts[2],
                                                     f'{fn}:{n}'))
    return rules


def judge_skips(suite, profile, counts, rules):
    """Every skip must be one the suite's expected-skips file allows on this profile,
    within its count; any other is a failure, so a pass that turns into a skip (a
    feature lost, a counter gone) fails the run."""
    left = {id(r): r.count for r in rules}
    for name, why in counts.skips:
        rule = next((r for r in rules if r.applies(profile) and left[id(r)] > 0 and
                     r.reason.search(why)), None)
        if rule:
            left[id(rule)] -= 1
        else:
            counts.fail(f'unexpected skip: {name}',
                        f'"{why}" (not allowed by tests/expected-skips/{suite_file(suite)})')


def read_facts(path):
    facts = {}
    if os.path.exists(path):
        for line in read_lines(path):
            k, _, v = line.partition('=')
            facts[k] = v
    return facts


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


# A kernel message printed while the guest writes a line to the console lands inside that
# line ("vmtest: initramf[    2.11] tsc: ...MHz" then "s started on 6.12"): the guest's own
# lines are what is left once every kernel message, from its time stamp to the end of its
# line, is cut out.
KMSG = re.compile(r'\[\s*\d+\.\d+\] [^\n]*\n')


def guest_lines(lines):
    return KMSG.sub('', '\n'.join(lines) + '\n').splitlines()


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
