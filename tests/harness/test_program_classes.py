# SPDX-License-Identifier: GPL-2.0
"""The rule that decides which profiles run which test program holds together.

Each tests/verbs program declares its class (" * vmtest-class: dma|mm|nodma"), each VM
profile the classes it runs (PROGRAM_CLASSES), and scripts/guest/lib.sh program_here
joins them. Checked here: every program declares one known class, every profile names
only known classes, every class runs somewhere, and every mutant's killer program still
runs on the profile the mutant boots, so that no cut leaves a mutant alive.
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
                    continue
                name = killer[len('verbs/'):]
                program = name.split('-')[0]
                cls = INVOCATIONS.get(name, declared.get(program))
                with self.subTest(mutant=os.path.basename(patch), killer=killer):
                    self.assertIsNotNone(cls, f'{killer}: no such program')
                    self.assertIn(cls, here, f'{killer} (class {cls}) does not run on {profile}')


if __name__ == '__main__':
    unittest.main()
