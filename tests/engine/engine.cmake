# SPDX-License-Identifier: MIT
# tests/engine/engine.cmake - the engine conformance suites (tests/engine/test_conf_*.c), one
# executable each, sharing tests/engine/t_engine.c. Included from tests/CMakeLists.txt in the
# Criterion (non-TSan) branch, after vidmm_add_test_exe() is defined. Each suite checks one
# area of shared/spec/wddm-vidmm.md: segments (2.3, 15.1), allocations (4.1, 15.2), placement
# and eviction (15.3-15.6, 15.19), locks (6.3, 15.11-15.14, 15.16-15.18), swizzled locks (8.2,
# 15.15), paging, cache maintenance, removal and determinism (15.7-15.10, 15.24-15.28).

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
  test_lazy_ranges)

foreach(_t IN LISTS VIDMM_ENGINE_CONF_TESTS)
  vidmm_add_test_exe(${_t} engine/${_t}.c)
  target_sources(${_t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/engine/t_engine.c)
  target_include_directories(${_t} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/engine)
  add_test(NAME ${_t} COMMAND ${_t} --short-filename)
  vidmm_set_test_props(${_t} "engine")
endforeach()
