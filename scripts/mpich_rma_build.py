"""Building MPICH's rma tests with Open MPI's mpicc for check-mpich-rma.sh, in
/var/tmp/btl-ofi-mpich-rma-VERSION-HASH/ (HASH: the mpicc and its flags): the
include/mpitestconf.h test/mpi/configure would write, MTest and DTPools in one
libmtest.a, and each program, again only where a source or header is newer; a program
that does not compile is skipped with the compiler's first error.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

MPITESTCONF = """\
/* written by btl-ofi's scripts/check-mpich-rma.sh instead of test/mpi/configure:
   the macros MTest and the rma tests read, as configure finds them on Linux/glibc */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STDARG_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_MPI_WIN_CREATE 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
/* configure --enable-strictmpi, for an MPI that is not MPICH: no MPICH-only checks */
#define USE_STRICT_MPI 1
#endif
"""
# DTPools' dtpools_custom.c uses two MPI-1 names that MPI-3.0 removed; Open MPI 4.1's
# mpi.h makes them a static assertion. The MPI_Type_create_* calls take the same arguments.
MPI1_COMPAT = """\
#include <mpi.h>
#undef MPI_Type_hvector
#undef MPI_Type_hindexed
#define MPI_Type_hvector MPI_Type_create_hvector
#define MPI_Type_hindexed MPI_Type_create_hindexed
"""


class Build:
    """The build directory of one mpicc and MPICH version; tests: MPICH's test/mpi."""

    def __init__(self, env, rebuild, tests, version):
        self.env = env
        self.tests, self.rma = tests, tests / "rma"
        self.mpicc = shutil.which("mpicc", path=env.get("PATH"))
        if not self.mpicc:
            sys.exit(f"check-mpich-rma: no mpicc in PATH={env.get('PATH')}")
        show = subprocess.run([self.mpicc, "--showme"], env=env, capture_output=True,
                              text=True).stdout.strip()
        key = hashlib.sha256(f"{os.path.realpath(self.mpicc)}\n{show}\n{version}".encode())
        self.dir = Path(f"/var/tmp/btl-ofi-mpich-rma-{version}-{key.hexdigest()[:12]}")
        if rebuild and self.dir.exists():
            shutil.rmtree(self.dir)
        (self.dir / "include").mkdir(parents=True, exist_ok=True)
        (self.dir / "dtpools" / "include").mkdir(parents=True, exist_ok=True)
        (self.dir / "bin").mkdir(exist_ok=True)
        (self.dir / "obj").mkdir(exist_ok=True)
        self._write(self.dir / "include" / "mpitestconf.h", MPITESTCONF)
        self._write(self.dir / "dtpools" / "dtpoolsconf.h", "/* nothing needed */\n")
        self._write(self.dir / "mpi1_compat.h", MPI1_COMPAT)
        # dtpools_internal.h includes "../dtpoolsconf.h": found through dtpools/include
        self.incs = ["-I", str(self.dir / "include"), "-I", str(tests / "include"),
                     "-I", str(tests / "dtpools" / "include"),
                     "-I", str(self.dir / "dtpools" / "include")]
        self.headers = [self.dir / "include" / "mpitestconf.h"] + \
            sorted((tests / "include").glob("*.h")) + \
            sorted((tests / "dtpools" / "include").glob("*.h"))
        self.lib = self.dir / "libmtest.a"

    @staticmethod
    def _write(path, text):
        if not path.exists() or path.read_text() != text:
            path.write_text(text)

    @staticmethod
    def _stale(target, deps):
        if not target.exists():
            return True
        t = target.stat().st_mtime
        return any(Path(d).stat().st_mtime > t for d in deps)

    def _cc(self, argv):
        r = subprocess.run([self.mpicc] + argv, env=self.env, capture_output=True, text=True,
                           errors="replace")
        return r.returncode, r.stderr

    def library(self):
        tests = self.tests
        units = [(tests / "util" / f, []) for f in ("mtest.c", "mtest_common.c", "mtest_single.c")]
        units += [(s, ["-include", str(self.dir / "mpi1_compat.h")]
                   if s.name == "dtpools_custom.c" else [])
                  for s in sorted((tests / "dtpools" / "src").glob("*.c"))]
        objs = []
        for src, extra in units:
            obj = self.dir / "obj" / (src.parent.name + "_" + src.stem + ".o")
            if self._stale(obj, [src] + self.headers):
                rc, err = self._cc(["-O2", "-c", *extra, *self.incs, str(src), "-o", str(obj)])
                if rc:
                    sys.exit(f"check-mpich-rma: cannot compile {src}:\n{err[-3000:]}")
            objs.append(obj)
        if self._stale(self.lib, objs):
            self.lib.unlink(missing_ok=True)
            subprocess.run(["ar", "rcs", str(self.lib)] + [str(o) for o in objs], check=True)

    def compile(self, prog):
        prog.binary = self.dir / "bin" / prog.name
        srcs = [self.rma / s for s in prog.sources]
        stamp = self.dir / "bin" / f"{prog.name}.failed"
        if not self._stale(prog.binary, srcs + self.headers + [self.lib]):
            return prog
        if not self._stale(stamp, srcs + self.headers + [self.lib]):
            prog.skip = stamp.read_text().strip()
            return prog
        rc, err = self._cc(["-O2", *prog.cppflags, *self.incs, *map(str, srcs), str(self.lib),
                            "-lm", *prog.ldadd, "-o", str(prog.binary)])
        if rc:
            lines = [l for l in err.splitlines() if "error" in l] or err.splitlines() or ["?"]
            first = re.sub(r"^\S*/", "", lines[0].strip())
            prog.skip = f"does not compile with Open MPI's mpicc: {first}"
            stamp.write_text(prog.skip + "\n")
            prog.binary.unlink(missing_ok=True)
        else:
            stamp.unlink(missing_ok=True)
        return prog
