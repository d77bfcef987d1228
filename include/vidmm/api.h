/* SPDX-License-Identifier: MIT */
/* include/vidmm/api.h - export macro and C/C++ linkage helpers shared by every public header. */
#ifndef VIDMM_API_H
#define VIDMM_API_H

/* VIDMM_API marks every public declaration. The library is built with hidden visibility and a
 * version script (lib/vidmm.map); only what carries VIDMM_API and matches the map is exported.
 * Define VIDMM_API yourself before including a vidmm header to override it. */
#ifndef VIDMM_API
#  if defined(_WIN32) && defined(VIDMM_SHARED_BUILD)
#    define VIDMM_API __declspec(dllexport)
#  elif defined(__GNUC__) || defined(__clang__)
#    define VIDMM_API __attribute__((visibility("default")))
#  else
#    define VIDMM_API
#  endif
#endif

#ifdef __cplusplus
#  define VIDMM_BEGIN_DECLS extern "C" {
#  define VIDMM_END_DECLS }
#else
#  define VIDMM_BEGIN_DECLS
#  define VIDMM_END_DECLS
#endif

#endif /* VIDMM_API_H */
