/* SPDX-License-Identifier: MIT */
/* examples/emulator_textures.c - what an emulator does with vidmm first: a guest's textures,
 * kept tiled (NVIDIA block-linear) in video memory, uploaded and updated by the CPU through
 * ONE swizzling range (so that the range's linear view passes from texture to texture, growing
 * and shrinking), drawn by the GPU every frame, with more textures than video memory holds and a
 * system-memory budget that sends the coldest ones to a disk tier. Every texture's content is
 * known to the program (a seed and an update count), and every byte read back - through
 * READ_ONLY range locks and through vidmm_gpu_access() of the tiled surface - is checked.
 *
 * This is the sequence that crashed on its first upload pass (issue 25: the second texture,
 * larger than the first, grew the range's view after the first was written). The test run
 * runs it under AddressSanitizer and UndefinedBehaviorSanitizer too.
 *
 * Build: part of the vidmm build (examples/CMakeLists.txt); run: ./emulator_textures [frames]
 * (default 100). Exits 0 when every check passed and no call failed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vidmm/vidmm.h>

#define MiB (1024ull * 1024ull)
#define NTEX 200
#define DRAWN 24                /* textures a frame draws */
#define UPDATED 3               /* textures a frame updates through the range */

struct texture {
    vidmm_handle h;
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc desc;
    uint64_t tiled, linear;
    uint32_t seed, version;     /* the content: bytes(seed, version) */
};

static unsigned errors, mismatches;
static uint64_t checked;

static void fail(const char *what, int rc)
{
    fprintf(stderr, "emulator_textures: %s: %d (%s)\n", what, rc, vidmm_strerror(rc));
    errors++;
}

