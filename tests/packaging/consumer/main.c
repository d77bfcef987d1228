/* SPDX-License-Identifier: MIT */
/* tests/packaging/consumer/main.c - a minimal program using vidmm the way an outside project
 * would: through the installed (or vendored) headers and library only. Exits 0 when the linked
 * library matches the headers and a copy moves the right bytes. */
#include <stdio.h>
#include <string.h>

#include <vidmm/vidmm.h>

int main(void)
{
    /* A mismatch means the program found one vidmm's headers and another's library. */
    unsigned linked = vidmm_version_number();
    if (linked != VIDMM_VERSION_NUMBER) {
        fprintf(stderr, "consumer: headers are %u but the linked library is %u\n",
                (unsigned)VIDMM_VERSION_NUMBER, linked);
        return 1;
    }

    /* Odd length and offsets so every backend runs its head and tail paths. */
    static unsigned char src[1000], dst[1000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 7u + 1u);
    int rc = vidmm_copy(dst + 1, src + 3, 997 - 3, VIDMM_MEM_CACHED);
    if (rc != 0) {
        fprintf(stderr, "consumer: vidmm_copy returned %d (%s)\n", rc, vidmm_strerror(rc));
        return 1;
    }
    if (memcmp(dst + 1, src + 3, 997 - 3) != 0 || dst[0] != 0) {
        fprintf(stderr, "consumer: vidmm_copy wrote wrong bytes\n");
        return 1;
    }
    printf("consumer: vidmm %s, backend %s\n", vidmm_version_string(), vidmm_backend_name());
    return 0;
}
