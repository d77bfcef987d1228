# SPDX-License-Identifier: MIT
# tests/packaging/vidmm_info_smoke.cmake - run vidmm-info as text and as JSON; both must exit 0,
# name a known backend, and agree. Run with: cmake -DVIDMM_INFO=<path> -P <this file>.
cmake_minimum_required(VERSION 3.25)

if(NOT VIDMM_INFO)
  message(FATAL_ERROR "pass -DVIDMM_INFO=<path to vidmm-info>")
endif()

set(_backends "scalar|sse2|avx2|avx512|neon")

execute_process(COMMAND "${VIDMM_INFO}" RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
message("${text}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vidmm-info exited with '${rc}'\n${err}")
endif()
if(NOT text MATCHES "\n  backend: +(${_backends})\n")
  message(FATAL_ERROR "vidmm-info did not print 'backend: <name>' in its kernels section")
endif()
set(text_backend "${CMAKE_MATCH_1}")

execute_process(COMMAND "${VIDMM_INFO}" --json RESULT_VARIABLE rc OUTPUT_VARIABLE js ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vidmm-info --json exited with '${rc}'\n${err}")
endif()
# string(JSON) fails on malformed JSON, so this also proves the output parses.
string(JSON json_backend ERROR_VARIABLE jerr GET "${js}" kernels backend)
if(jerr)
  message(FATAL_ERROR "vidmm-info --json: ${jerr}\n${js}")
endif()
if(NOT json_backend MATCHES "^(${_backends})$")
  message(FATAL_ERROR "vidmm-info --json: kernels.backend is '${json_backend}', not a known backend")
endif()
if(NOT json_backend STREQUAL text_backend)
  message(FATAL_ERROR "text says backend '${text_backend}', JSON says '${json_backend}'")
endif()
# Every probe section must be present, whatever its verdict on this host.
foreach(path "version;library" "cpu;features" "kernels;wc_copy_variant" "huge_pages;explicit;usable"
             "huge_pages;transparent;usable" "huge_pages;libhugetlbfs;usable" "io_uring;usable"
             "userfaultfd;usable")
  string(JSON _v ERROR_VARIABLE jerr GET "${js}" ${path})
  if(jerr)
    message(FATAL_ERROR "vidmm-info --json lacks '${path}': ${jerr}")
  endif()
endforeach()

execute_process(COMMAND "${VIDMM_INFO}" --help RESULT_VARIABLE rc OUTPUT_VARIABLE help)
if(NOT rc EQUAL 0 OR NOT help MATCHES "usage: vidmm-info")
  message(FATAL_ERROR "vidmm-info --help: exit '${rc}', output:\n${help}")
endif()
execute_process(COMMAND "${VIDMM_INFO}" --no-such-option RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "vidmm-info --no-such-option exited with '${rc}', expected 2")
endif()
message(STATUS "vidmm-info: backend ${text_backend}")

# --tune-write: the measured swizzle plans' table for this machine (a short run: 4 MiB only).
set(_tune "${CMAKE_CURRENT_BINARY_DIR}/vidmm-info-tune.txt")
file(REMOVE "${_tune}")
execute_process(COMMAND "${VIDMM_INFO}" --tune-write "${_tune}" --tune-sizes 4 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "vidmm-info --tune-write exited with '${rc}'\n${out}${err}")
endif()
file(STRINGS "${_tune}" _lines)
list(GET _lines 0 _head)
list(GET _lines 1 _cpu)
list(LENGTH _lines _n)
if(NOT _head STREQUAL "vidmm-swizzle-tune 2" OR NOT _cpu MATCHES "^cpu ." OR _n LESS 10)
  message(FATAL_ERROR "vidmm-info --tune-write wrote an unexpected table (${_n} lines):\n${_lines}")
endif()
execute_process(COMMAND "${VIDMM_INFO}" --tune-sizes 0 --tune-write "${_tune}" RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "vidmm-info --tune-sizes 0 exited with '${rc}', not 2")
endif()
file(REMOVE "${_tune}")
