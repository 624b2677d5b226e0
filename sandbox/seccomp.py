"""The seccomp filter of every jailed process: the system calls solution code never needs are refused.

The program is compiled once per worker with libseccomp (through pyseccomp) and handed to bubblewrap, which loads
it right before the jail's own first instruction. Refused calls fail with EPERM rather than killing the caller:
libraries that probe (clone3, perf events) fall back, and a solution that insists gets an error it can read, which
the harness explains (`DENIED_NOTE`). System calls of another architecture (32-bit entry points) kill the process,
libseccomp's default for a foreign architecture, so the list cannot be bypassed through them.
"""

import errno
import functools
import logging
import os
import tempfile

log = logging.getLogger(__name__)

# What solution code, compilers and PyTorch never need, grouped by why it is refused.
DENIED = (
    # debugging and reading other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    # mounts and namespaces: the jail's filesystem and namespaces are final
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "open_by_handle_at",
    "name_to_handle_at",
    # kernel keyrings
    "keyctl",
    "add_key",
    "request_key",
    # perf events and BPF
    "perf_event_open",
    "bpf",
    "userfaultfd",
    # kernel modules and the running kernel
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "quotactl",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "vhangup",
    # io_uring bypasses the filter for the calls it performs
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
# clone()'s namespace flags (CLONE_NEWTIME exists only for clone3 and unshare, both refused whole: in clone()'s
# flags its bit is part of the exit signal).
CLONE_NEW_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
DENIED_NOTE = (
    "note: the sandbox refuses some system calls with 'Operation not permitted' (EPERM): ptrace and "
    "reading other processes, mount and namespaces, kernel keyrings, perf events and BPF, kernel modules, "
    "io_uring. Solution code never needs them; remove the call."
)


class Unavailable(Exception):
    """No seccomp program can be built on this host (no libseccomp); the message says why."""


@functools.lru_cache(maxsize=1)
def program():
    """The filter as a classic BPF program (bytes) for this machine's architecture; Unavailable otherwise."""
    try:
        import pyseccomp as sc
    except (ImportError, RuntimeError) as exc:  # pyseccomp raises RuntimeError when libseccomp is missing
        raise Unavailable(f"libseccomp is not available ({exc}): install libseccomp2") from None
    denied = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED:
        try:
            flt.add_rule(denied, name)
        except (OSError, RuntimeError, ValueError):
            log.debug("no system call %s on this architecture", name)
    for flag in CLONE_NEW_FLAGS.values():
        flt.add_rule(denied, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone, checked above.
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        flt.export_bpf(out)
        out.seek(0)
        return out.read()


def available():
    """(True, '') or (False, the reason)."""
    try:
        program()
        return True, ""
    except Unavailable as exc:
        return False, str(exc)


def program_fd():
    """A readable descriptor holding the program, for bubblewrap's --seccomp (the caller closes it)."""
    data = program()
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write_end)
    return read_end
