# SPDX-License-Identifier: GPL-2.0
"""Every kept mutant (tests/mutants/*.patch) still applies to the series.

A mutant that no longer applies proves nothing, and `make mutants` finds out only when
someone runs it: three of them had rotted this way after rxe_odp.c changed. Checked
against the `series` branch of the kernel tree (BUILD/linux, made by
scripts/kernel-source.sh before the host suites run), in a scratch index, so a
developer's uncommitted work in the tree neither matters nor is touched.
"""
import glob
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TREE = os.path.join(os.environ.get('BUILD') or os.path.join(ROOT, 'build'), 'linux')
MUTANTS = sorted(glob.glob(os.path.join(ROOT, 'tests', 'mutants', '*.patch')))


class SeriesIndex:
    """A scratch git index holding the series branch: apply_check() checks patches on it."""

    def __enter__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = dict(os.environ, GIT_INDEX_FILE=os.path.join(self.tmp.name, 'index'))
        subprocess.run(['git', '-C', TREE, 'read-tree', 'series'], env=self.env, check=True,
                       capture_output=True)
        return self

    def __exit__(self, *exc):
        self.tmp.cleanup()

    def apply_check(self, patch):
        """(True, '') when patch applies, else (False, git's words)."""
        p = subprocess.run(['git', '-C', TREE, 'apply', '--cached', '--check', patch],
                           env=self.env, capture_output=True, text=True)
        return p.returncode == 0, p.stderr.strip()


@unittest.skipUnless(os.path.isdir(os.path.join(TREE, '.git')),
                     f'no kernel tree in {TREE}: run scripts/kernel-source.sh first')
class MutantsApplyTest(unittest.TestCase):
    def test_there_are_mutants(self):
        self.assertGreater(len(MUTANTS), 0)

    def test_each_applies_to_the_series(self):
        with SeriesIndex() as index:
            for patch in MUTANTS:
                with self.subTest(mutant=os.path.basename(patch)):
                    ok, why = index.apply_check(patch)
                    self.assertTrue(ok, f'{os.path.basename(patch)} does not apply: {why}')

    def test_a_patch_that_does_not_apply_is_caught(self):
        with tempfile.NamedTemporaryFile('w', suffix='.patch') as f:
            f.write('--- a/Makefile\n+++ b/Makefile\n@@ -1,1 +1,1 @@\n'
                    '-no such line in the kernel Makefile\n+x\n')
            f.flush()
            with SeriesIndex() as index:
                self.assertFalse(index.apply_check(f.name)[0])


if __name__ == '__main__':
    unittest.main()
