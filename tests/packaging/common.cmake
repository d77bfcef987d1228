# SPDX-License-Identifier: MIT
# tests/packaging/common.cmake - helpers shared by the packaging test scripts (run with cmake -P):
# run a command and stop with its output when it fails; configure and build a nested project
# with the same generator and C compiler as the outer build, so a nested failure is vidmm's and
# not a toolchain mismatch.
#
# Every script receives PK_GENERATOR, PK_MAKE_PROGRAM, PK_C_COMPILER and PK_C_COMPILER_LAUNCHER
# (empty without one) from tests/packaging/CMakeLists.txt.

# pk_run(<what> COMMAND <argv...> [OUTPUT <var>] [WORKING_DIRECTORY <dir>])
# Runs the command; on a non-zero exit, fails the test showing the command and all its output.
# OUTPUT receives standard output (standard error is only shown on failure).
function(pk_run what)
  cmake_parse_arguments(PARSE_ARGV 1 A "" "OUTPUT;WORKING_DIRECTORY" "COMMAND")
  set(_wd "")
  if(A_WORKING_DIRECTORY)
    set(_wd WORKING_DIRECTORY "${A_WORKING_DIRECTORY}")
  endif()
  execute_process(COMMAND ${A_COMMAND} ${_wd} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    list(JOIN A_COMMAND " " _cmd)
    message(FATAL_ERROR "${what} failed (${_rc}):\n  ${_cmd}\n--- stdout ---\n${_out}\n--- stderr ---\n${_err}")
  endif()
  if(A_OUTPUT)
    set(${A_OUTPUT} "${_out}" PARENT_SCOPE)
  endif()
endfunction()

# pk_configure(<source dir> <binary dir> [cache args...]): a fresh configure of a nested project.
function(pk_configure src bin)
  file(REMOVE_RECURSE "${bin}")
  set(_args -S "${src}" -B "${bin}" -G "${PK_GENERATOR}" "-DCMAKE_C_COMPILER=${PK_C_COMPILER}"
            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
  if(PK_MAKE_PROGRAM)
    list(APPEND _args "-DCMAKE_MAKE_PROGRAM=${PK_MAKE_PROGRAM}")
  endif()
  if(PK_C_COMPILER_LAUNCHER)
    list(APPEND _args "-DCMAKE_C_COMPILER_LAUNCHER=${PK_C_COMPILER_LAUNCHER}")
  endif()
  pk_run("configure ${src}" COMMAND "${CMAKE_COMMAND}" ${_args} ${ARGN})
endfunction()

# pk_build(<binary dir>): build a nested project (Release, for multi-config generators).
function(pk_build bin)
  pk_run("build ${bin}" COMMAND "${CMAKE_COMMAND}" --build "${bin}" --config Release --parallel 2)
endfunction()

# pk_find_exe(<var> <binary dir> <name>): the built executable, wherever the generator put it.
function(pk_find_exe var bin name)
  file(GLOB_RECURSE _hits LIST_DIRECTORIES false "${bin}/bin/${name}" "${bin}/bin/*/${name}")
  if(NOT _hits)
    message(FATAL_ERROR "no executable '${name}' was built under ${bin}/bin")
  endif()
  list(GET _hits 0 _exe)
  set(${var} "${_exe}" PARENT_SCOPE)
endfunction()
