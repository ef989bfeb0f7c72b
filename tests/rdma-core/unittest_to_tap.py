#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the verbose (-v) stderr of a unittest run into TAP.

Every test becomes one TAP line: ok, not ok, ok with # SKIP and the skip reason. A failure
listed in the expected-failures file becomes `not ok ... # TODO reason` (not counted as a
failure); a listed test that passes becomes `ok ... # TODO` so that the list can shrink,
unless its reason starts with `flaky:` (a race that fails only sometimes).
A run that stopped before unittest's closing `Ran N tests` line adds one failing line.
"""
import argparse
import re
import sys

# "test_x (tests.mod.Class.test_x) ... ok"; the docstring may put "... ok" on a later line.
HEAD = re.compile(r'^(?P<name>\w+) \((?P<where>[\w.]+)\)')
TAIL = re.compile(r" \.\.\. (?P<res>ok|FAIL|ERROR|skipped (?P<why>.*)|expected failure|"
                  r"unexpected success)$")
RAN = re.compile(r'^Ran (\d+) tests? in')


def test_id(name, where):
    # Python >= 3.11 prints module.Class.test; older ones module.Class.
    return where if where.endswith('.' + name) else where + '.' + name


def parse(lines):
    results, ran, current = [], None, None
    for line in lines:
        line = line.rstrip('\n')
        m = HEAD.match(line)
        if m:
            current = test_id(m.group('name'), m.group('where'))
        t = TAIL.search(line)
        if t and current:
            results.append((current, t.group('res'), t.group('why')))
            current = None
        r = RAN.match(line)
        if r:
            ran = int(r.group(1))
    return results, ran


def load_expected(path):
    expected = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            tid, _, why = line.partition(' ')
            expected[tid] = why.strip() or 'no reason given'
    return expected


def to_tap(results, ran, expected):
    out = []
    for tid, res, why in results:
        if res == 'ok' or res == 'expected failure':
            if tid in expected and not expected[tid].startswith('flaky:'):
                out.append(f'ok - {tid} # TODO passes now; remove it from expected-failures')
            else:
                out.append(f'ok - {tid}')
        elif res.startswith('skipped'):
            reason = (why or '').strip().strip('\'"') or 'no reason given'
            out.append(f'ok - {tid} # SKIP {reason}')
        elif tid in expected:
            out.append(f'not ok - {tid} # TODO known failure on rxe: {expected[tid]}')
        else:
            out.append(f'not ok - {tid} ({res})')
    if ran is None:
        out.append('not ok - run_tests.py stopped before its summary (crash or timeout?)')
    return [f'1..{len(out)}'] + out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--expected', required=True, help='expected-failures file')
    ap.add_argument('log', help='stderr of run_tests.py -v')
    args = ap.parse_args()
    with open(args.log, errors='replace') as f:
        results, ran = parse(f)
    for line in to_tap(results, ran, load_expected(args.expected)):
        print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main())
