/* Where d5 looks for a named dataset: $D5_DATA_DIR, the source tree's data/
 * folder (filled by scripts/setup_data.sh), the installation's data folder,
 * and Debian's dataset packages. */
#include "dataset_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef D5_SOURCE_DIR
#define D5_SOURCE_DIR ""
#endif
#ifndef D5_INSTALL_DATA_DIR
#define D5_INSTALL_DATA_DIR "/usr/local/share/d5"
#endif

#define MAX_CANDIDATES 4

void d5_dataset_default_dir(const char *name, char *buf, size_t size)
{
    if (!buf || size == 0) return;
    if (!name) name = "";
    char cand[MAX_CANDIDATES][1024];
    int n = 0;
    const char *env = getenv("D5_DATA_DIR");
    if (env && env[0]) snprintf(cand[n++], sizeof cand[0], "%s/%s", env, name);
    if (D5_SOURCE_DIR[0]) snprintf(cand[n++], sizeof cand[0], "%s/data/%s", D5_SOURCE_DIR, name);
    snprintf(cand[n++], sizeof cand[0], "%s/datasets/%s", D5_INSTALL_DATA_DIR, name);
    if (strcmp(name, "fashion-mnist") == 0)
        snprintf(cand[n++], sizeof cand[0], "/usr/share/datasets/fashion-mnist");
    int pick = 0;
    for (int i = 0; i < n; i++) {
        if (d5__dataset_exists(cand[i])) {
            pick = i;
            break;
        }
    }
    snprintf(buf, size, "%s", cand[pick]);
}
