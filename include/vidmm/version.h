/* SPDX-License-Identifier: MIT */
/* include/vidmm/version.h - the one place the version is written; CMake reads it from here. */
#ifndef VIDMM_VERSION_H
#define VIDMM_VERSION_H

#include "api.h"

#define VIDMM_VERSION_MAJOR 0
#define VIDMM_VERSION_MINOR 1
#define VIDMM_VERSION_PATCH 0
/* major * 10000 + minor * 100 + patch, as zstd does. */
#define VIDMM_VERSION_NUMBER (VIDMM_VERSION_MAJOR * 10000 + VIDMM_VERSION_MINOR * 100 + VIDMM_VERSION_PATCH)
#define VIDMM_VERSION_STRING "0.1.0"

VIDMM_BEGIN_DECLS

/* vidmm_version_number() returns VIDMM_VERSION_NUMBER of the library that is linked, which may
 * differ from the header's when the shared library was upgraded. This function can't fail. */
VIDMM_API unsigned vidmm_version_number(void);

/* vidmm_version_string() returns the linked library's version as "major.minor.patch".
 * Lifetime: a static string. This function can't fail. */
VIDMM_API const char *vidmm_version_string(void);

VIDMM_END_DECLS

#endif /* VIDMM_VERSION_H */
