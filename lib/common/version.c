/* SPDX-License-Identifier: MIT */
/* lib/common/version.c - the linked library's version, for callers that check it at run time. */
#include "vidmm/version.h"

unsigned vidmm_version_number(void)
{
    return VIDMM_VERSION_NUMBER;
}

const char *vidmm_version_string(void)
{
    return VIDMM_VERSION_STRING;
}
