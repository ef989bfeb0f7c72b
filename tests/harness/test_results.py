# SPDX-License-Identifier: GPL-2.0
"""Host-side tests of the parsers that decide pass and fail for the guest suites."""
import contextlib
import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


results = load('results', 'scripts/results.py')
to_tap = load('unittest_to_tap', 'tests/rdma-core/unittest_to_tap.py')


def tap(text):
    return results.parse_tap(text.splitlines(), results.Counts())


class TapTest(unittest.TestCase):
    def test_counts_each_kind(self):
        c = tap('1..5\nok 1 - a\nnot ok 2 - b\nok 3 - c # SKIP no device\n'
                'not ok 4 - d # TODO known\nok 5 - e # TODO fixed\n')
        self.assertEqual((c.passed, c.failed, c.skipped), (2, 1, 2))
        self.assertEqual(c.failures, [('b', '')])
        self.assertEqual(len(c.notes), 1)

    def test_failure_keeps_the_diagnostics_before_it(self):
        c = tap('1..3\n# setup\nok 1 - a\n' + ''.join(f'# line {i}\n' for i in range(7)) +
                'not ok 2 - b\n# after\nok 3 - c\n')
        self.assertEqual(c.failures, [('b', '')])
        self.assertEqual(c.diags, {0: [f'line {i}' for i in range(2, 7)]})

    def test_missing_results_fail(self):
        c = tap('1..4\nok 1 - a\nok 2 - b\n')
        self.assertEqual((c.passed, c.failed), (2, 2))

    def test_no_plan_fails(self):
        self.assertEqual(tap('ok 1 - a\n').failed, 1)

    def test_plan_at_end_and_diagnostics(self):
        c = tap('# hello\nok 1 - a\n# not ok in a comment\n1..1\n')
        self.assertEqual((c.passed, c.failed, c.skipped), (1, 0, 0))

    def test_bail_out_fails(self):
        self.assertEqual(tap('1..1\nBail out! no device\n').failed, 2)

    def test_skip_all_plan_is_one_skip_with_its_reason(self):
        c = tap('1..0 # SKIP no HMM test driver\n')
        self.assertEqual((c.passed, c.failed, c.skipped), (0, 0, 1))
        self.assertEqual(c.skips, [('all', 'no HMM test driver')])

    def test_results_beyond_the_plan_fail(self):
        c = tap('1..1\nok 1 - a\nok 2 - b\n')
        self.assertEqual((c.passed, c.failed), (2, 1))

    def test_two_plans_fail(self):
        c = tap('1..1\nok 1 - a\n1..1\n')
        self.assertEqual(c.failed, 1)
        self.assertEqual(c.failures[0][0], 'two plans')

    def test_empty_output_fails(self):
        c = tap('')
        self.assertEqual(c.failed, 1)
        self.assertIn('printed nothing', c.failures[0][1])


class ExitStatusTest(unittest.TestCase):
    def judge(self, status, text='1..1\nok 1 - a\n'):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'x.exit')
            with open(path, 'w') as f:
                f.write(status + '\n')
            return results.judge_exit(path, tap(text))

    def test_clean_exit_passes(self):
        self.assertEqual(self.judge('0 300').failed, 0)

    def test_crash_after_the_last_result_fails(self):
        c = self.judge('139 300')
        self.assertEqual((c.passed, c.failed), (1, 1))
        self.assertIn('signal 11', c.failures[0][1])

    def test_non_zero_exit_with_all_passed_fails(self):
        self.assertEqual(self.judge('1 300').failed, 1)

    def test_timeout_is_named(self):
        c = self.judge('124 300')
        self.assertEqual(c.failures[0], ('timeout', 'killed after 300 s'))

    def test_failing_program_is_not_counted_twice(self):
        self.assertEqual(self.judge('1 300', '1..1\nnot ok 1 - a\n').failed, 1)


