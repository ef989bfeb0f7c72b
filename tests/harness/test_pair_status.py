# SPDX-License-Identifier: GPL-2.0
"""Host-side tests of pair_status, the reason a two-host suite gives for a failed pair.

A CI run keeps only what `make test` prints, not the guests' files: the TAP line of a
failed client/server pair (scripts/guest/cluster-lib.sh) must carry each failed side's
last words, and nothing that TAP would read as a directive.
"""
import os
import re
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIB = os.path.join(ROOT, 'scripts', 'guest', 'cluster-lib.sh')


def pair_status_source():
    """pair_status's definition alone (the library itself needs a guest to source)."""
    with open(LIB) as f:
        m = re.search(r'^pair_status\(\) \{\n.*?^\}\n', f.read(), re.M | re.S)
    assert m, 'no pair_status() in ' + LIB
    return m.group(0)


class PairStatusTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.prefix = os.path.join(self.tmp.name, 'pair')

    def tearDown(self):
        self.tmp.cleanup()

    def status(self, client, server, client_out, server_out):
        for side, out in (('client', client_out), ('server', server_out)):
            with open(f'{self.prefix}.{side}', 'w') as f:
                f.write(out)
        script = pair_status_source() + 'pair_status\n'
        env = dict(os.environ, pair_prefix=self.prefix, pair_client=str(client),
                   pair_server=str(server), log='/results/x.log')
        p = subprocess.run(['bash', '-c', script], env=env, capture_output=True, text=True,
                           check=True)
        return p.stdout.strip()

    def test_failed_sides_say_why(self):
        got = self.status(124, 1, '  remote address: LID 0x0000, QPN 0x000011\n',
                          '  local address: x\n'
                          'Failed status transport retry counter exceeded (12) for wr_id 2\n'
                          '\n')
        self.assertEqual(got, 'client exit 124: "remote address: LID 0x0000, QPN 0x000011", '
                              'server exit 1: "Failed status transport retry counter exceeded '
                              '(12) for wr_id 2"; log: /results/x.log')

    def test_a_side_that_succeeded_is_only_its_status(self):
        got = self.status(0, 1, 'all fine\n', 'Couldn\'t listen to port 18515\n')
        self.assertEqual(got, 'client exit 0, server exit 1: "Couldn\'t listen to port 18515"; '
                              'log: /results/x.log')

    def test_no_tap_directive_and_no_long_line(self):
        got = self.status(2, 0, 'error # TODO ' + 'x' * 300 + '\r\n', 'ok\n')
        self.assertNotIn('#', got)
        self.assertNotIn('\r', got)
        quoted = re.search(r'client exit 2: "([^"]*)"', got).group(1)
        self.assertEqual(len(quoted), 160)

    def test_a_side_that_printed_nothing(self):
        self.assertEqual(self.status(1, 0, '', 'ok\n'),
                         'client exit 1, server exit 0; log: /results/x.log')


if __name__ == '__main__':
    unittest.main()
