# -*- shell-script -*-
#
# btl-ofi inside an Open MPI 4.1 or 5.0 source tree: this directory is copied over
# opal/mca/btl/ofi/ and Open MPI's autogen.pl picks up this macro. (The
# standalone build of the same sources is the top-level configure.ac.)
#
# MCA_opal_btl_ofi_CONFIG([action-if-can-compile], [action-if-cant-compile])
# --------------------------------------------------------------------------
# Builds when libfabric is found (OPAL_CHECK_OFI: --with-ofi / --with-libfabric)
# and its API is at least 1.5 with the RMA, atomic and MR-mode definitions the
# component uses. If the user asked for libfabric with --with-ofi and it is
# unusable for this component, configure stops with the reason instead of
# silently building Open MPI without it.
AC_DEFUN([MCA_opal_btl_ofi_CONFIG],[
    OPAL_VAR_SCOPE_PUSH([btl_ofi_happy btl_ofi_why btl_ofi_CPPFLAGS_save])

    AC_CONFIG_FILES([opal/mca/btl/ofi/Makefile])

    # The flags for libfabric: 5.0's macro puts them in the prefix given here
    # (btl_ofi_{CPPFLAGS,LDFLAGS,LIBS}) and substitutes nothing; 4.1's takes no
    # argument and leaves them in opal_ofi_{CPPFLAGS,LDFLAGS,LIBS}. Without
    # -lfabric on its link line the DSO would bind libfabric's symbols
    # unversioned, i.e. to their oldest (API 1.0) versions, whatever headers
    # it was compiled with.
    OPAL_CHECK_OFI([btl_ofi], [], [])
    AS_IF([test -z "$btl_ofi_LIBS"],
          [btl_ofi_CPPFLAGS=$opal_ofi_CPPFLAGS
           btl_ofi_LDFLAGS=$opal_ofi_LDFLAGS
           btl_ofi_LIBS=$opal_ofi_LIBS])
    AC_SUBST([btl_ofi_CPPFLAGS])
    AC_SUBST([btl_ofi_LDFLAGS])
    AC_SUBST([btl_ofi_LIBS])

    # The libtool library of libopen-pal: lib$(OPAL_LIB_NAME).la in 5.0,
    # lib$(OPAL_LIB_PREFIX)open-pal.la in 4.1.
    AS_IF([test -n "$OPAL_LIB_NAME"],
          [btl_ofi_libopal='$(top_builddir)/opal/lib$(OPAL_LIB_NAME).la'],
          [btl_ofi_libopal='$(top_builddir)/opal/lib$(OPAL_LIB_PREFIX)open-pal.la'])
    AC_SUBST([btl_ofi_libopal])

    btl_ofi_happy=$opal_ofi_happy
    btl_ofi_why="libfabric was not found"

    AS_IF([test "$btl_ofi_happy" = "yes"],
          [OPAL_CHECK_OFI_VERSION_GE([1,5], [],
               [btl_ofi_happy=no
                btl_ofi_why="its API version is older than 1.5"])])

    AS_IF([test "$btl_ofi_happy" = "yes"],
          [btl_ofi_CPPFLAGS_save=$CPPFLAGS
           CPPFLAGS="$btl_ofi_CPPFLAGS $CPPFLAGS"
           AC_CHECK_DECLS([FI_MR_VIRT_ADDR, FI_MR_PROV_KEY, FI_MR_ALLOCATED,
                           FI_DELIVERY_COMPLETE, FI_ATOMIC, FI_RMA_EVENT],
                          [],
                          [btl_ofi_happy=no
                           btl_ofi_why="rdma/fabric.h lacks definitions btl/ofi needs (see config.log)"],
                          [[#include <rdma/fabric.h>]])
           AC_CHECK_DECLS([FI_OPT_MAX_RMA_SIZE], [], [], [[#include <rdma/fi_endpoint.h>]])
           AC_CHECK_HEADERS([rdma/fi_atomic.h rdma/fi_rma.h], [],
                            [btl_ofi_happy=no
                             btl_ofi_why="rdma/fi_atomic.h or rdma/fi_rma.h is missing"])
           CPPFLAGS=$btl_ofi_CPPFLAGS_save])

    AS_IF([test "$btl_ofi_happy" = "yes"],
          [btl_ofi_WRAPPER_EXTRA_LDFLAGS=$btl_ofi_LDFLAGS
           btl_ofi_WRAPPER_EXTRA_LIBS=$btl_ofi_LIBS
           $1],
          [AS_IF([test -n "$with_ofi" && test "$with_ofi" != "no"],
                 [AC_MSG_WARN([btl/ofi (btl-ofi) cannot be built: $btl_ofi_why.])
                  AC_MSG_WARN([libfabric was requested with --with-ofi=$with_ofi; it must provide API 1.5 or newer.])
                  AC_MSG_ERROR([Cannot continue.])])
           $2])

    OPAL_VAR_SCOPE_POP
])dnl
