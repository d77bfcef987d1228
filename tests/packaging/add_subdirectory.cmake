# SPDX-License-Identifier: MIT
# tests/packaging/add_subdirectory.cmake - vendor the vidmm tree into tests/packaging/subdir_parent
# with add_subdirectory(), as an emulator would. The parent's CMakeLists checks at configure
# time that no tests/bench/tools targets appear and no flags leak; this script runs it twice:
#  1. configure only, with VIDMM_SANITIZE and VIDMM_WERROR on, and read the compile commands:
#     vidmm's own objects must get the sanitizer and warnings, the parent's program neither;
#  2. configure, build and run the parent's programs (shared and static vidmm).
#
# cmake -DSOURCE_DIR= -DPARENT_DIR= -DWORK_DIR= + PK_* (see common.cmake) -P add_subdirectory.cmake
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

# --- 1. flags stay where they belong --------------------------------------------------------------
set(_san "${WORK_DIR}/sanitize")
# No CMAKE_BUILD_TYPE: vidmm must not pick one for a parent that did not.
pk_configure("${PARENT_DIR}" "${_san}" "-DVIDMM_SOURCE_DIR=${SOURCE_DIR}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
             "-DVIDMM_SANITIZE=address,undefined" -DVIDMM_WERROR=ON)
file(STRINGS "${_san}/CMakeCache.txt" _bt REGEX "^CMAKE_BUILD_TYPE:")
if(_bt MATCHES "=.+")
  message(FATAL_ERROR "vendored vidmm set the parent's build type: ${_bt}")
endif()
if(EXISTS "${_san}/compile_commands.json")
  file(READ "${_san}/compile_commands.json" _cc)
  string(JSON _n LENGTH "${_cc}")
  set(_lib_sanitized FALSE)
  set(_parent_seen FALSE)
  math(EXPR _last "${_n} - 1")
  foreach(_i RANGE ${_last})
    string(JSON _file GET "${_cc}" ${_i} file)
    string(JSON _cmd GET "${_cc}" ${_i} command)
    if(_file MATCHES "/consumer/main\\.c$")
      set(_parent_seen TRUE)
      if(_cmd MATCHES "(-fsanitize[^ ]*|-W[a-z][^ ]*)")
        message(FATAL_ERROR "the parent's program is compiled with vidmm's '${CMAKE_MATCH_1}':\n${_cmd}")
      endif()
    elseif(_cmd MATCHES "-fsanitize=address,undefined" AND _cmd MATCHES "-Werror")
      set(_lib_sanitized TRUE)
    endif()
  endforeach()
  # Without these the check above would prove nothing.
  if(NOT _parent_seen OR NOT _lib_sanitized)
    message(FATAL_ERROR "compile_commands.json lacks the parent's program (${_parent_seen}) or a sanitized vidmm object (${_lib_sanitized})")
  endif()
  message(STATUS "sanitizer and warning flags stay on vidmm's own objects")
else()
  message(STATUS "generator '${PK_GENERATOR}' writes no compile_commands.json; flag check left to the parent's configure")
endif()

# --- 2. builds and runs ---------------------------------------------------------------------------
set(_bin "${WORK_DIR}/build")
pk_configure("${PARENT_DIR}" "${_bin}" "-DVIDMM_SOURCE_DIR=${SOURCE_DIR}" -DCMAKE_BUILD_TYPE=Release)
pk_build("${_bin}")
pk_find_exe(_exe "${_bin}" parent_consumer)
pk_run("the parent's program linked to vidmm::vidmm" OUTPUT _out COMMAND "${_exe}")
message(STATUS "${_out}")
file(GLOB_RECURSE _static LIST_DIRECTORIES false "${_bin}/bin/parent_consumer_static" "${_bin}/bin/*/parent_consumer_static")
if(_static)
  pk_run("the parent's program linked to vidmm::vidmm_static" OUTPUT _out COMMAND "${_static}")
  message(STATUS "static: ${_out}")
endif()
