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

/* What d5 compile-op builds, and where. */
typedef struct compile_job {
    const char *name, *output, *cc, *cxx, *nvcc, *flags;
    int force;
    const char *sources[MAX_SOURCES], *defines[MAX_DEFINES];
    int nsrc, ndef;
    int any_cxx, any_cu;
    char dir[4096], lib[4200]; /* the cache folder and the library in it */
} compile_job;

/* Takes -o, -D K=V and the sources out of argv into *j; the named options
 * go to rest (argv[0] first). Returns -1 to go on, or an exit status. */
static int split_args(int argc, char **argv, compile_job *j, char **rest, int *nrest)
{
    *nrest = 0;
    rest[(*nrest)++] = argv[0];
    for (int i = 1; i < argc && *nrest < 63; i++) {
        if (strcmp(argv[i], "-o") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "d5 compile-op: -o needs a file name\n");
                return D5_EXIT_USAGE;
            }
            j->output = argv[++i];
        } else if (strncmp(argv[i], "-D", 2) == 0) {
            const char *d = argv[i][2] ? argv[i] + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!d || !*d || j->ndef == MAX_DEFINES) {
                fprintf(stderr, "d5 compile-op: -D needs NAME or NAME=VALUE (at most %d)\n",
                        MAX_DEFINES);
                return D5_EXIT_USAGE;
            }
            j->defines[j->ndef++] = d;
        } else if (argv[i][0] != '-') {
            if (j->nsrc == MAX_SOURCES) {
                fprintf(stderr, "d5 compile-op: at most %d sources\n", MAX_SOURCES);
                return D5_EXIT_USAGE;
            }
            j->sources[j->nsrc++] = argv[i];
        } else {
            rest[(*nrest)++] = argv[i];
            if (strchr(argv[i], '=') == NULL && i + 1 < argc && strcmp(argv[i], "--force") != 0 &&
                strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "-h") != 0)
                rest[(*nrest)++] = argv[++i];
        }
    }
    return -1;
}

/* The cache key (sources, defines, flags, compilers, d5's operator ABI) and
 * the library's path under the cache: -1 to go on, or an exit status. */
