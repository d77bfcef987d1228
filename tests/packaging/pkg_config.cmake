# SPDX-License-Identifier: MIT
# tests/packaging/pkg_config.cmake - use the installed vidmm.pc as a Makefile would: the flags
# from `pkg-config --cflags --libs vidmm` must point into the scratch prefix, compile and link
# tests/packaging/consumer/main.c with the plain compiler, and the program must run (with
# LD_LIBRARY_PATH, as a non-system prefix needs). With a static library, the --static flags
# must be enough to link libvidmm.a.
#
# cmake -DPKG_CONFIG= -DPREFIX= -DLIBDIR= -DCONSUMER_SRC= -DWORK_DIR= -DVERSION= -DSTATIC=ON|OFF
#       -DSHARED=ON|OFF + PK_* (see common.cmake) -P pkg_config.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(_libdir "${PREFIX}/${LIBDIR}")
# PKG_CONFIG_LIBDIR too, so a vidmm.pc installed system-wide can never answer instead.
set(_pc "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${_libdir}/pkgconfig" "PKG_CONFIG_LIBDIR=${_libdir}/pkgconfig"
        "${PKG_CONFIG}")

pk_run("pkg-config --modversion vidmm" OUTPUT _ver COMMAND ${_pc} --modversion vidmm)
string(STRIP "${_ver}" _ver)
if(NOT _ver STREQUAL VERSION)
  message(FATAL_ERROR "vidmm.pc says version '${_ver}', the build is '${VERSION}'")
endif()

# Every -I and -L must lead into the prefix: a .pc that names the configure-time prefix instead
# breaks every relocated install (cmake --install --prefix, a package built with DESTDIR and
# moved), usually by silently picking up some other copy of vidmm.
file(REAL_PATH "${PREFIX}" _real_prefix)
function(check_paths what flags)
  foreach(_f IN LISTS flags)
    if(_f MATCHES "^-[IL](.+)$")
      file(REAL_PATH "${CMAKE_MATCH_1}" _p)
      string(FIND "${_p}/" "${_real_prefix}/" _at)
      if(NOT _at EQUAL 0)
        file(READ "${_libdir}/pkgconfig/vidmm.pc" _pcfile)
        message("--- ${_libdir}/pkgconfig/vidmm.pc ---\n${_pcfile}")
        message(FATAL_ERROR "pkg-config ${what} gives '${_f}', outside the install prefix ${PREFIX}: "
                            "vidmm.pc names the configure-time prefix instead of where it was installed")
      endif()
    endif()
  endforeach()
endfunction()

pk_run("pkg-config --cflags vidmm" OUTPUT _cflags COMMAND ${_pc} --cflags vidmm)
pk_run("pkg-config --libs vidmm" OUTPUT _libs COMMAND ${_pc} --libs vidmm)
separate_arguments(_cflags UNIX_COMMAND "${_cflags}")
separate_arguments(_libs UNIX_COMMAND "${_libs}")
check_paths("--cflags" "${_cflags}")
check_paths("--libs" "${_libs}")
list(JOIN _cflags " " _c)
list(JOIN _libs " " _l)
message(STATUS "pkg-config --cflags --libs vidmm: ${_c} ${_l}")

set(_strict -std=c99 -pedantic -Wall -Wextra -Werror)
if(SHARED)
  set(_exe "${WORK_DIR}/consumer_pc")
  pk_run("compile and link with the pkg-config flags" COMMAND "${PK_C_COMPILER}" ${_strict} ${_cflags}
         "${CONSUMER_SRC}" -o "${_exe}" ${_libs})
  pk_run("run the pkg-config consumer" OUTPUT _out
         COMMAND "${CMAKE_COMMAND}" -E env "LD_LIBRARY_PATH=${_libdir}" "${_exe}")
  message(STATUS "${_out}")
endif()

if(STATIC)
  # Static linking takes the archive itself plus Libs.private; -lvidmm would prefer the .so.
  pk_run("pkg-config --static --libs vidmm" OUTPUT _slibs COMMAND ${_pc} --static --libs vidmm)
  separate_arguments(_slibs UNIX_COMMAND "${_slibs}")
  check_paths("--static --libs" "${_slibs}")
  list(TRANSFORM _slibs REPLACE "^-lvidmm$" "${_libdir}/libvidmm.a")
  set(_exe "${WORK_DIR}/consumer_pc_static")
  pk_run("compile and link libvidmm.a with the pkg-config --static flags" COMMAND "${PK_C_COMPILER}"
         ${_strict} ${_cflags} "${CONSUMER_SRC}" -o "${_exe}" ${_slibs})
  pk_run("run the static pkg-config consumer" OUTPUT _out COMMAND "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${_exe}")
  message(STATUS "static: ${_out}")
endif()
