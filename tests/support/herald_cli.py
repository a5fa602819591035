"""The ``herald`` command as a process of its own, started from a pre-loaded interpreter.

Each ``herald`` process a test starts spends ~0.6 s starting Python and importing
SQLAlchemy, pydantic and Herald before its command runs (~0.1 s), and the e2e tests run
hundreds of commands. :func:`herald` runs each command in a new process all the same,
with its own arguments, environment, working directory, standard input, output and
error (pipes, as ``subprocess.run`` gives) and exit status, through ``entry``, the
console script's function; only the interpreter's start and the imports are done once
per pytest worker, by a server that forks a process per command (as
``multiprocessing``'s forkserver does). What it does not prove, the console script's
installation and a cold start's imports, tests/e2e/test_cli_light.py, the services'
tests and the crash scenarios prove by starting the real ``herald`` and ``python -m
bot.cli``.

The protocol, over a Unix socket the server was started with: a request is one JSON
line (argv, environment, working directory) with four descriptors (the command's
stdin, stdout and stderr, and a socket for the answer); the server forks a watcher that
forks the command, writes ``{"pid": N}`` and then ``{"status": N}`` on the answer
socket, and exits.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What the server imports before it forks: the command line and, through its commands
#: module, the store, the use cases and the channels (each command's own modules).
PRELOAD = (
    "bot.cli.main",
    "bot.cli.commands",
    "bot.cli.remote",
    "bot.cli.when",
    # what a command loads when it opens the database and checks its revision
    "aiosqlite",
    "psycopg",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "sqlalchemy.dialects.postgresql.psycopg",
    "alembic.command",
    "alembic.config",
    "alembic.script",
    "alembic.runtime.migration",
    "alembic.autogenerate",
    "mako.template",
    "concurrent.futures.thread",
    "platformdirs",
    "tomllib",
)
_MAX_HEADER = 1 << 20


class _Server:
    """One forking server per process (a pytest worker), started on first use."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HERALD_", "SLACK_", "DISCORD_"))
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.herald_cli", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        ready = self.sock.recv(16)
        if ready != b"ready\n":
            raise RuntimeError(f"the herald fork server did not start ({ready!r})")

    def request(self, header: bytes, fds: list[int]) -> None:
        with self.lock:
            socket.send_fds(self.sock, [header], fds)

    def close(self) -> None:
        self.sock.close()  # the server's recv ends: it exits
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


_server: _Server | None = None
_server_lock = threading.Lock()


def _the_server() -> _Server:
    global _server
    with _server_lock:
        if _server is None or _server.proc.poll() is not None:
            _server = _Server()
            atexit.register(_server.close)
        return _server


def herald(
    *args: str,
    env: Mapping[str, str],
    input: str | None = None,  # noqa: A002 - subprocess.run's name
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``herald ARGS`` in a process of its own with exactly ``env`` as its environment,
    ``input`` on its standard input (else an empty one), run in ``cwd``: what
    ``subprocess.run([sys.executable, "-m", "bot.cli", *args], input=input,
    capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)`` returns.
    The command is killed, and TimeoutExpired raised, after ``timeout`` seconds."""
    argv = ["herald", *args]
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    answer, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    header = json.dumps(
        {"argv": argv, "env": dict(env), "cwd": os.fspath(cwd) if cwd is not None else os.getcwd()}
    ).encode()
    try:
        _the_server().request(header + b"\n", [stdin_r, stdout_w, stderr_w, theirs.fileno()])
    finally:
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
        theirs.close()
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=_read_all, args=(stdout_r, out), daemon=True),
        threading.Thread(target=_read_all, args=(stderr_r, err), daemon=True),
    ]
    for reader in readers:
        reader.start()
    pid: int | None = None
    with answer, answer.makefile("rb") as replies:
        answer.settimeout(timeout)
        try:
            pid = json.loads(replies.readline())["pid"]
            _write_all(stdin_w, input.encode() if input else b"")
            status = json.loads(replies.readline())["status"]
        except TimeoutError:
            if pid is None:
                os.close(stdin_w)  # not reached _write_all
            else:
                os.kill(pid, signal.SIGKILL)
            raise subprocess.TimeoutExpired(argv, timeout) from None
    for reader in readers:
        reader.join(timeout)
    return subprocess.CompletedProcess(argv, status, b"".join(out).decode(), b"".join(err).decode())


def _write_all(fd: int, data: bytes) -> None:
    """``data`` to the command's standard input, then its end (EOF)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BrokenPipeError:
        pass  # the command ended without reading it all, as subprocess.run allows
    finally:
        os.close(fd)


def _read_all(fd: int, into: list[bytes]) -> None:
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            into.append(chunk)


# --- the server -----------------------------------------------------------------------


def _serve(control: socket.socket) -> None:
    control.sendall(b"ready\n")
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, _MAX_HEADER, 4)
        except OSError:
            return
        if not message:
            return  # the test process closed its end
        request = json.loads(message)
        watcher = os.fork()
        if watcher == 0:
            control.close()
            _watch(request, fds)  # never returns
        for fd in fds:
            os.close(fd)
        _reap()


def _reap() -> None:
    """Collect the watchers that have exited (a watcher lives as long as its command)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _watch(request: dict[str, object], fds: list[int]) -> None:
    stdin, stdout, stderr, answer_fd = fds
    answer = socket.socket(fileno=answer_fd)
    command = os.fork()
    if command == 0:
        answer.close()
        _command(request, stdin, stdout, stderr)  # never returns
    for fd in (stdin, stdout, stderr):
        os.close(fd)
    answer.sendall(json.dumps({"pid": command}).encode() + b"\n")
    _, status = os.waitpid(command, 0)
    code = os.waitstatus_to_exitcode(status)
    try:
        answer.sendall(json.dumps({"status": code}).encode() + b"\n")
    finally:
        os._exit(0)


def _command(request: dict[str, object], stdin: int, stdout: int, stderr: int) -> None:
    """In the command's process: its descriptors, environment, directory and arguments,
    then the console script's ``entry`` (which ends the process with ``os._exit``)."""
    code = 1
    try:
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        time.tzset()  # a TZ of the command's own
        os.chdir(str(request["cwd"]))
        argv = request["argv"]
        assert isinstance(argv, list)
        sys.argv = [str(a) for a in argv]
        from bot.cli.main import entry

        entry()
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except BaseException:
        traceback.print_exc()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _exit_code(code: object) -> int:
    """What the interpreter exits with for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    for module in PRELOAD:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()  # the commands' copies of these objects stay shared
    _serve(control)


if __name__ == "__main__":
    main()
