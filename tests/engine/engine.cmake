# SPDX-License-Identifier: MIT
# tests/engine/engine.cmake - the engine conformance suites (tests/engine/test_conf_*.c), one
# executable each, sharing tests/engine/t_engine.c. Included from tests/CMakeLists.txt in the
# Criterion (non-TSan) branch, after vidmm_add_test_exe() is defined. Each suite checks one
# area of shared/spec/wddm-vidmm.md: segments (2.3, 15.1), allocations (4.1, 15.2), placement
# and eviction (15.3-15.6, 15.19), locks (6.3, 15.11-15.14, 15.16-15.18), swizzled locks (8.2,
# 15.15), paging, cache maintenance, removal and determinism (15.7-15.10, 15.24-15.28); the WDDM2
# model (include/vidmm/wddm2.h): the mode's refusals (6.6, 12, 15.1), GPU VAs (9.2, 12, 15.21),
# residency and budgets (12, 15.21, 15.22), offer and reclaim (11, 15.20), power transitions
# (2.3, 15.26), Lock2 / Unlock2 and UpdateAllocationProperty (6.6, 12, 15.23), paging queues (12).

set(VIDMM_ENGINE_CONF_TESTS
  test_conf_segments
  test_conf_alloc
  test_conf_place
  test_conf_lock
  test_conf_swizzle
  test_conf_paging
  test_defects12
  test_defects17
  test_contract12
  test_conf_wddm2_mode
  test_conf_wddm2_va
  test_conf_wddm2_residency
  test_conf_wddm2_budget
  test_conf_wddm2_offer
  test_conf_wddm2_power
  test_conf_wddm2_lock2
  test_conf_wddm2_queue
  test_lazy_ranges
  test_narrow_locks
  test_lock_dirty
  test_unlocked_copy
  test_lock_race
  test_unprivileged
  test_paging_wait
  test_conf_resident_lists
  test_range_views
  test_refusals25
  test_conf_wddm2_pte_order
  test_conf_wddm2_process)

foreach(_t IN LISTS VIDMM_ENGINE_CONF_TESTS)
  vidmm_add_test_exe(${_t} engine/${_t}.c)
  target_link_libraries(${_t} PRIVATE vidmm_test_engine)   # engine/t_engine.c, compiled once
  add_test(NAME ${_t} COMMAND ${_t} --short-filename)
  vidmm_set_test_props(${_t} "engine")
endforeach()
# test_conf_resident_lists compares the resident-list path of vidmm_submit() with the general one on
# twin devices, steering one twin through struct vidmm_device (lib/engine/engine.h).
target_include_directories(test_conf_resident_lists PRIVATE ${PROJECT_SOURCE_DIR}/lib)
# test_lazy_ranges checks that a new allocation given a destroyed one's instance address does not
# inherit its range history: it reads the instance a handle names (lib/engine/engine.h vm_lookup()).
target_include_directories(test_lazy_ranges PRIVATE ${PROJECT_SOURCE_DIR}/lib)
# test_lock_dirty switches a device from whole write tracking to probes between two locks
# (struct vidmm_device's lock_watch): the lift of what a whole lock left armed before a probe.
target_include_directories(test_lock_dirty PRIVATE ${PROJECT_SOURCE_DIR}/lib)

# The WDDM2 translation's latency (issue 15: ns per vidmm_va_translate()) next to the WDDM1 lookup
# by handle (vidmm_alloc_query()): a program run by hand, not a test (performance is never
# asserted in CTest). Its device and allocations come from engine/b_wddm2.h, shared with the next.
add_executable(bench_wddm2_translate engine/bench_wddm2_translate.c)
target_link_libraries(bench_wddm2_translate PRIVATE vidmm_static vidmm_private_flags Threads::Threads)
set_target_properties(bench_wddm2_translate PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)

# WDDM2 residency calls on 1, 64 and 4096 allocations (issue 15: MakeResident of an
# already-resident set, of a set not resident, Evict, offer + reclaim), each next to the WDDM1
# calls doing the same work: a program run by hand, like bench_wddm2_translate.
add_executable(bench_wddm2_residency engine/bench_wddm2_residency.c)
target_link_libraries(bench_wddm2_residency PRIVATE vidmm_static vidmm_private_flags Threads::Threads)
set_target_properties(bench_wddm2_residency PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
# Both run once, briefly, as tests (figures not read): a call that fails exits 1.
add_test(NAME bench_wddm2_translate_smoke COMMAND bench_wddm2_translate 1 65536)
add_test(NAME bench_wddm2_residency_smoke COMMAND bench_wddm2_residency 1)
set_tests_properties(bench_wddm2_translate_smoke bench_wddm2_residency_smoke
                     PROPERTIES LABELS bench TIMEOUT 120)
