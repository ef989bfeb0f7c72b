#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The Ethernet segment of a cluster of three or more guests: a hub on Unix sockets.

Each node's QEMU connects its stream netdev to the node's socket, FOLDER/hub-I.sock,
and sends each Ethernet frame as a 4-byte big-endian length and the frame. A frame from
a node goes to every other node (a hub floods, which a segment of a few nodes can
afford). Streams lose nothing: a node that reads slowly holds the hub back rather than
losing frames (over UDP the host dropped one datagram in eight under load, and rxe
retransmits only after its timeout). Nothing leaves the host's Unix sockets.

    cluster-hub.py NODES FOLDER

listens on FOLDER/hub-0.sock .. hub-(NODES-1).sock, then creates FOLDER/hub.ready,
and forwards until killed. A node that disconnects may connect again.
"""
import os
import selectors
import socket
import struct
import sys


def main():
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or not 2 <= int(sys.argv[1]) <= 16:
        sys.exit('usage: cluster-hub.py NODES(2-16) FOLDER')
    nodes, folder = int(sys.argv[1]), sys.argv[2]
    sel = selectors.DefaultSelector()
    links = [None] * nodes      # each node's connection, once its QEMU has connected
    pending = [b''] * nodes     # bytes read from a node that do not make a frame yet
    for i in range(nodes):
        path = os.path.join(folder, f'hub-{i}.sock')
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        sel.register(listener, selectors.EVENT_READ, ('listen', i))
    open(os.path.join(folder, 'hub.ready'), 'w').close()

    while True:
        for key, _ in sel.select():
            kind, i = key.data
            if kind == 'listen':
                conn, _ = key.fileobj.accept()
                if links[i]:
                    sel.unregister(links[i])
                    links[i].close()
                links[i], pending[i] = conn, b''
                sel.register(conn, selectors.EVENT_READ, ('node', i))
                continue
            data = key.fileobj.recv(1 << 20)
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                links[i] = None
                continue
            buf = pending[i] + data
            while len(buf) >= 4:
                size = struct.unpack('>I', buf[:4])[0]
                if len(buf) < 4 + size:
                    break
                frame, buf = buf[:4 + size], buf[4 + size:]
                for j, link in enumerate(links):
                    if j != i and link:
                        try:
                            link.sendall(frame)
                        except OSError:
                            pass    # that node went away; it may connect again
            pending[i] = buf


if __name__ == '__main__':
    main()
