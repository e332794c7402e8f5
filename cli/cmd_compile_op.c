/* d5 compile-op: builds custom operators (C, C++, CUDA) into a shared object
 * with the system compiler, caches it by the hash of everything that goes into
 * it, and checks that it loads and exports the operator asked for. */
#define _GNU_SOURCE
#include "cli.h"
#include "op_runner.h"

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#ifndef D5_SOURCE_DIR
#define D5_SOURCE_DIR "."
#endif
#ifndef D5_INSTALL_INCLUDE_DIR
#define D5_INSTALL_INCLUDE_DIR "/usr/local/include"
#endif

#define MAX_SOURCES 32
#define MAX_DEFINES 32

static const char *include_dir(void)
{
    struct stat st;
    if (stat(D5_SOURCE_DIR "/include/d5/operator.h", &st) == 0) return D5_SOURCE_DIR "/include";
    return D5_INSTALL_INCLUDE_DIR;
}

static int hash_file(const char *path, uint64_t *h)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) *h = d5_fnv1a(*h, buf, n);
    fclose(f);
    return 1;
}

static int mkdirs(const char *path)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *c = p + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) return 0;
            *c = '/';
        }
    return mkdir(p, 0777) == 0 || errno == EEXIST;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Runs argv, its output going to ours; returns the exit status or -1. */
