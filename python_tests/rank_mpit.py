"""btl-ofi's MPI_T performance variables, read from inside a rank (cffi, ABI mode).

mpi4py does not wrap MPI_T. In Open MPI, MPI_T_pvar_session, MPI_T_pvar_handle,
MPI_Datatype and MPI_T_enum are pointers, so they are declared void* here;
libmpi is already loaded by mpi4py, dlopen just returns that copy.

State of our counters in a process, as reported to the test driver:
  "absent"  - no btl_<component>_* pvar names: our component is not loaded
              (e.g. Open MPI's stock btl/ofi, which registers none of them);
  "invalid" - the names exist but MPI_T_pvar_get_info refuses them: the
              component was opened but not selected (it disabled itself);
  "ok"      - all counters readable.
"""

import ctypes.util
import os

import cffi
from mpi4py import MPI

# The component's pvars are btl_<component>_<counter>; its env file names the
# component (BTL_OFI_COMPONENT: "ofirma" when built standalone, "ofi" in-tree).
PREFIX = f"btl_{os.environ.get('BTL_OFI_COMPONENT') or 'ofi'}_"
COUNTERS = tuple(PREFIX + name for name in (
    "put_count", "get_count", "put_bytes", "get_bytes", "atomic_count",
    "atomic_emulated_count", "atomics_awaited", "cq_entries", "cq_errors", "flush_count", "proof_reads",
    "registrations", "registrations_live", "post_eagain", "put_gathered", "put_batches",
    "put_batches_applied", "handles_stale", "handles_located", "locate_answers",
    "injected_faults", "rcache_hits", "rcache_misses", "rcache_invalidated", "rcache_evicted",
    "rcache_entries", "atomics_as_messages", "gets_as_messages", "messages_applied",
    "refused_count", "registrations_failed", "cq_polls", "local_put_count", "local_get_count",
    "local_atomic_count", "local_peers", "stripe_count", "nics", "peers", "nic_failures",
    "stripe_parts_moved", "cq_pauses", "cq_serving_reads", "cq_long_pauses", "cq_wake_armed",
    "cq_wake_reads", "self_served",
))

_CDEF = """
typedef void *MPI_T_pvar_session;
typedef void *MPI_T_pvar_handle;
typedef void *MPI_Datatype;
typedef void *MPI_T_enum;
int MPI_T_init_thread(int required, int *provided);
int MPI_T_finalize(void);
int MPI_T_pvar_get_num(int *num_pvar);
int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity,
                        int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype,
                        char *desc, int *desc_len, int *bind, int *readonly,
                        int *continuous, int *atomic);
int MPI_T_pvar_session_create(MPI_T_pvar_session *session);
int MPI_T_pvar_session_free(MPI_T_pvar_session *session);
int MPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                            MPI_T_pvar_handle *handle, int *count);
int MPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle);
int MPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf);
typedef void *MPI_T_cvar_handle;
int MPI_T_cvar_get_index(const char *name, int *cvar_index);
int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                            int *count);
int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle);
int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf);
"""


def _as_int(ffi, ptr):
    return int(ffi.cast("uintptr_t", ptr))


