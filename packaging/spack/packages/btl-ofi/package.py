# btl-ofi's Spack recipe (kept in btl-ofi's repository: packaging/spack).

import os
import re

import spack
from spack.package import *


class BtlOfi(AutotoolsPackage):
    """btl-ofi: a transport component (BTL, btl/ofirma) for Open MPI that carries MPI
    one-sided communication (osc/rdma: puts, gets, accumulates, fetch-and-op,
    compare-and-swap, flush) over any libfabric provider with reliable-datagram
    endpoints, RMA and atomics."""

    # btl-ofi publishes no downloads yet: a release is the tarball `make dist` makes
    # (btl-ofi-VERSION.tar.gz), which reaches Spack through a source mirror
    # (`spack mirror add`, the archive at <mirror>/btl-ofi/btl-ofi-VERSION.tar.gz; Spack
    # asks its mirrors before the URL, whose host is reserved never to resolve).
    url = "https://btl-ofi.invalid/releases/btl-ofi-0.1.0.tar.gz"

    license("BSD-3-Clause")

    # A release's sha256 goes here once one is published; a tarball of your own
    # build installs with `spack install --no-checksum`.
    version("0.1.0")

    # Spack 0.23.0 and later make the compilers dependencies: a package names the languages
    # it needs. Before (development snapshots of 0.23 included) every package had one and
    # no "c" existed.
    if spack.spack_version_info[:3] > (0, 23, 0) or spack.spack_version == "0.23.0":
        depends_on("c", type="build")
    depends_on("pkgconfig", type="build")
    # the Open MPI it plugs into: 4.1 (BTL API 3.1), 5.0 and 6.0 (BTL API 3.3); it is
    # built against that release's headers and loaded only by it
    depends_on("openmpi@4.1:4.1,5.0:6.0")
    depends_on("libfabric@1.5:")

    def configure_args(self):
        args = ["--with-ompi={0}".format(self.spec["openmpi"].prefix)]
        # Debian 13's libopenmpi-dev lacks four headers its opal_config.h includes
        # (btl-ofi's NOTES.txt section 14); there configure needs the source tree of the
        # same Open MPI release, which Spack cannot know: name it in BTL_OFI_OMPI_SOURCE.
        source = os.environ.get("BTL_OFI_OMPI_SOURCE")
        if source:
            args.append("--with-ompi-source={0}".format(source))
        return args

    def setup_run_environment(self, env):
        # What `make install` wrote for the Open MPI it was built against: the component
        # path (this prefix's directory, then Open MPI's own) and, under Open MPI 5,
        # PMIx's own component path, which PRRTE would otherwise set to ours. `spack load`
        # is then all it takes for `mpirun --mca osc rdma` to find btl/ofirma.
        envfile = join_path(self.prefix.share, "btl-ofi", "btl-ofi-env.sh")
        if not os.path.exists(envfile):
            return
        with open(envfile) as fh:
            for line in fh:
                match = re.match(r'export (\w+)=("([^"]*)"|\S*)', line.strip())
                if match:
                    value = match.group(3) if match.group(3) is not None else match.group(2)
                    env.set(match.group(1), value)
        env.prepend_path("PATH", join_path(self.prefix.libexec, "btl-ofi"))
