"""What weft's Python tools (weft-sweep, weft-trace-plot, quote-server)
share: the version (the file VERSION beside them where they are installed,
else include/weft/weft.h beside them in the source tree), and a main that never exits 0 with its standard output lost.

Each tool imports it from its own directory:

    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    import weftcli
"""

import errno
import os
import re
import sys

# What a write to a full disk, a closed pipe or a failed device raises.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EFBIG, errno.EDQUOT}


def version():
    """The installed VERSION file's text, else WEFT_VERSION_MAJOR.MINOR.PATCH
    of include/weft/weft.h in the source tree, or "unknown"."""
    here = os.path.dirname(os.path.realpath(__file__))
    try:
        with open(os.path.join(here, "VERSION")) as f:
            installed = f.read().strip()
        if re.fullmatch(r"\d+\.\d+\.\d+", installed):
            return installed
    except OSError:
        pass
    parts = {}
    try:
        with open(os.path.join(here, "..", "include", "weft", "weft.h")) as f:
            for m in re.finditer(r"#define WEFT_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)", f.read()):
                parts[m.group(1)] = m.group(2)
    except OSError:
        pass
    if len(parts) != 3:
        return "unknown"
    return "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])


def _stdout_lost(prog, err):
    sys.stderr.write("%s: cannot write the standard output: %s\n"
                     % (prog, err.strerror or "write error"))
    sys.stderr.flush()
    # Python flushes stdout again at exit and would print a traceback of its
    # own: what is left goes to /dev/null instead.
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


class _Watched:
    """sys.stdout, remembering the first write error even when the caller
    swallows it (argparse's --help and --version do)."""

    def __init__(self, f):
        self._f = f
        self.error = None

    def _call(self, name, *args):
        try:
            return getattr(self._f, name)(*args)
        except OSError as e:
            self.error = self.error or e
            raise

    def write(self, s):
        return self._call("write", s)

    def writelines(self, lines):
        return self._call("writelines", lines)

    def flush(self):
        return self._call("flush")

    def __getattr__(self, name):
        return getattr(self._f, name)


def run(prog, main, *args):
    """Runs main(*args) and exits with its status, after flushing standard
    output (stdio only finds a full disk when it flushes, after main): a
    write that failed is one line on stderr and status 1, never a traceback
    nor status 0. A write error no one caught while main ran (print on a
    full stdout) is taken to be standard output's."""
    out = sys.stdout = _Watched(sys.stdout)
    try:
        try:
            status = main(*args)
        except SystemExit as e:
            status = e.code
        out.flush()
    except OSError as e:
        if out.error is None and (e.filename is not None or e.errno not in _WRITE_ERRNOS):
            raise
        out.error = out.error or e
    if out.error is not None:
        sys.stdout = out._f
        _stdout_lost(prog, out.error)
        sys.exit(1)
    sys.exit(status)
