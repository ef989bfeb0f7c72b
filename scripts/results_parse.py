#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Read what a guest run left: TAP and KTAP streams, program exit statuses, kernel
reports on the console, the guest's own lines and its facts. Nothing here decides
which skips are allowed (results_skips.py) or prints a summary (results.py)."""
import os
import re

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


def read_facts(path):
    facts = {}
    if os.path.exists(path):
        for line in read_lines(path):
            k, _, v = line.partition('=')
            facts[k] = v
    return facts



# A kernel message printed while the guest writes a line to the console lands inside that
# line ("vmtest: initramf[    2.11] tsc: ...MHz" then "s started on 6.12"): the guest's own
# lines are what is left once every kernel message, from its time stamp to the end of its
# line, is cut out.
KMSG = re.compile(r'\[\s*\d+\.\d+\] [^\n]*\n')


def guest_lines(lines):
    return KMSG.sub('', '\n'.join(lines) + '\n').splitlines()
