# SPDX-License-Identifier: GPL-2.0
"""Each VM profile's guest CPUs agree with the machine its QEMU devices describe.

A profile says how many CPUs its guest has (GUEST_CPUS, scripts/lib.sh profile_cpus),
scripts/vm-run.sh gives QEMU that many, and scripts/test.sh runs VMs side by side only
while their CPUs fit the host's. A profile whose QEMU_DEVICES name a CPU topology of their
own (distro-mm's NUMA machine, and debug and debug-mm built on it with one CPU) must name
the same count and give no NUMA node a CPU the guest lacks: QEMU refuses such a machine,
and a count larger than GUEST_CPUS would overcommit the host behind test.sh's back.
"""
import glob
import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROFILES = os.path.join(ROOT, 'tests', 'vm', 'profiles')


def profile(name):
    """(GUEST_CPUS as scripts/lib.sh profile_cpus reads it, QEMU_DEVICES) of a profile."""
    script = '. "$1/scripts/lib.sh"; profile_cpus "$2"; . "$3"; echo "$QEMU_DEVICES"'
    out = subprocess.run(['bash', '-c', script, 'profile', ROOT, name,
                          os.path.join(PROFILES, f'{name}.conf')],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    cpus, devices = out.stdout.split('\n', 1)
    return int(cpus), devices.strip()


class ProfileCpusTest(unittest.TestCase):
    def test_topology_matches_guest_cpus(self):
        names = sorted(os.path.basename(p)[:-5] for p in glob.glob(f'{PROFILES}/*.conf'))
        self.assertIn('debug', names)
        for name in names:
            with self.subTest(profile=name):
                cpus, devices = profile(name)
                self.assertIn(cpus, (1, 2), 'GUEST_CPUS must be 1 or 2 on a 2-core host')
                for smp in re.findall(r'-smp (\S+)', devices):
                    self.assertEqual(int(smp.split(',')[0]), cpus,
                                     f'QEMU_DEVICES say -smp {smp}, GUEST_CPUS {cpus}')
                for node_cpus in re.findall(r'-numa node,[^ ]*cpus=(\d+)', devices):
                    self.assertLess(int(node_cpus), cpus,
                                    f'a NUMA node names CPU {node_cpus} of {cpus}')

    def test_cpus_where_they_buy_something(self):
        # The races side by side (iommu-strict) and reclaim beside traffic (distro-mm)
        # need two; the debug kernel's two VMs share the host's two cores.
        expected = {'iommu-strict': 2, 'distro-mm': 2, 'debug': 1, 'debug-mm': 1}
        for name, cpus in expected.items():
            with self.subTest(profile=name):
                self.assertEqual(profile(name)[0], cpus)


if __name__ == '__main__':
    unittest.main()
