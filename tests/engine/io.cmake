# SPDX-License-Identifier: MIT
# tests/engine/io.cmake - the suite of the disk tier's I/O layer (lib/engine/io/io.h): every
# backend (io_uring, thread pool, synchronous) in-process, fault injection, ENOSPC on a real
# tmpfs (root only, else skipped), closing with I/O in flight, many threads. The io.h functions
# are internal (hidden in libvidmm.so), so the suite links the static library and includes from
# lib/. Included from tests/CMakeLists.txt in both branches: the ThreadSanitizer build compiles
# the same source against tests/common/t_lite.h (Criterion's runner cannot start under TSan).
#
# Scratch files go under the build tree (the file system the library would use by default);
# VIDMM_TEST_IO_DIR in the environment moves them at run time.
set(_t_io_dir ${CMAKE_CURRENT_BINARY_DIR}/io-scratch)

if(VIDMM_SANITIZE STREQUAL "thread")
  add_executable(test_io engine/test_io.c)
  target_include_directories(test_io PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/common ${PROJECT_SOURCE_DIR}/lib)
  target_compile_definitions(test_io PRIVATE T_LITE_HARNESS=1 ${_t_built_defs} T_IO_DIR="${_t_io_dir}")
  target_link_libraries(test_io PRIVATE vidmm_test_lite vidmm_static vidmm_private_flags Threads::Threads)
  set_target_properties(test_io PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS ON)
  add_test(NAME test_io COMMAND test_io)
  vidmm_set_test_props(test_io "engine;io;concurrency")
else()
  vidmm_add_test_exe(test_io engine/test_io.c)
  target_include_directories(test_io PRIVATE ${PROJECT_SOURCE_DIR}/lib)
  target_compile_definitions(test_io PRIVATE T_IO_DIR="${_t_io_dir}")
  add_test(NAME test_io COMMAND test_io --short-filename)
  vidmm_set_test_props(test_io "engine;io")
  # The environment path of the backend choice, end to end: VIDMM_IO_BACKEND forces what AUTO
  # gives (the backend suites above name their backend and are not affected).
  foreach(_b uring threads sync)
    add_test(NAME test_io.env_${_b}
             COMMAND ${CMAKE_COMMAND} -E env VIDMM_IO_BACKEND=${_b} $<TARGET_FILE:test_io> --short-filename
                     --filter=io_backend/auto_follows_env)
    vidmm_set_test_props(test_io.env_${_b} "engine;io")
  endforeach()
endif()
