"""A TCP proxy on 127.0.0.1 that can cut every connection through it: PostgreSQL "going away" without restarting
the server other people's work runs on (``bench_load.py --faults``, ``tests/studio/web/test_store_faults.py``).

``cut()`` closes every open connection (both ends) and refuses new ones until ``restore()``; to the studio behind it
this looks like a PostgreSQL restart: the pooled connections die mid-use and reconnecting fails until it is back.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """Forward ``127.0.0.1:<port>`` to ``target``; :meth:`cut` / :meth:`restore` break and mend it."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._closed = False
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _address = self._listener.accept()
            except OSError:
                return
            if not self._open.is_set():
                client.close()  # "connection closed by the server": what a restarting server does
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                self._drop(end)

    def _drop(self, end: socket.socket) -> None:
        with contextlib.suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            end.close()
        with self._lock:
            self._sockets.discard(end)

    def cut(self) -> None:
        """Close every connection through the proxy and refuse new ones until :meth:`restore`."""
        self._open.clear()
        with self._lock:
            ends = list(self._sockets)
        for end in ends:
            self._drop(end)

    def restore(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        with contextlib.suppress(OSError):
            self._listener.close()