class OfiCounters:
    """Open once after MPI init; snapshot() returns {short_name: value}."""

    def __init__(self):
        self.ffi = cffi.FFI()
        self.ffi.cdef(_CDEF)
        self.lib = self.ffi.dlopen(ctypes.util.find_library("mpi") or "libmpi.so.40")
        self.state = "absent"
        self.detail = ""
        self.handles = {}
        self.session = self.ffi.new("MPI_T_pvar_session *")
        self._buf = self.ffi.new("unsigned long *")
        self._open()

    def _open(self):
        ffi, lib = self.ffi, self.lib
        provided = ffi.new("int *")
        # Open MPI's MPI_T_init_thread overwrites the MPI library's own thread
        # level: ask for the one MPI_Init_thread already gave, never less.
        if lib.MPI_T_init_thread(MPI.Query_thread(), provided) != 0:
            self.detail = "MPI_T_init_thread failed"
            return
        num = ffi.new("int *")
        if lib.MPI_T_pvar_get_num(num) != 0 or lib.MPI_T_pvar_session_create(self.session) != 0:
            self.detail = "MPI_T pvar session unavailable"
            return
        found, invalid, wrong_type = {}, [], []
        name = ffi.new("char[256]")
        desc = ffi.new("char[1024]")
        ints = [ffi.new("int *") for _ in range(8)]
        dtype = ffi.new("MPI_Datatype *")
        enum = ffi.new("MPI_T_enum *")
        names_seen = self._names_by_index(num[0])
        for index, pname in names_seen.items():
            if pname not in COUNTERS:
                continue
            ints[0][0], ints[1][0] = 256, 1024
            rc = lib.MPI_T_pvar_get_info(index, name, ints[0], ints[2], ints[3], dtype, enum,
                                         desc, ints[1], ints[4], ints[5], ints[6], ints[7])
            if rc != 0:
                invalid.append(pname)
                continue
            if _as_int(ffi, dtype[0]) != MPI.UNSIGNED_LONG.handle:
                wrong_type.append(pname)
                continue
            handle = ffi.new("MPI_T_pvar_handle *")
            count = ffi.new("int *")
            if lib.MPI_T_pvar_handle_alloc(self.session[0], index, ffi.NULL, handle, count) == 0:
                found[pname] = handle
            else:
                invalid.append(pname)
        self.handles = found
        if not names_seen or not (set(names_seen.values()) & set(COUNTERS)):
            self.state, self.detail = "absent", f"no {PREFIX}* performance variables registered"
        elif len(found) == len(COUNTERS):
            self.state = "ok"
        elif invalid and not found:
            self.state = "invalid"
            self.detail = f"{PREFIX}* pvars registered but invalid (component not selected)"
        else:
            self.state = "partial"
            missing = sorted(set(COUNTERS) - set(found))
            self.detail = (f"missing {missing}, invalid {invalid}, "
                           f"not MPI_UNSIGNED_LONG {wrong_type}")

    def _names_by_index(self, num):
        """pvar index -> name for every pvar whose name is readable.

        Names of invalid pvars are not readable through get_info; Open MPI
        keeps the name table though, so we probe get_info with a name buffer
        only and, on failure, look the name up through MPI_T_pvar_get_index
        if available (MPI 3.1)."""
        ffi, lib = self.ffi, self.lib
        names = {}
        name = ffi.new("char[256]")
        desc = ffi.new("char[16]")
        ints = [ffi.new("int *") for _ in range(8)]
        dtype = ffi.new("MPI_Datatype *")
        enum = ffi.new("MPI_T_enum *")
        for index in range(num):
            ints[0][0], ints[1][0] = 256, 16
            rc = lib.MPI_T_pvar_get_info(index, name, ints[0], ints[2], ints[3], dtype, enum,
                                         desc, ints[1], ints[4], ints[5], ints[6], ints[7])
            if rc == 0:
                names[index] = ffi.string(name).decode()
        if not any(n in COUNTERS for n in names.values()):
            names.update(self._indices_of_invalid(num, names))
        return names

    def _indices_of_invalid(self, num, known):
        try:
            ffi = cffi.FFI()
            ffi.cdef("int MPI_T_pvar_get_index(const char *name, int var_class, int *idx);")
            lib = ffi.dlopen(ctypes.util.find_library("mpi") or "libmpi.so.40")
        except (OSError, AttributeError):
            return {}
        extra = {}
        idx = ffi.new("int *")
        # MPI_T_PVAR_CLASS_* values in Open MPI: STATE 0 .. GENERIC 9
        for cname in COUNTERS:
            for var_class in range(10):
                if lib.MPI_T_pvar_get_index(cname.encode(), var_class, idx) == 0:
                    if idx[0] not in known:
                        extra[idx[0]] = cname
                    break
        return extra

    def cvar_string(self, short_name, size=1024):
        """The value of control variable btl_<component>_<short_name> (a string), or None
        when MPI_T does not know it or cannot read it."""
        ffi, lib = self.ffi, self.lib
        index, handle, count = ffi.new("int *"), ffi.new("MPI_T_cvar_handle *"), ffi.new("int *")
        if lib.MPI_T_cvar_get_index((PREFIX + short_name).encode(), index) != 0:
            return None
        if lib.MPI_T_cvar_handle_alloc(index[0], ffi.NULL, handle, count) != 0:
            return None
        buf = ffi.new(f"char[{max(size, count[0] + 1)}]")
        try:
            if lib.MPI_T_cvar_read(handle[0], buf) != 0:
                return None
            return ffi.string(buf).decode(errors="replace")
        finally:
            lib.MPI_T_cvar_handle_free(handle)

    def snapshot(self):
        values = {}
        for pname, handle in self.handles.items():
            if self.lib.MPI_T_pvar_read(self.session[0], handle[0], self._buf) == 0:
                values[pname[len(PREFIX):]] = int(self._buf[0])
        return values

    def close(self):
        for handle in self.handles.values():
            self.lib.MPI_T_pvar_handle_free(self.session[0], handle)
        self.handles = {}
        if self.session[0] != self.ffi.NULL:
            self.lib.MPI_T_pvar_session_free(self.session)
        self.lib.MPI_T_finalize()