class StderrOfFailedProgramTest(unittest.TestCase):
    def suites(self, tap_text, status):
        with tempfile.TemporaryDirectory() as d:
            for ext, text in (('tap', tap_text), ('exit', f'{status} 300 12\n'),
                              ('err', 'one\n\ntwo\nthree\nno completion within 60000 ms\n')):
                with open(os.path.join(d, f'verbs-x.{ext}'), 'w') as f:
                    f.write(text)
            return results.tap_suites(d, 'p', None)

    def test_last_lines_noted_with_a_failure(self):
        [(name, c)] = self.suites('1..1\nnot ok 1 - a\n', 1)
        self.assertEqual(name, 'verbs/x')
        self.assertEqual(c.notes, ['stderr: two', 'stderr: three',
                                   'stderr: no completion within 60000 ms'])

    def test_noted_with_a_bad_exit_status(self):
        [(_, c)] = self.suites('1..1\nok 1 - a\n', 1)
        self.assertEqual(c.failures[0][0], 'exit status')
        self.assertEqual(len(c.notes), 3)

    def test_not_noted_when_everything_passed(self):
        [(_, c)] = self.suites('1..1\nok 1 - a\n', 0)
        self.assertEqual(c.notes, [])


class ExpectedSkipsTest(unittest.TestCase):
    RULES = ('# comment\n'
             '*                  1  ^no IOMMU DMA domain$\n'
             'no-iommu,swiotlb   2  bounce\n')

    def judge(self, profile, text):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, 'verbs-odp.skips'), 'w') as f:
                f.write(self.RULES)
            rules = results.read_expected_skips(d)
        c = tap(text)
        results.judge_skips('verbs/odp', profile, c, rules.get('verbs-odp.skips', []))
        return c

    def test_allowed_skips_pass(self):
        c = self.judge('swiotlb', '1..3\nok 1 - a # SKIP no IOMMU DMA domain\n'
                       'ok 2 - b # SKIP would bounce\nok 3 - c # SKIP bounce again\n')
        self.assertEqual((c.failed, c.skipped), (0, 3))

    def test_skip_of_another_reason_fails(self):
        c = self.judge('iommu-strict', '1..1\nok 1 - a # SKIP no ODP counters\n')
        self.assertEqual(c.failed, 1)
        self.assertIn('unexpected skip', c.failures[0][0])

    def test_more_skips_than_the_count_fail(self):
        c = self.judge('iommu-strict', '1..2\nok 1 - a # SKIP no IOMMU DMA domain\n'
                       'ok 2 - b # SKIP no IOMMU DMA domain\n')
        self.assertEqual(c.failed, 1)

    def test_rule_for_other_profiles_does_not_apply(self):
        c = self.judge('iommu-strict', '1..1\nok 1 - a # SKIP would bounce\n')
        self.assertEqual(c.failed, 1)

    def test_suite_without_a_file_may_not_skip(self):
        c = tap('1..1\nok 1 - a # SKIP anything\n')
        results.judge_skips('verbs/odp_huge', 'debug', c, [])
        self.assertEqual(c.failed, 1)

    def test_bad_line_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, 'x.skips'), 'w') as f:
                f.write('* many reasons\n')
            with self.assertRaises(ValueError):
                results.read_expected_skips(d)

    def test_checked_in_files_parse(self):
        rules = results.read_expected_skips(os.path.join(ROOT, 'tests', 'expected-skips'))
        self.assertIn('rdma-core.skips', rules)


KTAP = """\
[    1.000000] KTAP version 1
[    1.000001] 1..2
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: alpha
[    1.000004]     1..3
[    1.000005]     ok 1 one
[    1.000006]         KTAP version 1
[    1.000007]         # Subtest: two
[    1.000008]         ok 1 two param 0
[    1.000009]         not ok 2 two param 1
[    1.000010]     not ok 2 two
[    1.000011] e1000e 0000:00:02.0: some unrelated driver message
[    1.000012]     ok 3 three # SKIP not here
[    1.000013] # alpha: pass:1 fail:1 skip:1 total:3
[    1.000014] not ok 1 alpha
[    1.000015]     KTAP version 1
[    1.000016]     # Subtest: beta
[    1.000017]     1..1
[    1.000018]     ok 1 only
[    1.000019] ok 2 beta
"""


