# SPDX-License-Identifier: GPL-2.0
"""The rule that decides which profiles run which test program holds together.

Each tests/verbs program declares its class (" * vmtest-class: dma|mm|nodma"), each VM
profile the classes it runs (PROGRAM_CLASSES), and scripts/guest/lib.sh program_here
joins them. Checked here: every program declares one known class, every profile names
only known classes, every class runs somewhere, and every mutant's killer program still
runs on the profile the mutant boots, so that no cut leaves a mutant alive. A suite of
tests/suites/ may declare a class for all of it ("# vmtest-class: nodma"), read the same
way (lib.sh declared_class).
"""
import glob
import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLASSES = {'dma', 'mm', 'nodma'}
CLASS_RE = re.compile(r'^ \* vmtest-class: *([a-z]*) *$', re.M)
# Programs 10-verbs.sh runs a second time under another name, with the class it gives.
INVOCATIONS = {'odp_random-inject': 'mm'}


def program_classes():
    """{program: [declared classes]} of tests/verbs/*.c."""
    found = {}
    for src in sorted(glob.glob(os.path.join(ROOT, 'tests', 'verbs', '*.c'))):
        with open(src, encoding='utf-8') as f:
            found[os.path.basename(src)[:-2]] = CLASS_RE.findall(f.read())
    return found


SUITE_CLASS_RE = re.compile(r'^# vmtest-class: *([a-z]*) *$', re.M)


def suite_classes():
    """{suite name without its number: [declared classes]} of tests/suites/*.sh."""
    found = {}
    for src in sorted(glob.glob(os.path.join(ROOT, 'tests', 'suites', '*.sh'))):
        with open(src, encoding='utf-8') as f:
            name = os.path.basename(src)[:-3].split('-', 1)[1]
            found[name] = SUITE_CLASS_RE.findall(f.read())
    return found


def profile_classes(profile):
    """The classes profile runs, as scripts/vm-run.sh reads them."""
    out = subprocess.run(['bash', '-c', f'. "$1"; echo "${{PROGRAM_CLASSES:-dma mm nodma}}"',
                          'profile', os.path.join(ROOT, 'tests', 'vm', 'profiles',
                                                  f'{profile}.conf')],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def profiles():
    return sorted(os.path.basename(p)[:-5] for p in
                  glob.glob(os.path.join(ROOT, 'tests', 'vm', 'profiles', '*.conf')))


def header(patch, key):
    with open(patch, encoding='utf-8') as f:
        for line in f:
            if line.startswith(key + ':'):
                return line.split(':', 1)[1].split()
            if line.startswith('diff '):
                break
    return []


class ProgramClassesTest(unittest.TestCase):
    def test_each_program_declares_one_known_class(self):
        for program, classes in program_classes().items():
            with self.subTest(program=program):
                self.assertEqual(len(classes), 1,
                                 f'tests/verbs/{program}.c declares {len(classes)} classes')
                self.assertIn(classes[0], CLASSES)

    def test_each_suite_declares_at_most_one_known_class(self):
        for suite, classes in suite_classes().items():
            with self.subTest(suite=suite):
                self.assertLessEqual(len(classes), 1, f'{suite} declares {len(classes)} classes')
                self.assertLessEqual(set(classes), CLASSES)

    def test_every_profile_runs_the_verbs_suite(self):
        """scripts/guest/lib.sh decides, given each profile's classes and GUEST_SUITES."""
        lib = os.path.join(ROOT, 'scripts', 'guest', 'lib.sh')
        verbs = os.path.join(ROOT, 'tests', 'suites', '10-verbs.sh')
        for profile in profiles():
            conf = os.path.join(ROOT, 'tests', 'vm', 'profiles', f'{profile}.conf')
            script = ('. "$1"; vmt_classes=$(echo ${PROGRAM_CLASSES:-dma mm nodma} | tr " " ,) '
                      'vmt_suites=$GUEST_SUITES vmt_out=/nonexistent; . "$2"; '
                      'suite_wanted 10-verbs && suite_class_here "$3"')
            with self.subTest(profile=profile):
                got = subprocess.run(['bash', '-c', script, 'check', conf, lib, verbs],
                                     capture_output=True, text=True)
                self.assertEqual(got.returncode, 0, f'{profile} would not run 10-verbs.sh '
                                 f'{got.stderr.strip()}')

    def test_profiles_name_known_classes_and_each_class_runs(self):
        ran = set()
        for profile in profiles():
            with self.subTest(profile=profile):
                got = profile_classes(profile)
                self.assertLessEqual(got, CLASSES, f'{profile}: unknown classes {got - CLASSES}')
                ran |= got
        self.assertEqual(ran, CLASSES, 'a class no profile runs')

    def test_every_mutant_killer_runs_where_the_mutant_boots(self):
        declared = {p: c[0] for p, c in program_classes().items() if c}
        for patch in sorted(glob.glob(os.path.join(ROOT, 'tests', 'mutants', '*.patch'))):
            profile = (header(patch, 'Profile') or ['iommu-strict'])[0]
            here = profile_classes(profile)
            for killer in header(patch, 'Killed-by'):
                if not killer.startswith('verbs/'):
                    # A killer named after a suite of tests/suites/ (libibodp-device):
                    # the suite's own class must run there.
                    suite = next((n for n in suite_classes() if killer.startswith(n)), None)
                    # A suite that declares no class runs on every profile.
                    if suite is not None and suite_classes()[suite]:
                        cls = suite_classes()[suite][0]
                        with self.subTest(mutant=os.path.basename(patch), killer=killer):
                            self.assertIn(cls, here, f'suite {suite} (class {cls}) does not '
                                          f'run on {profile}')
                    continue
                name = killer[len('verbs/'):]
                program = name.split('-')[0]
                cls = INVOCATIONS.get(name, declared.get(program))
                with self.subTest(mutant=os.path.basename(patch), killer=killer):
                    self.assertIsNotNone(cls, f'{killer}: no such program')
                    self.assertIn(cls, here, f'{killer} (class {cls}) does not run on {profile}')


if __name__ == '__main__':
    unittest.main()
