"""The harness's messages between the parent and a jailed worker: JSON lines over a pair of pipes."""

import json
import os
import select
import time


class ChannelClosed(Exception):
    """The other side went away (crashed, killed or exited) before answering."""


class Channel:
    def __init__(self, read_fd, write_fd):
        self.read_fd, self.write_fd = read_fd, write_fd
        self._buffer = b""

    def send(self, kind, **data):
        payload = (json.dumps({"kind": kind, **data}) + "\n").encode()
        view = memoryview(payload)
        while view:
            view = view[os.write(self.write_fd, view) :]

    def recv(self, timeout=None):
        """The next message; ChannelClosed on EOF; TimeoutError after TIMEOUT seconds without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.read_fd], [], [], wait)
            if not ready:
                raise TimeoutError("no message from the worker in time")
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise ChannelClosed("worker closed the channel")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def pipes():
    """(parent_channel, child_read_fd, child_write_fd): the child's fds are passed to the jailed process."""
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    return Channel(to_parent_r, to_child_w), to_child_r, to_parent_w
