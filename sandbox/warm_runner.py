"""A warm jailed Python, used once: it runs a module on a sample (what it imports and the first-call costs paid,
its output discarded), reports ready, then runs the module once more as `python -m MODULE ARGS` would for the one request it
gets, and exits.

    python -m sandbox.warm_runner --control FD --module M [--warm-cwd DIR --warm-arg A ...]

Started by sandbox.warm_pool inside a jail like any other (sandbox.isolation). FD is a socket: this process writes
`ready` on it once warm and reads one JSON line, {"cwd": folder, "args": [...]}; end of file instead means the pool
no longer needs it. Only the request's run reaches the captured output, and it exits the way `python -m` would
(a traceback without this file's frames, SystemExit's code), without the interpreter's teardown, which a process
that holds torch pays for in seconds.
"""

import argparse
import atexit
import gc
import json
import os
import runpy
import shutil
import socket
import sys
import traceback
import types
import warnings


def run_module(module, args, cwd):
    """MODULE run as __main__ with ARGS in CWD, as `python -m MODULE ARGS` would; its exit status."""
    os.chdir(cwd)
    sys.path[0] = os.getcwd()  # python -m puts its working folder first
    sys.argv = ["-m", *args]
    sys.modules["__main__"] = types.ModuleType("__main__")  # a fresh namespace: nothing of an earlier run
    try:
        runpy._run_module_as_main(module)  # what `python -m` itself calls
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException as exc:  # noqa: BLE001 -- printed as the interpreter prints an uncaught exception
        exc.with_traceback(exc.__traceback__.tb_next)  # the display takes the exception's own traceback
        sys.excepthook(type(exc), exc, exc.__traceback__)
        return 1
    return 0


def reset_warnings():
    """Warnings the warm-up showed are shown again (the 'default' action shows each once per place)."""
    kept = warnings.filters[:]
    warnings.resetwarnings()  # invalidates every module's registry of warnings already shown
    warnings.filters[:] = kept


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sandbox.warm_runner")
    parser.add_argument("--control", type=int, required=True, help="the socket to the pool (a descriptor)")
    parser.add_argument("--module", required=True, help="the module each request runs, as python -m does")
    parser.add_argument("--warm-cwd", help="a folder holding the sample the module runs on before ready")
    parser.add_argument("--warm-arg", action="append", default=[], help="an argument of the warm-up run")
    args = parser.parse_args(argv)
    control = socket.socket(fileno=args.control)
    home = os.getcwd()
    out, err = os.dup(1), os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    try:
        if args.warm_cwd and run_module(args.module, args.warm_arg, args.warm_cwd) != 0:
            raise RuntimeError(f"the warm-up run of {args.module} failed: run it by hand on its sample to see why")
    except Exception:  # noqa: BLE001 -- the pool reports this process's output when it dies before ready
        os.dup2(err, 2)
        traceback.print_exc()
        os._exit(1)
    if args.warm_cwd:
        os.chdir(home)
        shutil.rmtree(args.warm_cwd, ignore_errors=True)
    # Everything alive now (torch, the warm-up's caches) lives until this process ends: out of the collector's reach,
    # the request's collections do not walk it again and again (a third of a warm analysis's time otherwise).
    gc.collect()
    gc.freeze()
    control.sendall(b"ready\n")
    line = control.makefile("rb").readline()
    if not line:
        os._exit(0)
    request = json.loads(line)
    control.sendall(b"started\n")  # taken: the pool tells this apart from a process that died before use
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (out, err, quiet):
        os.close(fd)
    reset_warnings()
    code = run_module(args.module, request["args"], request["cwd"])
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code & 0xFF)


if __name__ == "__main__":
    main()
