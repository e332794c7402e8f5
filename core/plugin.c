/* Plugins loaded on demand: see plugin.h. */
#define _GNU_SOURCE
#include "plugin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PLUGINS 8

/* What loading each plugin gave, kept for the life of the process. */
typedef struct loaded {
    char name[32];
    d5_status status;
    const void *table;
    char why[512];
} loaded;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static loaded plugins[MAX_PLUGINS];
static int nplugins;

/* The folder of the object that holds this function: libd5core.so, or the
 * executable that d5 was linked into. */
static int library_dir(char *buf, size_t size)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)&d5__plugin_dir, &info) || !info.dli_fname) return 0;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return snprintf(buf, size, ".") > 0;
    int n = snprintf(buf, size, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
    return n > 0 && (size_t)n < size;
}

/* The i-th folder to look in, or 0 when there are no more. */
static int candidate(int i, char *buf, size_t size)
{
    const char *env = getenv("D5_PLUGIN_DIR");
    if (env && env[0]) return i == 0 && snprintf(buf, size, "%s", env) > 0;
    char dir[4096];
    if (i > 1 || !library_dir(dir, sizeof dir)) return 0;
    return snprintf(buf, size, i == 0 ? "%s/d5" : "%s/../lib/d5", dir) > 0;
}

void d5__plugin_dir(char *buf, size_t size)
{
    if (size == 0) return;
    if (!candidate(0, buf, size)) buf[0] = '\0';
}

/* "libcudart.so.13 not found: ..." when the loader could not find a library
 * that the plugin needs; the loader's message otherwise. */
static d5_status load_failed(loaded *p, const char *path, const char *err)
{
    const char *colon = strchr(err, ':');
    if (colon && strstr(err, "cannot open shared object file")) {
        snprintf(p->why, sizeof p->why, "%.*s not found: %s", (int)(colon - err), err, err);
        return D5_ERR_NODEVICE;
    }
    snprintf(p->why, sizeof p->why, "plugin %s cannot be loaded: %s", path, err);
    return D5_ERR_BACKEND;
}

static void load(loaded *p)
{
    char dir[4096], path[4200], first[4200] = "";
    for (int i = 0; candidate(i, dir, sizeof dir); i++) {
        snprintf(path, sizeof path, "%s/libd5_%s.so", dir, p->name);
        if (!first[0]) snprintf(first, sizeof first, "%s", path);
        if (access(path, F_OK) == 0) break;
        path[0] = '\0';
    }
    if (!path[0]) {
        p->status = D5_ERR_UNSUPPORTED;
        snprintf(p->why, sizeof p->why, "plugin not built (no %s)",
                 first[0] ? first : "folder to look in: set D5_PLUGIN_DIR");
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        p->status = load_failed(p, path, e ? e : "dlopen failed");
        return;
    }
    char symbol[64];
    snprintf(symbol, sizeof symbol, "d5_plugin_%s", p->name);
    void *sym = dlsym(h, symbol);
    d5__plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    p->table = sym ? entry(D5__PLUGIN_ABI) : NULL;
    if (!p->table) {
        /* The handle stays open: a library it loaded may not survive closing. */
        p->status = D5_ERR_BACKEND;
        snprintf(p->why, sizeof p->why, "plugin %s %s (ABI version %u expected)", path,
                 sym ? "is of another ABI version" : "exports no d5 plugin entry",
                 (unsigned)D5__PLUGIN_ABI);
        return;
    }
    p->status = D5_OK;
}

d5_status d5__plugin_load(const char *name, const void **table, char *why, size_t why_size)
{
    *table = NULL;
    if (why && why_size) why[0] = '\0';
    pthread_mutex_lock(&lock);
    loaded *p = NULL;
    for (int i = 0; i < nplugins && !p; i++)
        if (strcmp(plugins[i].name, name) == 0) p = &plugins[i];
    if (!p && nplugins < MAX_PLUGINS && strlen(name) < sizeof p->name) {
        p = &plugins[nplugins++];
        snprintf(p->name, sizeof p->name, "%s", name);
        load(p);
    }
    d5_status s = p ? p->status : D5_ERR_INVALID;
    if (p) *table = p->table;
    if (why && why_size) snprintf(why, why_size, "%s", p ? p->why : "no such plugin slot");
    pthread_mutex_unlock(&lock);
    return s;
}
