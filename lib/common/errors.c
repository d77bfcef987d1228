/* SPDX-License-Identifier: MIT */
/* lib/common/errors.c - error names and their Windows equivalents (spec/wddm-vidmm.md section 13). */
#include "common/internal.h"

/* One row per code: message, the NTSTATUS a kernel thunk returns, the HRESULT a user-mode
 * callback returns. Values from the Windows SDK ntstatus.h / winerror.h and the D3D DDI
 * MAKE_D3DDDIHRESULT definition (facility 0x876), as collected in the spec. */
struct err_row {
    const char *msg;
    uint32_t ntstatus;
    uint32_t hresult;
};

static const struct err_row err_rows[] = {
    /*  0 */ { "success", 0x00000000u /* STATUS_SUCCESS */, 0x00000000u /* S_OK */ },
    /* -1 */ { "invalid argument", 0xC000000Du /* STATUS_INVALID_PARAMETER */, 0x80070057u /* E_INVALIDARG */ },
    /* -2 */ { "out of host memory", 0xC0000017u /* STATUS_NO_MEMORY */, 0x8007000Eu /* E_OUTOFMEMORY */ },
    /* -3 */ { "out of video memory", 0xC01E0100u /* STATUS_GRAPHICS_NO_VIDEO_MEMORY */,
               0x8007000Eu /* E_OUTOFMEMORY: what the runtime reports to the application */ },
    /* -4 */ { "allocation busy (still drawing)", 0xC01E0102u /* STATUS_GRAPHICS_ALLOCATION_BUSY */,
               0x8876021Cu /* D3DDDIERR_WASSTILLDRAWING */ },
    /* -5 */ { "not available", 0xC01E0107u /* STATUS_GRAPHICS_UNSWIZZLING_APERTURE_UNAVAILABLE */,
               0x8876086Au /* D3DDDIERR_NOTAVAILABLE */ },
    /* -6 */ { "cannot evict a pinned allocation", 0xC01E0109u /* STATUS_GRAPHICS_CANT_EVICT_PINNED_ALLOCATION */,
               0xC0262109u /* ERROR_GRAPHICS_CANT_EVICT_PINNED_ALLOCATION */ },
    /* -7 */ { "input/output error", 0xC01E0116u /* STATUS_GRAPHICS_ALLOCATION_CONTENT_LOST */,
               0xC0262116u /* ERROR_GRAPHICS_ALLOCATION_CONTENT_LOST */ },
    /* -8 */ { "not supported", 0xC01E0108u /* STATUS_GRAPHICS_UNSWIZZLING_APERTURE_UNSUPPORTED */,
               0x8876086Au /* D3DDDIERR_NOTAVAILABLE */ },
    /* -9 */ { "device removed", 0xC00002B6u /* STATUS_DEVICE_REMOVED */, 0x88760870u /* D3DDDIERR_DEVICEREMOVED */ },
    /* -10 */ { "source and destination overlap", 0xC000000Du /* STATUS_INVALID_PARAMETER */,
                0x80070057u /* E_INVALIDARG */ },
    /* -11 */ { "cannot render a locked allocation", 0xC01E0111u /* STATUS_GRAPHICS_CANT_RENDER_LOCKED_ALLOCATION */,
                0xC0262111u /* D3DDDIERR_CANTRENDERLOCKEDALLOCATION */ },
    /* -12 */ { "rename instance used out of order", 0xC01E0113u /* STATUS_GRAPHICS_INVALID_ALLOCATION_INSTANCE */,
                0x80070057u /* E_INVALIDARG: the runtime rejects the submission */ },
    /* -13 */ { "paging operation failed", 0xC01E0106u /* STATUS_GRAPHICS_ALLOCATION_INVALID */,
                0x88760870u /* D3DDDIERR_DEVICEREMOVED: a failed paging operation removes the device */ },
    /* -14: STATUS_TIMEOUT (0x102) is a success code, which a caller testing NT_SUCCESS() would take
     * for a completed wait; a timed-out engine call failed and changed nothing, so it maps to a
     * failure status. */
    /* -14 */ { "wait timed out", 0xC00000B5u /* STATUS_IO_TIMEOUT */,
                0x800705B4u /* HRESULT_FROM_WIN32(ERROR_TIMEOUT) */ },
};

#define ERR_ROWS ((int)(sizeof(err_rows) / sizeof(err_rows[0])))

static const struct err_row *row_of(int err)
{
    if (err > 0 || err <= -ERR_ROWS) /* also keeps INT_MIN from being negated */
        return NULL;
    return &err_rows[-err];
}

/* VIDMM_PENDING (include/vidmm/wddm2.h): the one positive status, success with paging still in
 * flight - STATUS_PENDING (0x103, a success code) / E_PENDING (spec 12, 13). */
#define ERR_PENDING 1

const char *vidmm_strerror(int err)
{
    if (err == ERR_PENDING)
        return "pending (paging in flight)";
    const struct err_row *r = row_of(err);
    return r ? r->msg : "unknown error";
}

uint32_t vidmm_error_to_ntstatus(int err)
{
    if (err == ERR_PENDING)
        return 0x00000103u; /* STATUS_PENDING */
    const struct err_row *r = row_of(err);
    return r ? r->ntstatus : 0xC000000Du;
}

uint32_t vidmm_error_to_hresult(int err)
{
    if (err == ERR_PENDING)
        return 0x8000000Au; /* E_PENDING */
    const struct err_row *r = row_of(err);
    return r ? r->hresult : 0x80070057u;
}