/* The texture's packed linear bytes for its current version. */
static void content(const struct texture *t, unsigned char *p)
{
    uint32_t x = t->seed * 2654435761u + t->version * 40503u + 1u;
    for (uint64_t i = 0; i < t->linear; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

static int range_lock(vidmm_device *dev, struct texture *t, uint32_t flags, unsigned char **data)
{
    struct vidmm_lock_args a;
    memset(&a, 0, sizeof a);
    a.allocation = t->h;
    a.flags = VIDMM_LOCK_ACQUIRE_APERTURE | flags;
    int rc = vidmm_lock(dev, &a);
    *data = a.data;
    return rc;
}

/* Upload: the whole texture written through the range's view. */
static void upload(vidmm_device *dev, struct texture *t, unsigned char *scratch)
{
    unsigned char *v;
    int rc = range_lock(dev, t, VIDMM_LOCK_WRITE_ONLY, &v);
    if (rc != 0) {
        fail("range lock for an upload", rc);
        return;
    }
    t->version++;
    content(t, scratch);
    memcpy(v, scratch, t->linear);
    if ((rc = vidmm_unlock(dev, 1, &t->h)) != 0)
        fail("unlock after an upload", rc);
}

/* Check: through a READ_ONLY range lock (the view untiled by vidmm) and through the tiled bytes
 * untiled here. */
static void check(vidmm_device *dev, struct texture *t, unsigned char *want, unsigned char *raw, unsigned char *lin)
{
    content(t, want);
    unsigned char *v;
    int rc = range_lock(dev, t, VIDMM_LOCK_READ_ONLY, &v);
    if (rc != 0) {
        fail("READ_ONLY range lock", rc);
        return;
    }
    mismatches += memcmp(v, want, t->linear) != 0;
    if ((rc = vidmm_unlock(dev, 1, &t->h)) != 0)
        fail("unlock after a check", rc);
    struct vidmm_alloc_info q = { .size_of = sizeof q };
    if ((rc = vidmm_alloc_query(dev, t->h, &q)) != 0) {
        fail("query", rc);
        return;
    }
    if (q.where == VIDMM_WHERE_SEGMENT) {
        if ((rc = vidmm_gpu_access(dev, t->h, 0, raw, t->tiled, false)) != 0 ||
            (rc = vidmm_deswizzle_surface(&t->layout, &t->desc, raw, t->tiled, lin, t->linear)) != 0) {
            fail("reading the tiled surface", rc);
            return;
        }
        mismatches += memcmp(lin, want, t->linear) != 0;
    }
    checked += t->linear;
}

int main(int argc, char **argv)
{
    const unsigned frames = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 100;
    struct vidmm_segment_desc vram = { 0x100000000ull, 48 * MiB, 48 * MiB, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = &vram;
    dd.segment_count = 1;
    dd.swizzling_ranges = 1;
    dd.sysmem_budget = 16 * MiB;
    dd.swap_path = "/tmp/vidmm-emulator-textures.swap"; /* made without a name: nothing is left behind */
    vidmm_device *dev;
    int rc = vidmm_device_create(&dd, &dev);
    if (rc != 0) {
        fail("device_create", rc);
        return 1;
    }
    static struct texture tex[NTEX];
    /* Sizes as a guest's: mostly small, some 512 and 1024 squared (4 MiB), in no order. */
    static const uint32_t side[8] = { 64, 128, 256, 64, 512, 128, 1024, 256 };
    size_t largest = 0;
    for (unsigned i = 0; i < NTEX; i++) {
        struct texture *t = &tex[i];
        t->layout = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
        t->desc = (struct vidmm_surface_desc){ .size = sizeof t->desc };
        t->desc.width = side[(i * 5u + i / 8u) % 8u];
        t->desc.height = t->desc.width / (1u + (i & 1u));
        t->desc.depth = 1;
        t->desc.element_bytes = 4;
        t->desc.block_width = t->desc.block_height = 1;
        t->desc.mip_levels = t->desc.array_layers = 1;
        t->seed = i + 1;
        if ((rc = vidmm_surface_tiled_size(&t->layout, &t->desc, &t->tiled)) != 0 ||
            (rc = vidmm_surface_linear_size(&t->layout, &t->desc, &t->linear)) != 0) {
            fail("surface sizes", rc);
            return 1;
        }
        if (t->linear > largest)
            largest = (size_t)t->linear;
        struct vidmm_alloc_desc d = { .size_of = sizeof d };
        d.size = t->tiled;
        d.supported_read_set = d.supported_write_set = 0x1;
        d.flags = VIDMM_ALLOC_SWIZZLED | VIDMM_ALLOC_CPU_VISIBLE;
        d.priority = VIDMM_PRIORITY_NORMAL;
        d.layout = &t->layout;
        d.surface = &t->desc;
        if ((rc = vidmm_alloc_create(dev, &d, &t->h)) != 0) {
            fail("alloc_create", rc);
            return 1;
        }
    }
    unsigned char *scratch = malloc(largest), *raw = malloc(largest + MiB), *lin = malloc(largest);
    if (!scratch || !raw || !lin)
        return 1;
    /* The first upload pass: every texture through the one range. */
    for (unsigned i = 0; i < NTEX; i++) {
        if ((rc = vidmm_make_resident(dev, &tex[i].h, 1, NULL)) != 0)
            fail("make_resident before an upload", rc);
        upload(dev, &tex[i], scratch);
    }
    uint64_t fence = 0;
    for (unsigned f = 0; f < frames && errors == 0; f++) {
        for (unsigned k = 0; k < UPDATED; k++)
            upload(dev, &tex[(f * 7u + k * 61u) % NTEX], scratch);
        struct vidmm_alloc_ref refs[DRAWN];
        for (unsigned k = 0; k < DRAWN; k++)
            refs[k] = (struct vidmm_alloc_ref){ .allocation = tex[(f * 13u + k * 17u) % NTEX].h };
        if ((rc = vidmm_submit(dev, refs, DRAWN, 0, NULL, &fence)) != 0)
            fail("submit", rc);
        else if ((rc = vidmm_fence_signal(dev, fence)) != 0)
            fail("fence_signal", rc);
        check(dev, &tex[(f * 29u) % NTEX], scratch, raw, lin);
    }
    for (unsigned i = 0; i < NTEX && errors == 0; i++)
        check(dev, &tex[i], scratch, raw, lin);
    struct vidmm_stats st = { .size_of = sizeof st };
    (void)vidmm_get_stats(dev, &st);
    printf("emulator_textures: %u textures, %u frames, one swizzling range; %" PRIu64 " range acquisitions, %" PRIu64
           " evictions, %" PRIu64 " write-outs to the disk tier and %" PRIu64 " read-backs; %.1f MiB checked, %u "
           "mismatches, %u errors\n",
           NTEX, frames, st.ranges_acquired, st.evictions, st.swap_writes, st.swap_reads, (double)checked / (double)MiB,
           mismatches, errors);
    for (unsigned i = 0; i < NTEX; i++)
        (void)vidmm_alloc_destroy(dev, tex[i].h);
    vidmm_device_destroy(dev);
    free(scratch);
    free(raw);
    free(lin);
    return errors == 0 && mismatches == 0 ? 0 : 1;
}
