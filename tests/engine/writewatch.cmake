# SPDX-License-Identifier: MIT
# tests/engine/writewatch.cmake - the write-watch suite (include/vidmm/writewatch.h), included
# from tests/CMakeLists.txt after vidmm_add_test_exe() is defined. Registered once per backend
# (each test forces its backend through the descriptor) and once for the backend choice; a
# backend the kernel refuses makes every test of it a Criterion skip quoting the reason, and
# SKIP_REGULAR_EXPRESSION makes CTest report that backend's entry as skipped, not passed. The
# ww_choice tests set VIDMM_WRITEWATCH themselves (each Criterion test is a process of its own).
vidmm_add_test_exe(test_writewatch engine/test_writewatch.c)
target_link_libraries(test_writewatch PRIVATE vidmm_test_hugepool)
foreach(_ww choice uffd softdirty mprotect hugetlb)
  add_test(NAME test_writewatch.${_ww} COMMAND test_writewatch --short-filename --verbose "--filter=ww_${_ww}/*")
  vidmm_set_test_props(test_writewatch.${_ww} "engine;writewatch")
  if(NOT _ww STREQUAL "choice")
    set_tests_properties(test_writewatch.${_ww} PROPERTIES SKIP_REGULAR_EXPRESSION "refused by this kernel")
  endif()
endforeach()
# The hugetlb entry raises the 2 MiB nr_hugepages when run as root (its runner's PRE_ALL hook,
# restored in POST_ALL) and skips, saying why, without pages: it takes the pool's lock and runs
# alone, like test_os and test_tiers (see os.cmake).
set_tests_properties(test_writewatch.hugetlb PROPERTIES
  SKIP_REGULAR_EXPRESSION "refused by this kernel;huge pages unavailable"
  RESOURCE_LOCK vidmm_hugepages RUN_SERIAL ON)
