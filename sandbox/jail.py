"""The jail's last step before solution code: resource limits, no new privileges, the jail's own uid, exec.

Runs as `python -I -S sandbox/jail.py [options] -- ARGV...` inside bubblewrap's namespaces and new root (see
sandbox.jailfs), started by sandbox.isolation. Standard library only and run by path, so that it starts in
milliseconds and trusts nothing it does not own.
"""

import argparse
import ctypes
import os
import resource
import sys

PR_SET_NO_NEW_PRIVS = 38


def set_limits(mem_mb, fsize_mb, nproc, cpu_s):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_mb << 20, fsize_mb << 20))
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    if mem_mb:
        # Only where no cgroup limits memory: address-space limits break CUDA's large reservations.
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))


def no_new_privileges():
    """Neither setuid programs nor file capabilities can raise what the jailed code may do."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sandbox/jail.py")
    parser.add_argument("--private", required=True)
    parser.add_argument("--uid", type=int, default=None)
    parser.add_argument("--address-space-mb", type=int, default=0)
    parser.add_argument("--fsize-mb", type=int, default=16384)
    parser.add_argument("--nproc", type=int, default=0)
    parser.add_argument("--cpu-s", type=int, default=0)
    parser.add_argument("--fds", default="")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    set_limits(args.address_space_mb, args.fsize_mb, args.nproc, args.cpu_s)
    if args.uid is not None:
        # From root to a uid of the jail's own: every capability goes with it (capabilities(7)).
        os.setgroups([])
        os.setgid(args.uid)
        os.setuid(args.uid)
    no_new_privileges()
    for fd in filter(None, args.fds.split(",")):
        os.set_inheritable(int(fd), True)
    os.chdir(args.private)
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main())
