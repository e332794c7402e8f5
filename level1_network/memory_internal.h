/* The memory recorder's representation, shared by memory.c (recording) and
 * memory_build.c (the profile). */
#ifndef D5_MEMORY_INTERNAL_H
#define D5_MEMORY_INTERNAL_H

#include "d5/memory.h"

#include "executor_internal.h"

/* Sections (d5_memory_recorder_section) a recording may name. */
#define D5__MEMORY_SECTIONS 8

/* What the plan did, in the order the handler saw it. */
enum { D5__PEV_ENTER = 0, D5__PEV_BIRTH = 1, D5__PEV_DEATH = 2 };
typedef struct d5__pev {
    double t_ns;
    int32_t kind; /* D5__PEV_* */
    int32_t ref;  /* ENTER: the row; BIRTH, DEATH: the plan buffer */
} d5__pev;

/* A row while recording; strings are borrowed from the network or the
 * recorder (section names). */
typedef struct d5__mrow {
    const char *name, *op_type, *backend;
    int32_t phase, node;
} d5__mrow;

struct d5_memory_recorder {
    d5_executor *ex;
    const d5_timer *clock;
    int attached;
    int32_t nnodes, nbufs;
    /* Rows: 0 is "outside nodes", then forward nodes in schedule order,
     * backward nodes in the order they run, then sections. */
    d5__mrow *rows;
    int32_t nrows, node_rows, row_cap;
    char section_names[D5__MEMORY_SECTIONS][64];
    int32_t *fwd_row, *bwd_row; /* per scheduled node, -1 when it never runs */
    int32_t *step_row;          /* per step */
    /* Per plan buffer. */
    const char **buf_label;
    int32_t *buf_kind;
    int64_t *buf_bytes;
    int32_t *buf_row; /* the row of the step it is born at, -1 */
    /* Buffers born and dying at each step: buf lists [start[t], start[t+1]). */
    int32_t *birth_start, *birth_buf, *death_start, *death_buf;
    /* The recording. */
    int recording;
    int run_state; /* 0 waiting for the run, 1 in it, 2 after it */
    int32_t runs;
    int32_t cursor; /* last step whose births and deaths are out */
    int32_t cur_row, base_row;
    int32_t saved_scope;
    double begin_ns;
    char *name;
    d5__pev *pev;
    int64_t npev, pev_cap, pev_dropped;
};

/* Merges the recorder's events with the heap log into *out. */
d5_status d5__memory_build(const d5_memory_recorder *r, const d5_memory_log *log,
                           d5_memory_profile *out);

#endif
