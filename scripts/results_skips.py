#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Expected skips: tests/expected-skips/SUITE.skips says which skips a suite may report
on which profile, and how many; any other skip is a failure."""
import fnmatch
import os
import re

from results_parse import read_lines


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