class KtapTest(unittest.TestCase):
    def test_cases_per_suite(self):
        s = results.parse_ktap(KTAP.splitlines())
        self.assertEqual(sorted(s), ['alpha', 'beta'])
        a, b = s['alpha'], s['beta']
        self.assertEqual((a.passed, a.failed, a.skipped), (1, 1, 1))
        self.assertEqual((b.passed, b.failed, b.skipped), (1, 0, 0))

    def test_failed_suite_without_failed_case(self):
        s = results.parse_ktap(['KTAP version 1', '1..1', '    # Subtest: x', '    1..1',
                                '    ok 1 a', 'not ok 1 x'])
        self.assertEqual(s['x'].failed, 1)

    def test_suite_skipped_as_a_whole(self):
        s = results.parse_ktap(['KTAP version 1', '1..1', '    # Subtest: x',
                                '    1..0', 'ok 1 x # SKIP not configured'])
        self.assertEqual((s['x'].passed, s['x'].skipped), (0, 1))


class SplatTest(unittest.TestCase):
    def test_finds_reports(self):
        for line, what in [
            ('[ 5.1] BUG: KASAN: slab-out-of-bounds in foo+0x1/0x2', 'KASAN report'),
            ('[ 5.1] WARNING: CPU: 1 PID: 42 at mm/hmm.c:10 hmm_x+0x1', 'kernel WARN'),
            ('[ 5.1] WARNING: possible circular locking dependency detected',
             'lockdep report'),
            ('[ 5.1] Kernel panic - not syncing: Attempted to kill init!', 'kernel panic'),
            ('[ 5.1] Oops: 0000 [#1] PREEMPT SMP', 'kernel oops'),
            ('[ 5.1] e1000e 0000:00:02.0: DMA-API: device driver frees DMA memory',
             'DMA API debug report'),
            ('[ 5.1] DMAR: [DMA Read NO_PASID] Request device [00:03.0] fault addr 0x1000',
             'IOMMU fault'),
            ('[ 5.1] virtio_iommu virtio0: unmapped fault from EP 24 at 0x1000 [R]',
             'IOMMU fault'),
        ]:
            self.assertEqual(results.find_splat(['[ 0.0] booting', line])[0], what, line)

    def test_expected_warn(self):
        warn = '[ 5.2] WARNING: CPU: 0 PID: 1 at drivers/iommu/dma-iommu.c:9 dma_iova_link+0x2d/0x90'
        begin = '[ 5.1] expect WARNING in dma_iova_link: begin'
        end = '[ 5.3] expect WARNING in dma_iova_link: end'
        self.assertIsNone(results.find_splat([begin, warn, end]))
        # Outside the window, from another function, or another kind of report: still bugs.
        self.assertEqual(results.find_splat([begin, end, warn])[0], 'kernel WARN')
        other = warn.replace('dma_iova_link+', 'dma_iova_sync+')
        self.assertEqual(results.find_splat([begin, other, end])[0], 'kernel WARN')
        self.assertEqual(results.find_splat([begin, '[ 5.2] BUG: KASAN: use-after-free in x',
                                             end])[0], 'KASAN report')

    def test_clean_log(self):
        self.assertIsNone(results.find_splat(['[ 0.1] Linux version 6.12',
                                              '[ 0.2] rdma_rxe: loaded',
                                              '[ 0.3] DMA-API: preallocated 65536 debug entries',
                                              '[ 0.3] DMA-API: debugging enabled by kernel config'
                                              ]))


class ConsoleTest(unittest.TestCase):
    def test_guest_line_split_by_a_kernel_message(self):
        lines = ['[    2.01] Run /init as init process',
                 'vmtest: initramf[    2.11] tsc: Refined TSC clocksource calibration: 2095.986 MHz',
                 's started on 6.12.118+',
                 '[    2.12] clocksource: Switched to clocksource tsc',
                 'vmtest: error: cannot create rxe0']
        self.assertEqual(results.guest_lines(lines),
                         ['vmtest: initramfs started on 6.12.118+', 'vmtest: error: cannot create rxe0'])

    def test_kernel_messages_alone_are_no_guest_lines(self):
        self.assertEqual(results.guest_lines(['[ 0.1] Linux version 6.12', '[ 0.2] x']), [])


UNITTEST_LOG = """\
test_a (tests.test_x.X.test_a) ... ok
test_b (tests.test_x.X.test_b)
A docstring line ... skipped 'No ODP caps'
test_resize_cq (tests.test_cq.CQTest.test_resize_cq) ... ERROR
test_c (tests.test_x.X) ... FAIL
setUpClass (tests.test_y.Y) ... ERROR
----------------------------------------------------------------------
Ran 5 tests in 1.0s
"""


