# SPDX-License-Identifier: MIT
# tests/packaging/install.cmake - `cmake --install` the current build into a scratch prefix and
# check the layout users and packagers rely on: headers, the library with its SONAME symlinks,
# the CMake package, the pkg-config file and vidmm-info. The fixture the find_package,
# pkg-config and installed-tool tests start from.
#
# cmake -DBUILD_DIR= -DPREFIX= [-DCONFIG=] -DSOURCE_DIR= -DLIBDIR= -DINCLUDEDIR= -DBINDIR=
#       -DVERSION= -DSOVERSION= -DSHARED=ON|OFF -DSTATIC=ON|OFF -DTOOLS=ON|OFF -P install.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

file(REMOVE_RECURSE "${PREFIX}")
set(_config "")
if(CONFIG)
  set(_config --config "${CONFIG}")
endif()
# DESTDIR from the caller's environment would send the files elsewhere.
pk_run("cmake --install" OUTPUT _log COMMAND "${CMAKE_COMMAND}" -E env --unset=DESTDIR
       "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${_config})

set(_missing "")
macro(expect path)
  if(NOT EXISTS "${PREFIX}/${path}")
    list(APPEND _missing "${path}")
  endif()
endmacro()

file(GLOB _headers RELATIVE "${SOURCE_DIR}/include/vidmm" "${SOURCE_DIR}/include/vidmm/*.h")
foreach(_h IN LISTS _headers)
  expect("${INCLUDEDIR}/vidmm/${_h}")
endforeach()
foreach(_f vidmmConfig.cmake vidmmConfigVersion.cmake vidmmTargets.cmake)
  expect("${LIBDIR}/cmake/vidmm/${_f}")
endforeach()
expect("${LIBDIR}/pkgconfig/vidmm.pc")
if(STATIC)
  expect("${LIBDIR}/libvidmm.a")
endif()
if(TOOLS)
  expect("${BINDIR}/vidmm-info")
endif()
if(SHARED)
  # The development link, the SONAME link binaries record, and the real file:
  # libvidmm.so -> libvidmm.so.<SOVERSION> -> libvidmm.so.<VERSION>.
  set(_lib "${PREFIX}/${LIBDIR}")
  expect("${LIBDIR}/libvidmm.so.${VERSION}")
  foreach(_pair "libvidmm.so;libvidmm.so.${SOVERSION}" "libvidmm.so.${SOVERSION};libvidmm.so.${VERSION}")
    list(GET _pair 0 _link)
    list(GET _pair 1 _target)
    if(NOT IS_SYMLINK "${_lib}/${_link}")
      list(APPEND _missing "${LIBDIR}/${_link} (a symlink to ${_target})")
    else()
      file(READ_SYMLINK "${_lib}/${_link}" _points)
      if(NOT _points STREQUAL _target)
        message(FATAL_ERROR "${LIBDIR}/${_link} points to '${_points}', expected '${_target}'")
      endif()
    endif()
  endforeach()
endif()
if(_missing)
  list(JOIN _missing "\n  " _m)
  message(FATAL_ERROR "missing from the install in ${PREFIX}:\n  ${_m}\ninstall log:\n${_log}")
endif()

file(GLOB_RECURSE _all LIST_DIRECTORIES false RELATIVE "${PREFIX}" "${PREFIX}/*")
list(SORT _all)
list(JOIN _all "\n  " _all)
message(STATUS "installed into ${PREFIX}:\n  ${_all}")
