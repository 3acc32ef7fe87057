"""Act: a private network for a local job, one Linux network namespace with only a loopback.

TensorFlow's gRPC server listens on ``0.0.0.0:<port>`` whatever host the cluster spec names
(``grpc_server_lib.cc``), and it runs graphs for whoever connects. So ``python -m autodist
launch`` runs every task of a local job inside one new network namespace: a *holder* process
creates it (``unshare(2)``; inside a new user namespace when not root, so no privilege is
needed) and brings its loopback up; each task starts as a small exec helper, a fresh
single-threaded interpreter that joins it (``setns(2)``) and then becomes the task
(``execv``: same pid, same session). The launcher runs no Python code between ``fork`` and
``exec`` (``preexec_fn`` is unsafe while its reader threads run). The job's ports then exist
nowhere else, not even on the machine's own loopback, and the tasks reach nothing outside:
data must be on disk (or pass ``--no-isolate``).

Where namespaces are not available (not Linux, user namespaces disabled, a seccomp profile that
refuses ``unshare``), :meth:`PrivateNetwork.create` returns ``None`` with the reason, and the
launcher says so once and carries on.

Example:
    >>> network, why = PrivateNetwork.create(timeout=10)
    >>> (network is not None) or bool(why)
    True
    >>> network.close() if network else None
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

__all__ = ["PrivateNetwork"]

#: The holder: create the namespaces, bring ``lo`` up, say ``ready`` (or the error), then wait
#: for its stdin to close. It runs as a fresh interpreter, single-threaded, as unshare requires.
_HOLDER = r"""
import ctypes, fcntl, os, socket, struct, sys
try:
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x40000000 | (0 if uid == 0 else 0x10000000)) != 0:
        raise OSError(ctypes.get_errno(), "unshare: " + os.strerror(ctypes.get_errno()))
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
except Exception as err:
    print(f"error {type(err).__name__}: {err}", flush=True)
    sys.exit(1)
print("ready", flush=True)
sys.stdin.read()
"""


#: The exec helper: ``python -c _JOIN FD... -- ARGV``: join each namespace, close its descriptor,
#: then become ARGV. Joining a user namespace needs a single-threaded process: a fresh one is.
_JOIN = r"""
import ctypes, os, sys
end = sys.argv.index("--")
setns = ctypes.CDLL(None, use_errno=True).setns
for fd in map(int, sys.argv[1:end]):
    if setns(fd, 0) != 0:
        sys.exit("autodist: could not join the job's private network: setns: " + os.strerror(ctypes.get_errno()))
    os.close(fd)
os.execv(sys.argv[end + 1], sys.argv[end + 1:])
"""


class PrivateNetwork:
    """A network namespace that tasks join; :meth:`close` ends its holder (the namespace goes
    when its last task does)."""

    def __init__(self, holder: subprocess.Popen, joins_user: bool) -> None:
        self.holder = holder
        # Opened once, now: a task joins this namespace even if the holder has died since, and
        # never another process's, should its pid be reused.
        kinds = ("user", "net") if joins_user else ("net",)
        self._fds = [os.open(f"/proc/{holder.pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC) for kind in kinds]

    @classmethod
    def create(cls, timeout: float = 30.0) -> tuple[PrivateNetwork | None, str]:
        """``(network, "")``, or ``(None, why)`` where this machine cannot make one."""
        if not sys.platform.startswith("linux"):
            return None, f"network namespaces are a Linux feature (this is {sys.platform})"
        holder = subprocess.Popen(
            [sys.executable, "-I", "-c", _HOLDER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # the terminal's Ctrl-C is the launcher's to handle
        )
        try:
            line = _read_line(holder, timeout)
        except TimeoutError:
            _end(holder)
            return None, f"creating the namespace took more than {timeout:g} s"
        if line != "ready":
            _end(holder)
            return None, line.removeprefix("error ") or f"the holder exited with code {holder.poll()}"
        return cls(holder, joins_user=os.geteuid() != 0), ""

    def command(self, argv: list[str]) -> tuple[list[str], tuple[int, ...]]:
        """The command that runs ``argv`` inside this namespace, and the descriptors to pass it
        (``Popen(command, pass_fds=fds)``): the exec helper joins, then execs ``argv``, whose
        pid is the helper's. ``argv[0]`` is a path (``execv`` does not search ``PATH``)."""
        fds = tuple(self._fds)
        return [sys.executable, "-I", "-S", "-c", _JOIN, *map(str, fds), "--", *argv], fds

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        _end(self.holder)


def _read_line(process: subprocess.Popen, timeout: float) -> str:
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise TimeoutError
    return process.stdout.readline().strip()


def _end(process: subprocess.Popen) -> None:
    """Close the holder's stdin (it exits), and kill it if it does not; never raises."""
    try:
        if process.stdin is not None:
            process.stdin.close()
        process.wait(timeout=5)
    except Exception:
        process.kill()
        with contextlib.suppress(Exception):
            process.wait(timeout=5)
