# SPDX-License-Identifier: MIT
# tests/engine/os.cmake - the suite of the engine's OS layer (lib/engine/os/os.h), included from
# tests/CMakeLists.txt after vidmm_add_test_exe() is defined. The os.h functions are internal
# (hidden in libvidmm.so), so the suite links the static library and includes from lib/.
vidmm_add_test_exe(test_os engine/test_os.c)
target_link_libraries(test_os PRIVATE vidmm_test_hugepool)
target_include_directories(test_os PRIVATE ${PROJECT_SOURCE_DIR}/lib)
add_test(NAME test_os COMMAND test_os --short-filename)
vidmm_set_test_props(test_os "engine")
# The suite may raise the 2 MiB nr_hugepages when run as root (and restores it at the end), and
# its huge-page tests expect the pages they saw free to still be free a moment later. The lock
# keeps it apart from test_tiers, which changes the pool too; RUN_SERIAL keeps it apart from
# every other test as well, because any engine test that creates a device takes pages from a
# raised pool for its segments (test_model and test_engine_threads held up to 12 of 16): run
# beside one, test_os failed at random ("libhugetlbfs, 2101248 bytes: got tier 2"), and a
# restore while another process held pages left the pool raised.
set_tests_properties(test_os PROPERTIES RESOURCE_LOCK vidmm_hugepages RUN_SERIAL ON)
