# SPDX-License-Identifier: MIT
# tests/packaging/find_package.cmake - configure, build and run tests/packaging/consumer against
# the scratch install: find_package(vidmm <version> REQUIRED), link vidmm::vidmm (and
# vidmm::vidmm_static when installed), run both.
#
# cmake -DPREFIX= -DCONSUMER_DIR= -DWORK_DIR= -DVERSION= + PK_* (see common.cmake)
#       -P find_package.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(_bin "${WORK_DIR}/build")
pk_configure("${CONSUMER_DIR}" "${_bin}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${PREFIX}"
             "-DVIDMM_EXPECT_VERSION=${VERSION}" "-DVIDMM_EXPECT_PREFIX=${PREFIX}")
pk_build("${_bin}")

pk_find_exe(_exe "${_bin}" consumer)
pk_run("the consumer linked to vidmm::vidmm" OUTPUT _out COMMAND "${_exe}")
message(STATUS "${_out}")
file(GLOB_RECURSE _static LIST_DIRECTORIES false "${_bin}/bin/consumer_static" "${_bin}/bin/*/consumer_static")
if(_static)
  pk_run("the consumer linked to vidmm::vidmm_static" OUTPUT _out COMMAND "${_static}")
  message(STATUS "static: ${_out}")
endif()
