"""An adapter command that is a pipe to an adapter served in another process: stdin and stdout to a Unix socket.

Usage: python bench/mutate/bridge.py SOCKET

The Go mutants are tested in the ``go test`` process itself (``go_corpus_test.go`` serves
the protocol on SOCKET), so that gremlins sees the coverage of the engine by the corpus;
the harness starts this bridge as the adapter's command and talks to that server through it.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def _pump_in(connection: socket.socket) -> None:
    """Copy stdin to the socket, then close the socket's sending side (end of input)."""
    while chunk := os.read(0, 1 << 16):
        connection.sendall(chunk)
    connection.shutdown(socket.SHUT_WR)


def main() -> int:
    """Connect and copy both ways until the server closes its side."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(sys.argv[1])
    threading.Thread(target=_pump_in, args=(connection,), daemon=True).start()
    while chunk := connection.recv(1 << 16):
        os.write(1, chunk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