class ClusterTest(unittest.TestCase):
    """results.py cluster: both nodes' consoles, node0's end and TAP files."""

    BOOT = 'vmtest: initramfs started on 6.12\n'

    def judge(self, consoles, taps, done=True, status=0, skips=None):
        d = tempfile.mkdtemp()
        for i, text in enumerate(consoles):
            os.makedirs(os.path.join(d, f'node{i}'))
            with open(os.path.join(d, f'node{i}', 'console.log'), 'w') as f:
                f.write(text)
        for name, text in taps.items():
            with open(os.path.join(d, 'node0', name), 'w') as f:
                f.write(text)
        if done:
            open(os.path.join(d, 'node0', 'done'), 'w').close()
        rules = ''
        if skips:
            rules = tempfile.mkdtemp()
            for name, text in skips.items():
                with open(os.path.join(rules, name), 'w') as f:
                    f.write(text)
        args = results.argparse.Namespace(dir=d, name='two-host-p', nodes=len(consoles),
                                          status=status, log='', seconds=1,
                                          expected_skips=rules)
        with open(os.devnull, 'w') as null, contextlib.redirect_stdout(null):
            results.judge_cluster(args)
        with open(os.path.join(d, 'summary.json')) as f:
            return json.load(f)

    def test_clean_run_passes(self):
        s = self.judge([self.BOOT, self.BOOT], {'two-host-mpi.tap': '1..1\nok 1 - a\n'})
        self.assertEqual((s['passed'], s['failed']), (1 + 6, 0))

    def test_a_warn_on_the_peer_fails(self):
        warn = self.BOOT + '[   10.1] WARNING: CPU: 0 PID: 1 at drivers/x.c:1 f+0x1/0x2\n'
        s = self.judge([self.BOOT, warn], {'two-host-mpi.tap': '1..1\nok 1 - a\n'})
        self.assertEqual(s['failed'], 1)

    def test_node0_that_did_not_finish_fails(self):
        s = self.judge([self.BOOT, self.BOOT], {}, done=False, status=1)
        self.assertEqual(s['failed'], 2)

    def test_todo_allowed_only_by_its_skips_file(self):
        todo = {'two-host-ucx.tap': '1..1\nnot ok 1 - x # TODO UCX 1.13 crashes at exit\n'}
        rule = {'two-host-ucx.skips': 'two-host-* 1 UCX 1.13 crashes at exit\n'}
        self.assertEqual(self.judge([self.BOOT, self.BOOT], todo, skips=rule)['failed'], 0)
        other = {'two-host-ucx.skips': 'two-host-* 1 something else\n'}
        self.assertEqual(self.judge([self.BOOT, self.BOOT], todo, skips=other)['failed'], 1)


class UnittestToTapTest(unittest.TestCase):
    def convert(self, log, expected):
        res, ran = to_tap.parse(log.splitlines())
        return tap('\n'.join(to_tap.to_tap(res, ran, expected)))

    def test_conversion(self):
        c = self.convert(UNITTEST_LOG, {'tests.test_cq.CQTest.test_resize_cq': 'why'})
        self.assertEqual((c.passed, c.failed, c.skipped), (1, 2, 2))
        self.assertEqual(sorted(n for n, _ in c.failures),
                         ['tests.test_x.X.test_c (FAIL)', 'tests.test_y.Y.setUpClass (ERROR)'])

    def test_listed_test_that_passes_is_noted(self):
        c = self.convert('test_a (m.C.test_a) ... ok\nRan 1 test in 0.1s\n',
                         {'m.C.test_a': 'flaky'})
        self.assertEqual((c.passed, c.failed), (1, 0))
        self.assertEqual(len(c.notes), 1)

    def test_listed_flaky_test_that_passes_is_not_noted(self):
        c = self.convert('test_a (m.C.test_a) ... ok\nRan 1 test in 0.1s\n',
                         {'m.C.test_a': 'flaky: a race'})
        self.assertEqual((c.passed, c.failed, len(c.notes)), (1, 0, 0))

    def test_crashed_run_fails(self):
        c = self.convert('test_a (m.C.test_a) ... ok\n', {})
        self.assertEqual((c.passed, c.failed), (1, 1))


if __name__ == '__main__':
    unittest.main()
