# SPDX-License-Identifier: MIT
# cmake/VidmmFlags.cmake - warnings and sanitizers for vidmm's own targets only.
# Nothing here touches CMAKE_C_FLAGS or directory properties, so a parent project that vendors
# vidmm with add_subdirectory() sees none of it.
include(CheckCCompilerFlag)

add_library(vidmm_private_flags INTERFACE)

set(_vidmm_warnings -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wundef
    -Wpointer-arith -Wcast-align=strict -Wno-unused-parameter)
foreach(_w IN LISTS _vidmm_warnings)
  string(MAKE_C_IDENTIFIER "VIDMM_HAVE${_w}" _var)
  check_c_compiler_flag(${_w} ${_var})
  if(${_var})
    target_compile_options(vidmm_private_flags INTERFACE $<$<COMPILE_LANGUAGE:C>:${_w}>)
  endif()
endforeach()
if(VIDMM_WERROR)
  target_compile_options(vidmm_private_flags INTERFACE -Werror)
endif()
target_compile_features(vidmm_private_flags INTERFACE c_std_11)

if(VIDMM_SANITIZE)
  set(_san -fsanitize=${VIDMM_SANITIZE} -fno-omit-frame-pointer)
  if(VIDMM_SANITIZE MATCHES "undefined")
    list(APPEND _san -fno-sanitize-recover=undefined)
  endif()
  target_compile_options(vidmm_private_flags INTERFACE ${_san} -g)
  target_link_options(vidmm_private_flags INTERFACE ${_san})
endif()
if(VIDMM_DEBUG)
  target_compile_definitions(vidmm_private_flags INTERFACE VIDMM_DEBUG=1)
endif()
