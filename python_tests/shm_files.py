"""/dev/shm files named after a process, and their removal once it has ended.

A job whose fabric is never closed (an abort, MPI_T left open) leaves libfabric
shm's regions, btl-ofi's names for them and ofi_strictmr's files behind: the tests
that run such jobs remove them here, by the ranks' ids where the ranks reported
them, else by what appeared in /dev/shm since the job started.
"""

import fnmatch
import os
import re
import select
from pathlib import Path

# Files in /dev/shm named after a process: libfabric shm's regions by default
# ("<pid>:<uid>:<n>"), btl-ofi's own names for them ("btl-ofi.<pid>.<time>:<uid>:<n>",
# NOTES.txt section 8) and ofi_strictmr's MR tables ("strictmr.<pid>.<n>").
SHM_FILE_PATTERNS = ("{pid}:*", "btl-ofi.{pid}.*", "strictmr.{pid}.*")


STRICTMR_ENTRY_MAGIC = b"PETCIRTS"  # strictmr_registry.c's ENTRY_MAGIC, little-endian


def strictmr_files_of(pids):
    """ofi_strictmr's /dev/shm files that name one of these processes: its MR tables
    ("strictmr.<pid>.<domain>") and its endpoint entries ("strictmr.ep.<hash>", whose pid is
    the int32 after the magic)."""
    pids = {int(p) for p in pids}
    found = [path for pid in pids for path in Path("/dev/shm").glob(f"strictmr.{pid}.*")]
    for path in Path("/dev/shm").glob("strictmr.ep.*"):
        try:
            head = path.read_bytes()[:12]
        except OSError:
            continue
        if head[:8] == STRICTMR_ENTRY_MAGIC and int.from_bytes(head[8:12], "little") in pids:
            found.append(path)
    return found


def _ended(pid, wait):
    """Whether process pid has ended, waiting up to `wait` seconds for it (pidfd: woken at
    its exit)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except OSError:  # no pidfd here: no wait
        return not Path(f"/proc/{pid}").exists()
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(int(wait * 1000)))
    finally:
        os.close(fd)


def remove_shm_files(pids, wait=0):
    """Remove the /dev/shm files of these processes, once they have ended (waiting up to
    `wait` seconds for each): those a job leaves when its fabric is never closed (or that a
    test put there). Returns the names removed."""
    removed = []
    for pid in pids:
        if not _ended(pid, wait):
            continue
        for pattern in SHM_FILE_PATTERNS:
            for path in Path("/dev/shm").glob(pattern.format(pid=pid)):
                try:
                    path.unlink()
                    removed.append(path.name)
                except FileNotFoundError:
                    pass
    return removed


# SHM_FILE_PATTERNS read back: the pid in a name of one of those shapes
SHM_NAME_PIDS = [re.compile(fnmatch.translate(p.format(pid="PID")).replace("PID", r"(\d+)"))
                 for p in SHM_FILE_PATTERNS]


def shm_names():
    """The names in /dev/shm now (for remove_shm_files_since)."""
    return {path.name for path in Path("/dev/shm").iterdir()}


def remove_shm_files_since(before, wait=10):
    """After a job whose ranks' ids are not known (a C program) and that may end without
    closing its fabric (an abort): remove_shm_files for the processes named by the files that
    appeared in /dev/shm since `before` (shm_names()), waiting up to `wait` seconds for each
    (an aborted job's ranks may still be on their way out when mpirun returns)."""
    pids = {int(m.group(1)) for name in shm_names() - before for r in SHM_NAME_PIDS
            if (m := r.match(name))}
    return remove_shm_files(sorted(pids), wait)