static int run(char *const *argv)
{
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

int cmd_compile_op(int argc, char **argv)
{
    const char *name = NULL, *output = NULL, *cc = NULL, *cxx = NULL, *nvcc = NULL, *flags = NULL;
    int force = 0;
    const char *sources[MAX_SOURCES], *defines[MAX_DEFINES];
    int nsrc = 0, ndef = 0;
    /* -D K=V and sources are taken out first; the rest are named options. */
    char *rest[64];
    int nrest = 0;
    rest[nrest++] = argv[0];
    for (int i = 1; i < argc && nrest < 63; i++) {
        if (strcmp(argv[i], "-o") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "d5 compile-op: -o needs a file name\n");
                return D5_EXIT_USAGE;
            }
            output = argv[++i];
        } else if (strncmp(argv[i], "-D", 2) == 0) {
            const char *d = argv[i][2] ? argv[i] + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!d || !*d || ndef == MAX_DEFINES) {
                fprintf(stderr, "d5 compile-op: -D needs NAME or NAME=VALUE (at most %d)\n",
                        MAX_DEFINES);
                return D5_EXIT_USAGE;
            }
            defines[ndef++] = d;
        } else if (argv[i][0] != '-') {
            if (nsrc == MAX_SOURCES) {
                fprintf(stderr, "d5 compile-op: at most %d sources\n", MAX_SOURCES);
                return D5_EXIT_USAGE;
            }
            sources[nsrc++] = argv[i];
        } else {
            rest[nrest++] = argv[i];
            if (strchr(argv[i], '=') == NULL && i + 1 < argc && strcmp(argv[i], "--force") != 0 &&
                strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "-h") != 0)
                rest[nrest++] = argv[++i];
        }
    }
    const cli_opt opts[] = {
        {"name", CLI_STRING, &name, "NAME", "the operator the library must export (required)", 0,
         0},
        {"output", CLI_STRING, &output, "LIB", "also copy the library to LIB (short: -o LIB)", 0,
         0},
        {"cc", CLI_STRING, &cc, "CC", "C compiler (default $CC or cc)", 0, 0},
        {"cxx", CLI_STRING, &cxx, "CXX", "C++ compiler (default $CXX or c++)", 0, 0},
        {"nvcc", CLI_STRING, &nvcc, "NVCC", "CUDA compiler for .cu sources (default nvcc)", 0, 0},
        {"flags", CLI_STRING, &flags, "FLAGS", "extra compiler flags, space separated", 0, 0},
        {"force", CLI_FLAG, &force, NULL, "compile even when the cache has the result", 0, 0},
    };
    const cli_spec spec = {CLI_SPEC(
        "compile-op", "SRC... --name NAME [-D K=V]... [-o LIB] [--flags \"...\"] [--force]",
        "Compiles custom operator sources (.c with the C compiler, .cpp/.cc/.cxx with the C++\n"
        "compiler, .cu with nvcc) into one shared object that exports its operators with\n"
        "D5_OPERATOR_EXPORT (include <d5/operator.h>, operator ABI 2: create takes a\n"
        "d5_op_create_args, forward and backward a d5_op_call; docs/level0.md shows one and\n"
        "what changed from ABI 1). The result is cached under\n"
        "$XDG_CACHE_HOME/d5/ops (or ~/.cache/d5/ops) by a hash of the sources, defines, flags,\n"
        "compilers and d5's operator ABI, so unchanged operators are not rebuilt. Compiler\n"
        "errors are shown as the compiler prints them (exit 3). The library is then loaded and\n"
        "must export NAME. Use it with: d5 test-operator NAME --backend custom:LIB:NAME",
        opts)};
    int rc = cli_parse(&spec, nrest, rest);
    if (rc >= 0) return rc;
    if (!name || nsrc == 0) {
        fprintf(stderr, "d5 compile-op: %s (see 'd5 compile-op --help')\n",
                !name ? "--name NAME is required" : "no source files given");
        return D5_EXIT_USAGE;
    }
    cli_echo(stdout, &spec);
    for (int i = 0; i < nsrc; i++) printf("#   %-14s = %s\n", "SOURCE", sources[i]);
    if (!cc) cc = getenv("CC") ? getenv("CC") : "cc";
    if (!cxx) cxx = getenv("CXX") ? getenv("CXX") : "c++";
    if (!nvcc) nvcc = "nvcc";

    /* The cache key. */
    uint64_t h = D5_FNV1A_OFFSET;
    uint32_t abi = D5_OP_ABI_VERSION;
    h = d5_fnv1a(h, &abi, sizeof abi);
    const char *parts[] = {name, cc, cxx, nvcc, flags ? flags : "", d5_version()};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        h = d5_fnv1a(h, parts[i], strlen(parts[i]) + 1);
    for (int i = 0; i < ndef; i++) h = d5_fnv1a(h, defines[i], strlen(defines[i]) + 1);
    int any_cxx = 0, any_cu = 0;
    for (int i = 0; i < nsrc; i++) {
        if (!hash_file(sources[i], &h)) {
            fprintf(stderr, "d5 compile-op: cannot read source '%s': %s\n", sources[i],
                    strerror(errno));
            return D5_EXIT_INPUT;
        }
        any_cxx |= ends_with(sources[i], ".cpp") || ends_with(sources[i], ".cc") ||
                   ends_with(sources[i], ".cxx");
        any_cu |= ends_with(sources[i], ".cu");
    }
    char dir[4096], lib[4200];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    snprintf(dir, sizeof dir, "%s%s/d5/ops/%016llx", xdg && *xdg ? xdg : (home ? home : "/tmp"),
             xdg && *xdg ? "" : "/.cache", (unsigned long long)h);
    snprintf(lib, sizeof lib, "%s/lib%s.so", dir, name);
    struct stat st;
    int cached = !force && stat(lib, &st) == 0;
    printf("# d5 compile-op %s: %d source%s -> %s%s\n", name, nsrc, nsrc == 1 ? "" : "s", lib,
           cached ? " (cached)" : "");
    if (!cached) {
        if (!mkdirs(dir)) {
            fprintf(stderr, "d5 compile-op: cannot create cache directory '%s': %s\n", dir,
                    strerror(errno));
            return D5_EXIT_INPUT;
        }
        /* Objects first (each with its own compiler), then one link. */
        char objs[MAX_SOURCES][4300];
        char incl[4200];
        snprintf(incl, sizeof incl, "-I%s", include_dir());
        for (int i = 0; i < nsrc; i++) {
            int is_cu = ends_with(sources[i], ".cu");
            int is_cxx = ends_with(sources[i], ".cpp") || ends_with(sources[i], ".cc") ||
                         ends_with(sources[i], ".cxx");
            snprintf(objs[i], sizeof objs[i], "%s/%d.o", dir, i);
            char *args[128];
            int n = 0;
            char dbuf[MAX_DEFINES][512], fbuf[1024];
            args[n++] = (char *)(is_cu ? nvcc : is_cxx ? cxx : cc);
            if (is_cu) {
                args[n++] = "-Xcompiler";
                args[n++] = "-fPIC";
            } else {
                args[n++] = "-fPIC";
                args[n++] = (char *)(is_cxx ? "-std=c++17" : "-std=c11");
                args[n++] = "-fvisibility=hidden";
            }
            args[n++] = "-O2";
            args[n++] = incl;
            for (int d = 0; d < ndef; d++) {
                snprintf(dbuf[d], sizeof dbuf[d], "-D%s", defines[d]);
                args[n++] = dbuf[d];
            }
            if (flags) {
                snprintf(fbuf, sizeof fbuf, "%s", flags);
                for (char *save = NULL, *t = strtok_r(fbuf, " ", &save); t && n < 120;
                     t = strtok_r(NULL, " ", &save))
                    args[n++] = t;
            }
            args[n++] = "-c";
            args[n++] = (char *)sources[i];
            args[n++] = "-o";
            args[n++] = objs[i];
            args[n] = NULL;
            int st2 = run(args);
            if (st2 != 0) {
                fprintf(stderr, "d5 compile-op: %s failed on '%s' (%s)\n", args[0], sources[i],
                        st2 < 0 ? "could not run it" : "see its messages above");
                return D5_EXIT_INPUT;
            }
        }
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.tmp", lib);
        char *args[MAX_SOURCES + 16];
        int n = 0;
        args[n++] = (char *)(any_cu ? nvcc : any_cxx ? cxx : cc);
        args[n++] = "-shared";
        for (int i = 0; i < nsrc; i++) args[n++] = objs[i];
        args[n++] = "-o";
        args[n++] = tmp;
        if (any_cu) args[n++] = "-lcudart";
        args[n] = NULL;
        if (run(args) != 0 || rename(tmp, lib) != 0) {
            fprintf(stderr, "d5 compile-op: linking '%s' failed\n", lib);
            return D5_EXIT_INPUT;
        }
    }
    d5_op_library *l = NULL;
    d5_status s = probe_library(lib, 30);
    if (s == D5_OK) s = d5_op_library_open(lib, &l);
    const d5_op_desc *d = NULL;
    if (s == D5_OK) {
        s = d5_op_library_find(l, name, &d);
        if (s == D5_OK)
            for (int32_t i = 0; i < d5_op_library_count(l); i++) {
                const d5_op_desc *o = d5_op_library_at(l, i);
                printf("  %s (%s): %d..%d inputs, %d..%d outputs, backward %s\n", o->name,
                       o->backend, o->min_inputs, o->max_inputs, o->min_outputs, o->max_outputs,
                       o->backward ? "yes" : "no");
            }
        d5_op_library_close(l);
    }
    if (s != D5_OK) return cli_fail("compile-op", s);
    if (output) {
        char *cp[] = {"cp", lib, (char *)output, NULL};
        if (run(cp) != 0) {
            fprintf(stderr, "d5 compile-op: cannot copy the library to '%s'\n", output);
            return D5_EXIT_INPUT;
        }
        printf("%s\n", output);
    } else {
        printf("%s\n", lib);
    }
    return D5_EXIT_OK;
}
