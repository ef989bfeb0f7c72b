#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The cluster's Ethernet segment: a hub between its guests, on 127.0.0.1 only.

QEMU's dgram netdev carries one Ethernet frame per UDP datagram. Each node gets a port of
the hub; a frame from a node goes to every other node (a hub floods, which a segment of
two to four nodes can afford), so traffic flows only between the guests and never reaches
another network.

    cluster-hub.py NODES PORTFILE

binds the hub's ports, picks one port per node for QEMU, writes "HUB_PORT NODE_PORT" per
node into PORTFILE (written whole, then renamed: its presence means the hub is ready)
and forwards until killed.
"""
import os
import select
import socket
import sys

HOST = '127.0.0.1'


def free_port():
    """A UDP port nothing is bound to now, for a node's QEMU to bind."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def main():
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or not 2 <= int(sys.argv[1]) <= 16:
        sys.exit('usage: cluster-hub.py NODES(2-16) PORTFILE')
    nodes, portfile = int(sys.argv[1]), sys.argv[2]
    hub = []
    for _ in range(nodes):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((HOST, 0))
        hub.append(s)
    qemu = [free_port() for _ in range(nodes)]
    with open(portfile + '.tmp', 'w') as f:
        for s, port in zip(hub, qemu):
            f.write(f'{s.getsockname()[1]} {port}\n')
    os.rename(portfile + '.tmp', portfile)

    while True:
        ready, _, _ = select.select(hub, [], [])
        for s in ready:
            frame = s.recv(65536)
            i = hub.index(s)
            for j in range(nodes):
                if j != i:
                    # A node whose QEMU is not up yet drops the frame, as a cable would.
                    try:
                        hub[j].sendto(frame, (HOST, qemu[j]))
                    except OSError:
                        pass


if __name__ == '__main__':
    main()
