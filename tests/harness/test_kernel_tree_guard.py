# SPDX-License-Identifier: GPL-2.0
"""Host-side tests of the guard that keeps scripts from discarding a developer's kernel work.

scripts/kernel-source.sh resets or deletes build/linux when kernel/patches or the source
package changed; scripts/lib.sh's guard_kernel_tree must stop it, in one line, whenever
the tree holds work kernel/patches does not (commits, changes, untracked or ignored
files, a git am in progress), and let FORCE=1 go on.
"""
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def git(tree, *args):
    subprocess.run(['git', '-C', tree, '-c', 'user.name=t', '-c', 'user.email=t@t', *args],
                   check=True, capture_output=True)


def guard(tree, force=False):
    """Run guard_kernel_tree on tree: (exit status, what it printed)."""
    env = dict(os.environ, FORCE='1' if force else '')
    p = subprocess.run(['bash', '-c', '. "$0/scripts/lib.sh"; guard_kernel_tree "$1" resetting',
                        ROOT, tree], env=env, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


class KernelTreeGuardTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tree = self.tmp.name
        git(self.tree, 'init', '-q', '-b', 'series')
        self.write('Makefile', 'pristine\n')
        git(self.tree, 'add', '-A')
        git(self.tree, 'commit', '-q', '-m', 'base')
        git(self.tree, 'tag', 'base')
        head = subprocess.run(['git', '-C', self.tree, 'rev-parse', 'HEAD'], check=True,
                              capture_output=True, text=True).stdout
        self.write(os.path.join('.git', 'applied-head'), head)

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text, mode='w'):
        with open(os.path.join(self.tree, name), mode) as f:
            f.write(text)

    def test_tree_as_applied_is_safe(self):
        self.assertEqual(guard(self.tree), (0, ''))

    def test_no_tree_is_safe(self):
        self.assertEqual(guard(os.path.join(self.tree, 'absent'))[0], 0)

    def test_unexported_commit_stops_it(self):
        self.write('Makefile', 'my work\n', 'a')
        git(self.tree, 'commit', '-q', '-am', 'work')
        rc, out = guard(self.tree)
        self.assertNotEqual(rc, 0)
        self.assertIn('commits not in kernel/patches', out)
        self.assertIn('FORCE=1', out)
        self.assertEqual(len(out.splitlines()), 1)

    def test_uncommitted_change_stops_it(self):
        self.write('Makefile', 'not committed\n', 'a')
        rc, out = guard(self.tree)
        self.assertNotEqual(rc, 0)
        self.assertIn('uncommitted changes', out)

    def test_untracked_file_stops_it(self):
        self.write('new.c', 'int x;\n')
        rc, out = guard(self.tree)
        self.assertNotEqual(rc, 0)
        self.assertIn('untracked', out)

    def test_ignored_file_stops_it(self):
        self.write('.gitignore', 'tags\n')
        git(self.tree, 'add', '.gitignore')
        git(self.tree, 'commit', '-q', '-m', 'ignore tags')
        head = subprocess.run(['git', '-C', self.tree, 'rev-parse', 'HEAD'], check=True,
                              capture_output=True, text=True).stdout
        self.write(os.path.join('.git', 'applied-head'), head)
        self.assertEqual(guard(self.tree), (0, ''))
        self.write('tags', 'my index\n')
        rc, out = guard(self.tree)
        self.assertNotEqual(rc, 0)
        self.assertIn('files git ignores', out)
        self.assertIn('tags', out)

    def test_am_in_progress_stops_it(self):
        os.mkdir(os.path.join(self.tree, '.git', 'rebase-apply'))
        rc, out = guard(self.tree)
        self.assertNotEqual(rc, 0)
        self.assertIn('in progress', out)

    def test_fresh_tree_without_record_is_safe(self):
        # As kernel-source.sh leaves a tree it has just unpacked (before this record
        # existed): nothing on its base, nothing to lose.
        os.remove(os.path.join(self.tree, '.git', 'applied-head'))
        self.assertEqual(guard(self.tree), (0, ''))

    def test_unrecorded_commits_not_in_the_series_stop_it(self):
        os.remove(os.path.join(self.tree, '.git', 'applied-head'))
        self.write('Makefile', 'my work\n', 'a')
        git(self.tree, 'commit', '-q', '-am', 'work')
        rc, out = guard(self.tree)
        self.assertNotEqual(rc, 0)
        self.assertIn('1 commits on its base', out)

    def test_force_goes_on_and_says_so(self):
        self.write('new.c', 'int x;\n')
        rc, out = guard(self.tree, force=True)
        self.assertEqual(rc, 0)
        self.assertIn('FORCE=1', out)


if __name__ == '__main__':
    unittest.main()