static int cache_path(compile_job *j)
{
    uint64_t h = D5_FNV1A_OFFSET;
    uint32_t abi = D5_OP_ABI_VERSION;
    h = d5_fnv1a(h, &abi, sizeof abi);
    const char *parts[] = {j->name, j->cc, j->cxx, j->nvcc, j->flags ? j->flags : "", d5_version()};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        h = d5_fnv1a(h, parts[i], strlen(parts[i]) + 1);
    for (int i = 0; i < j->ndef; i++) h = d5_fnv1a(h, j->defines[i], strlen(j->defines[i]) + 1);
    for (int i = 0; i < j->nsrc; i++) {
        const char *src = j->sources[i];
        if (!hash_file(src, &h)) {
            fprintf(stderr, "d5 compile-op: cannot read source '%s': %s\n", src, strerror(errno));
            return D5_EXIT_INPUT;
        }
        j->any_cxx |= ends_with(src, ".cpp") || ends_with(src, ".cc") || ends_with(src, ".cxx");
        j->any_cu |= ends_with(src, ".cu");
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    snprintf(j->dir, sizeof j->dir, "%s%s/d5/ops/%016llx",
             xdg && *xdg ? xdg : (home ? home : "/tmp"), xdg && *xdg ? "" : "/.cache",
             (unsigned long long)h);
    snprintf(j->lib, sizeof j->lib, "%s/lib%s.so", j->dir, j->name);
    return -1;
}

/* Compiles source i into obj with its compiler: -1, or an exit status. */
static int compile_source(const compile_job *j, int i, const char *obj)
{
    const char *src = j->sources[i];
    int is_cu = ends_with(src, ".cu");
    int is_cxx = ends_with(src, ".cpp") || ends_with(src, ".cc") || ends_with(src, ".cxx");
    char incl[4200];
    snprintf(incl, sizeof incl, "-I%s", include_dir());
    char *args[128];
    int n = 0;
    char dbuf[MAX_DEFINES][512], fbuf[1024];
    args[n++] = (char *)(is_cu ? j->nvcc : is_cxx ? j->cxx : j->cc);
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
    for (int d = 0; d < j->ndef; d++) {
        snprintf(dbuf[d], sizeof dbuf[d], "-D%s", j->defines[d]);
        args[n++] = dbuf[d];
    }
    if (j->flags) {
        snprintf(fbuf, sizeof fbuf, "%s", j->flags);
        for (char *save = NULL, *t = strtok_r(fbuf, " ", &save); t && n < 120;
             t = strtok_r(NULL, " ", &save))
            args[n++] = t;
    }
    args[n++] = "-c";
    args[n++] = (char *)src;
    args[n++] = "-o";
    args[n++] = (char *)obj;
    args[n] = NULL;
    int st = run(args);
    if (st == 0) return -1;
    fprintf(stderr, "d5 compile-op: %s failed on '%s' (%s)\n", args[0], src,
            st < 0 ? "could not run it" : "see its messages above");
    return D5_EXIT_INPUT;
}

/* Objects first (each with its own compiler), then one link into the
 * cache: -1, or an exit status. */
static int build_library(const compile_job *j)
{
    if (!mkdirs(j->dir)) {
        fprintf(stderr, "d5 compile-op: cannot create cache directory '%s': %s\n", j->dir,
                strerror(errno));
        return D5_EXIT_INPUT;
    }
    char objs[MAX_SOURCES][4300];
    for (int i = 0; i < j->nsrc; i++) {
        snprintf(objs[i], sizeof objs[i], "%s/%d.o", j->dir, i);
        int rc = compile_source(j, i, objs[i]);
        if (rc >= 0) return rc;
    }
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", j->lib);
    char *args[MAX_SOURCES + 16];
    int n = 0;
    args[n++] = (char *)(j->any_cu ? j->nvcc : j->any_cxx ? j->cxx : j->cc);
    args[n++] = "-shared";
    for (int i = 0; i < j->nsrc; i++) args[n++] = objs[i];
    args[n++] = "-o";
    args[n++] = tmp;
    if (j->any_cu) args[n++] = "-lcudart";
    args[n] = NULL;
    if (run(args) != 0 || rename(tmp, j->lib) != 0) {
        fprintf(stderr, "d5 compile-op: linking '%s' failed\n", j->lib);
        return D5_EXIT_INPUT;
    }
    return -1;
}

/* Loads the library, checks that it exports the operator, lists its
 * operators and copies it to -o: the exit status. */
static int check_library(const compile_job *j)
{
    d5_op_library *l = NULL;
    d5_status s = probe_library(j->lib, 30);
    if (s == D5_OK) s = d5_op_library_open(j->lib, &l);
    const d5_op_desc *d = NULL;
    if (s == D5_OK) {
        s = d5_op_library_find(l, j->name, &d);
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
    if (!j->output) {
        printf("%s\n", j->lib);
        return D5_EXIT_OK;
    }
    char *cp[] = {"cp", (char *)j->lib, (char *)j->output, NULL};
    if (run(cp) != 0) {
        fprintf(stderr, "d5 compile-op: cannot copy the library to '%s'\n", j->output);
        return D5_EXIT_INPUT;
    }
    printf("%s\n", j->output);
    return D5_EXIT_OK;
}

int cmd_compile_op(int argc, char **argv)
{
    compile_job job;
    compile_job *j = &job;
    memset(j, 0, sizeof *j);
    /* -D K=V and sources are taken out first; the rest are named options. */
    char *rest[64];
    int nrest = 0;
    int rc = split_args(argc, argv, j, rest, &nrest);
    if (rc >= 0) return rc;
    const cli_opt opts[] = {
        {"name", CLI_STRING, &j->name, "NAME", "the operator the library must export (required)", 0,
         0},
        {"output", CLI_STRING, &j->output, "LIB", "also copy the library to LIB (short: -o LIB)", 0,
         0},
        {"cc", CLI_STRING, &j->cc, "CC", "C compiler (default $CC or cc)", 0, 0},
        {"cxx", CLI_STRING, &j->cxx, "CXX", "C++ compiler (default $CXX or c++)", 0, 0},
        {"nvcc", CLI_STRING, &j->nvcc, "NVCC", "CUDA compiler for .cu sources (default nvcc)", 0,
         0},
        {"flags", CLI_STRING, &j->flags, "FLAGS", "extra compiler flags, space separated", 0, 0},
        {"force", CLI_FLAG, &j->force, NULL, "compile even when the cache has the result", 0, 0},
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
    rc = cli_parse(&spec, nrest, rest);
    if (rc >= 0) return rc;
    if (!j->name || j->nsrc == 0) {
        fprintf(stderr, "d5 compile-op: %s (see 'd5 compile-op --help')\n",
                !j->name ? "--name NAME is required" : "no source files given");
        return D5_EXIT_USAGE;
    }
    cli_echo(stdout, &spec);
    for (int i = 0; i < j->nsrc; i++) printf("#   %-14s = %s\n", "SOURCE", j->sources[i]);
    if (!j->cc) j->cc = getenv("CC") ? getenv("CC") : "cc";
    if (!j->cxx) j->cxx = getenv("CXX") ? getenv("CXX") : "c++";
    if (!j->nvcc) j->nvcc = "nvcc";
    if ((rc = cache_path(j)) >= 0) return rc;
    struct stat st;
    int cached = !j->force && stat(j->lib, &st) == 0;
    printf("# d5 compile-op %s: %d source%s -> %s%s\n", j->name, j->nsrc, j->nsrc == 1 ? "" : "s",
           j->lib, cached ? " (cached)" : "");
    if (!cached && (rc = build_library(j)) >= 0) return rc;
    return check_library(j);
}
