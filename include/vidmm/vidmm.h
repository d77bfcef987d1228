/* SPDX-License-Identifier: MIT */
/* include/vidmm/vidmm.h - the whole public API in one include. */
#ifndef VIDMM_VIDMM_H
#define VIDMM_VIDMM_H

#include "version.h"
#include "common.h"
#include "kernels.h"
#include "swizzle.h"
#include "device.h"
#include "writewatch.h"
#include "wddm2.h"

#endif /* VIDMM_VIDMM_H */
