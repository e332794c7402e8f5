/* bench/network: the ONNX Runtime side of d5-bench-network, run as a Node.js
 * child process (ort_bench.js with onnxruntime-node) whose one JSON line is
 * read back here. */
#ifndef D5_BENCH_ORT_SIDE_H
#define D5_BENCH_ORT_SIDE_H

#include "d5/d5.h"

#include <stddef.h>

/* Where the peer lives. Strings are borrowed for the life of the struct. */
typedef struct ort_side {
    const char *node;   /* the node executable ("node") */
    const char *script; /* ort_bench.js */
    const char *dir;    /* the prefix given to install.sh (holds node_modules) */
    const char *tmpdir; /* where node's standard error is kept for error messages */
    int32_t threads;    /* intra-op threads */
} ort_side;

/* What one ort_bench.js run reported. Free with ort_result_free. */
typedef struct ort_result {
    double *samples; /* ns: run times, or session creation times with load_only (d5_alloc) */
    size_t n;
    double load_ms;    /* creation of the first session */
    double rss_before; /* load_only: bytes of RSS before the first session */
    double rss;        /* load_only: bytes of RSS with the first session alive */
    double max_rss;    /* load_only: peak RSS of the node process, bytes */
    float *output;     /* first values of the first output of the last run (d5_alloc) */
    size_t noutput;
    char version[64]; /* onnxruntime-node's version */
} ort_result;

/* One run of the script. */
typedef struct ort_request {
    const char *model;
    int64_t batch;
    const char *shape; /* input dimensions after the batch, "3x32x32" */
    double seconds;    /* budget of the measured runs */
    int32_t warmup, max_reps;
    int32_t load_only;
    int64_t ids; /* > 0: the input is int64 token ids in [0, ids) (ort_bench.js --ids) */
} ort_request;

/* Checks that node runs and that onnxruntime-node is installed under o->dir.
 * D5_ERR_NOTFOUND with the reason (and the command that fixes it) when not. */
d5_status ort_probe(const ort_side *o);

/* Runs ort_bench.js once and parses its JSON line into *out. D5_ERR_BACKEND
 * with the script's error or node's last line of standard error when the run
 * failed; D5_ERR_FORMAT when its output is not the expected JSON. */
d5_status ort_run(const ort_side *o, const ort_request *rq, ort_result *out);
void ort_result_free(ort_result *r);

#endif
