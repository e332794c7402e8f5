/* d5 level 1: the graph executor, its events, and the FrameworkOverhead metric.
 *
 * An executor compiles a d5_network once: it infers shapes, evaluates the
 * nodes whose inputs are all constant (Shape -> Gather -> Reshape chains),
 * picks a backend for every remaining node, creates the operator instances,
 * schedules them in topological order and plans one buffer arena in which
 * values whose lifetimes do not overlap share memory. Runs then only feed,
 * execute and fetch.
 *
 * Backends: a comma-separated preference list (default
 * d5_backend_default_list(), "dnnl,blas,ref"): each node takes the first
 * backend that has its operator and accepts its inputs and attributes (a
 * backend's create may decline, e.g. float64 or an exotic padding); `ref` is
 * always the last resort. "auto" measures every candidate of each node once at
 * create and keeps the fastest. Custom operators come from libraries loaded
 * with d5_op_library_open and take precedence for the operator names they
 * export. Per-node overrides "NODE=BACKEND" win over both. A list or override
 * given explicitly is checked at create: a name that is no backend, or one
 * that cannot run here, is an error, never skipped. d5_executor_node_at says
 * which backend each node got.
 *
 * The executor borrows the network: it must outlive the executor and not be
 * changed while the executor lives (initializers are read in place). An
 * executor is not thread safe.
 */
#ifndef D5_EXECUTOR_H
#define D5_EXECUTOR_H

#include "d5/memory.h"
#include "d5/network.h"
#include "d5/precision.h"
#include "d5/stats.h"
#include "d5/timer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct d5_executor d5_executor;

/* ---- Events ---------------------------------------------------------------------- */

typedef enum d5_event {
    D5_EVENT_BEFORE_EXECUTOR = 0, /* start of d5_executor_inference(_and_backprop) */
    D5_EVENT_AFTER_EXECUTOR,      /* its end */
    D5_EVENT_BEFORE_NODE,         /* before a node's forward (or backward, see phase) */
    D5_EVENT_AFTER_NODE,
    D5_EVENT_AFTER_INFERENCE, /* all forward nodes ran */
    D5_EVENT_AFTER_BACKPROP,  /* all backward nodes ran */
    D5_EVENT_BEFORE_COPY,     /* before a value is copied between memories (copy index in .copy) */
    D5_EVENT_AFTER_COPY
} d5_event;

typedef enum d5_phase { D5_PHASE_FORWARD = 0, D5_PHASE_BACKWARD = 1 } d5_phase;

typedef struct d5_event_info {
    int32_t event; /* a d5_event */
    int32_t phase; /* a d5_phase */
    int32_t node;  /* index in the schedule (d5_executor_node_at); -1 for graph events */
    const char *node_name, *op_type, *backend; /* NULL for graph events */
    /* Copy events: the copy (d5_executor_copy_at), its value and bytes; node
     * is the node it runs before (-1: after the forward pass). Else -1. */
    int32_t copy;
    const char *value;
    size_t bytes;
} d5_event_info;

/* A handler returns D5_OK to go on; any other status stops the run, which
 * returns that status. */
typedef d5_status (*d5_event_fn)(void *user, const d5_event_info *info);

/* ---- Creation ------------------------------------------------------------------------ */

typedef struct d5_executor_options {
    const char *backend;       /* preference list or "auto"; NULL: d5_backend_default_list() */
    const char *node_backends; /* "conv1=ref,fc1=blas" or NULL */
    /* Custom operator libraries (borrowed; must outlive the executor). */
    d5_op_library *const *libraries;
    int32_t nlibraries;
    /* Plan for d5_executor_inference_and_backprop: floating-point initializers
     * become parameters with gradients, and forward values live until the
     * backward pass has used them. */
    int32_t backprop;
    /* Floating-point parameters are read from the network's memory at every
     * run and never folded into constants, so that changes to them
     * (d5_network_initializer_data, an optimizer training them through another
     * executor) are seen: an evaluation executor beside a training one.
     * Implied by backprop. */
    int32_t variable_params;
    /* The scalar value whose gradient is seeded with 1 (backprop); NULL: the
     * network's first output. */
    const char *loss;
    /* With backprop: also compute gradients of floating-point graph inputs
     * (default 0: parameters only, as training needs). */
    int32_t input_gradients;
    /* Give every value its own memory so that d5_executor_fetch can read any
     * intermediate after a run (validation, debugging); default 0: reuse. */
    int32_t keep_values;
    /* Graph inputs whose values are known at create (borrowed until the
     * executor is freed): they become constants and are not fed, so operators
     * whose output shapes depend on them compile. d5 onnx-test binds the
     * integer inputs of a test this way. */
    const char *const *const_names;
    const d5_tensor *const_values;
    int32_t nconst;
    /* "auto" backend: measured repetitions per candidate (default 5). */
    int32_t auto_reps;
    /* Compute precision of Conv, Gemm, MatMul and FusedConv, forward and
     * backward: NULL or "f32" strict float32; "bf16" or "f16" lets backends
     * that can (dnnl) compute them in that precision on float32 tensors, with
     * float32 accumulation and float32 parameters (mixed-precision training).
     * d5_executor_precision_report says where it took effect. Any other value
     * fails d5_executor_create with D5_ERR_INVALID and a detail that starts
     * with "options.compute_precision: ". */
    const char *compute_precision;
    /* Graph inputs of sequence and optional type: their values (borrowed for
     * create). How many tensors a sequence holds, whether an optional holds
     * one, and their shapes are fixed at create; the data is fed then, and
     * d5_executor_feed_value gives new data of the same structure. */
    const char *const *value_names;
    const d5_value *values;
    int32_t nvalues;
} d5_executor_options;

D5_API d5_executor_options d5_executor_default_options(void);

/* Control flow, sequences and optionals (d5_network_has_control_flow) are
 * resolved at create, on a copy of `net` that the executor keeps
 * (d5_executor_network): an If whose condition is constant (an initializer,
 * a bound input, a value computed from shapes) becomes its branch, and one
 * whose condition is computed at run time computes both branches and
 * selects (Where); a Loop whose trip count and condition are constant and a
 * Scan are unrolled, each iteration's body inlined, scan outputs stacked
 * (so that backprop runs through them); SequenceMap is unrolled over its
 * sequences; a sequence is a list of tensors known at create (Sequence*,
 * SplitToSequence, ConcatFromSequence become tensor nodes or none), an
 * optional holds a tensor or a sequence or nothing, known at create.
 * Inlined nodes and values are named "<node>/<branch or iteration>/<name>".
 * What cannot be resolved so (a Loop whose condition is computed from
 * data) is D5_ERR_UNSUPPORTED naming the node and the value.
 *
 * Compiles `net` (shapes must be inferable: bind symbolic dimensions first).
 * Errors name the node, operator and backend at fault. Bad backend options
 * fail first, with the statuses of the two checks below and a detail that
 * starts with "options.backend: " or "options.node_backends: ". */
D5_API D5_NODISCARD d5_status d5_executor_create(const d5_network *net,
                                                 const d5_executor_options *opt, d5_executor **out);
/* Checks a preference list as options.backend: d5_backend_check_list with
 * "auto" allowed. A device backend (cuda) may be listed: its nodes keep their
 * values in device memory, with copies where the schedule changes memory
 * (d5_executor_copy_at). */
D5_API D5_NODISCARD d5_status d5_executor_check_backends(const char *list);
/* Checks per-node overrides "NODE=BACKEND,..." as options.node_backends
 * against `net` (NULL or "" is no override). D5_ERR_NOTFOUND when NODE is not
 * a node of the network: the detail names it and lists the network's nodes
 * (the first ones, when there are many); D5_ERR_INVALID for an item without
 * '=', an empty item or a node given twice; for BACKEND (one name, not
 * "auto"), the statuses of d5_executor_check_backends, with the node named. */
D5_API D5_NODISCARD d5_status d5_executor_check_node_backends(const d5_network *net,
                                                              const char *spec);
D5_API void d5_executor_free(d5_executor *ex);

/* Adds an event handler; handlers run in the order added. */
D5_API D5_NODISCARD d5_status d5_executor_add_handler(d5_executor *ex, d5_event_fn fn, void *user);
/* Attaches a region timer: FORWARD and BACKWARD around the passes and one key
 * per node, "<node name>" forward and "<node name>/backward". The timer is
 * borrowed. */
D5_API D5_NODISCARD d5_status d5_executor_attach_timer(d5_executor *ex, d5_timer *timer);

/* ---- Running ------------------------------------------------------------------------- */

/* Copies t into graph input `name`; its descriptor must equal the compiled
 * one (D5_ERR_SHAPE says both). Inputs not fed keep their previous contents
 * (zeros at first). */
D5_API D5_NODISCARD d5_status d5_executor_feed(d5_executor *ex, const char *name,
                                               const d5_tensor *t);
/* A view of a value's current contents: graph inputs and outputs,
 * initializers, constants folded at create, and, with options.keep_values,
 * any intermediate (without it, D5_ERR_STATE: its memory is reused). Borrowed
 * until the next run or d5_executor_free. */
D5_API D5_NODISCARD d5_status d5_executor_fetch(const d5_executor *ex, const char *name,
                                                d5_tensor *view);
/* Feeds a graph input of any type: a tensor as d5_executor_feed; a sequence
 * or optional with the structure given at create (options.values). */
D5_API D5_NODISCARD d5_status d5_executor_feed_value(d5_executor *ex, const char *name,
                                                     const d5_value *v);
/* A graph output of any type: *view's items are views as d5_executor_fetch
 * gives them, and the items array is the executor's; both borrowed until the
 * next run or d5_executor_free. */
D5_API D5_NODISCARD d5_status d5_executor_fetch_value(d5_executor *ex, const char *name,
                                                      d5_value *view);
/* The network the executor compiled: `net` as given, or its copy with
 * control flow resolved. Node indices of d5_exec_node refer to it. */
D5_API const d5_network *d5_executor_network(const d5_executor *ex);
/* Runs the forward pass. */
D5_API D5_NODISCARD d5_status d5_executor_inference(d5_executor *ex);
/* Runs forward, then backward from the loss (seeded with ones: the gradient
 * of the sum of the loss's elements), computing the gradient of every
 * parameter (and graph input, with options.input_gradients). Needs
 * options.backprop;
 * D5_ERR_UNSUPPORTED names the first node on the path whose operator has no
 * backward. */
D5_API D5_NODISCARD d5_status d5_executor_inference_and_backprop(d5_executor *ex);
/* The gradient of the loss with respect to a parameter or graph input after
 * d5_executor_inference_and_backprop. Borrowed like d5_executor_fetch. */
D5_API D5_NODISCARD d5_status d5_executor_gradient(const d5_executor *ex, const char *name,
                                                   d5_tensor *view);
/* Makes the executor read parameter `name` from `data` (CPU, the parameter's
 * descriptor, borrowed until the executor is freed or rebound) instead of the
 * network's copy: an optimizer updates the weights in place. */
D5_API D5_NODISCARD d5_status d5_executor_bind_param(d5_executor *ex, const char *name, void *data);

/* ---- The schedule ---------------------------------------------------------------------- */

typedef struct d5_exec_node {
    const char *name, *op_type, *backend;
    int32_t network_index; /* index in the network */
    double flops, bytes;   /* of one forward call */
    const d5_op *op;
    /* 1 for a view (Reshape, Flatten, Squeeze, Unsqueeze, Identity) in an
     * inference executor: it does not run, its output shares its input's
     * memory. */
    int32_t view;
} d5_exec_node;

/* Nodes that run at every inference, in order (constant-folded nodes are not
 * among them). */
D5_API int32_t d5_executor_node_count(const d5_executor *ex);
D5_API void d5_executor_node_at(const d5_executor *ex, int32_t i, d5_exec_node *out);
/* The backends that run the scheduled nodes (views that do not run are left
 * out), each with its number of nodes, in order of first use in the schedule:
 * out[0..max-1] (out may be NULL when max is 0). Returns the number of
 * distinct backends, which may exceed max. */
D5_API int32_t d5_executor_backend_nodes(const d5_executor *ex, d5_backend_nodes *out, int32_t max);
/* What node i's operator runs (d5_op_impl_get, d5/precision.h): for the dnnl
 * backend's Conv, FusedConv, Gemm and MatMul, the precision, the instruction
 * set and oneDNN's implementation names; reported 0 for other nodes.
 * D5_ERR_RANGE for i outside the schedule. */
D5_API D5_NODISCARD d5_status d5_executor_node_impl(const d5_executor *ex, int32_t i,
                                                    d5_op_impl *out);
/* Where options.compute_precision took effect, as text: a first line
 *   "compute precision bf16: 3 of 4 nodes in bf16 (native), 1 in another precision"
 * then the backends' notes, each once ("[1] float32 operands converted to
 * bfloat16 for the primitives: ..."), then one line per scheduled Conv, Gemm,
 * MatMul and FusedConv node, with the number of its note:
 *   "conv1 Conv dnnl: bf16 native, forward brgconv:avx512_core_amx_bf16, backward
 *    jit:avx512_core_amx_bf16 / jit:avx512_core_amx_bf16 [1]"
 *   "fc Gemm ref: f32 (the ref backend computes in its tensors' type)"
 * (backward kernels once a backward pass has built them). Other operators
 * always compute in their tensors' type. Writes at most `size` bytes,
 * NUL-terminated when size > 0 (buf may be NULL when size is 0), and returns
 * the length of the whole report, as snprintf does: a larger buffer gets the
 * rest. */
D5_API size_t d5_executor_precision_report(const d5_executor *ex, char *buf, size_t size);
/* Number of network nodes evaluated once at create. */
D5_API int32_t d5_executor_folded_count(const d5_executor *ex);
/* Runs node i's forward alone on the planned buffers (the FrameworkOverhead
 * metric times nodes this way). */
D5_API D5_NODISCARD d5_status d5_executor_run_node(d5_executor *ex, int32_t i);

/* Copies between host and device memory. A node on a device backend (cuda)
 * reads and writes device memory; a value that one memory produces and
 * another reads is copied once per run, before its first reader there; a
 * constant or initializer once, at the first run; a graph output produced on
 * a device to the host after the forward pass (d5_executor_fetch reads that
 * copy). The copies are part of every run and of FrameworkOverhead (which
 * times nodes alone, without them); each has events and a timer region
 * "copy VALUE to MEMORY". None on a schedule that runs on the host only. */
typedef struct d5_exec_copy {
    const char *value;     /* the value copied */
    const char *from, *to; /* "host" or the device memory's name ("cuda") */
    size_t bytes;
    int32_t node; /* the scheduled node it runs before; -1: after the forward pass */
    int32_t once; /* a constant: copied at the first run only */
} d5_exec_copy;
D5_API int32_t d5_executor_copy_count(const d5_executor *ex);
/* Copy i; all zero for i out of range. */
D5_API void d5_executor_copy_at(const d5_executor *ex, int32_t i, d5_exec_copy *out);
/* Runs copy i alone (a constant's too), to time it. */
D5_API D5_NODISCARD d5_status d5_executor_run_copy(d5_executor *ex, int32_t i);

typedef struct d5_memory_plan {
    size_t arena_bytes;    /* planned activation (and gradient) memory: the peak */
    size_t unshared_bytes; /* what it would be without reuse */
    size_t param_bytes;    /* initializers read in place */
    size_t constant_bytes; /* values folded at create */
    int32_t buffers;       /* values placed in the arena */
    /* Values passed between two dnnl convolutions in oneDNN's blocked layout
     * (layout propagation: never reordered to ONNX's layout and back). */
    int32_t blocked_values;
    /* Device memory (nodes on a device backend): the arenas of the devices,
     * activations and copies of host values read there. */
    size_t device_bytes;
} d5_memory_plan;
D5_API void d5_executor_memory(const d5_executor *ex, d5_memory_plan *out);

/* ---- FrameworkOverhead ------------------------------------------------------------------ */

/* How far a FrameworkOverhead result can be trusted (d5_overhead_classify). */
typedef enum d5_overhead_flag {
    D5_OVERHEAD_OK = 0,         /* precise and plausible */
    D5_OVERHEAD_UNSTABLE = 1,   /* too imprecise to quote as a result: a noisy machine */
    D5_OVERHEAD_IMPLAUSIBLE = 2 /* the graph beat its own nodes by more than timing can explain */
} d5_overhead_flag;

/* The rule's thresholds, in overhead units (0.1 is 10% of the sum of nodes). */
#define D5_OVERHEAD_TARGET_MIN         0.01  /* finest CI half-width aimed at */
#define D5_OVERHEAD_UNSTABLE_HALFWIDTH 0.10  /* CI half-width above it: unstable */
#define D5_OVERHEAD_IMPLAUSIBLE_MEDIAN -0.10 /* median below it: implausible */
#define D5_OVERHEAD_IMPLAUSIBLE_LOW    -0.25 /* CI low bound below it: implausible */

typedef struct d5_overhead {
    d5_measurement graph;            /* d5_executor_inference, nanoseconds (samples owned) */
    double sum_median;               /* sum over nodes of each node's median alone, nanoseconds */
    double sum_lo, sum_hi;           /* sums of the nodes' CI bounds */
    double overhead;                 /* median over rounds of graph / sum of nodes - 1 */
    double overhead_lo, overhead_hi; /* its CI (order statistics of the per-round ratios) */
    int32_t nodes;
    d5_measurement *node; /* per scheduled node, in schedule order; owned */
    /* The interleaved rounds. graph.samples[k] and node[i].samples[k] come from
     * round k: graph.n == node[i].n == rounds. */
    uint32_t rounds;     /* measured rounds, warm-up excluded */
    int32_t stable;      /* 1 when the rounds stopped because the CI reached `target` */
    int32_t flag;        /* a d5_overhead_flag */
    d5_stop_reason stop; /* why the rounds stopped (also in graph.stop and node[i].stop) */
    double target;       /* CI half-width aimed at: max(rel_ci, D5_OVERHEAD_TARGET_MIN) */
    double halfwidth;    /* CI half-width reached: max(overhead - lo, hi - overhead) */
    double elapsed_s;    /* wall time of the measured rounds */
} d5_overhead;

/* Measures FrameworkOverhead in interleaved rounds: after p->warmup rounds
 * that are discarded, each round runs the whole inference once, then every
 * scheduled node alone once (d5_executor_run_node, on the same buffers), each
 * timed on the monotonic clock. Round k gives graph_k, node_i_k, their sum
 * sum_k, and the paired ratio r_k = graph_k / sum_k - 1. Drift of the machine
 * (clock frequency, a competing process) then touches both sides of a ratio
 * alike, where separate measurements of the graph and of each node would
 * each see a different machine.
 *
 * The overhead is the median of r_k with the median's confidence interval at
 * p->level (order statistics, d5_stats_compute_level). Rounds go on, as in
 * d5_measure_run, from p->min_reps until that interval's half-width is at most
 * max(p->rel_ci, D5_OVERHEAD_TARGET_MIN) in absolute overhead units (rel_ci
 * 0.02: within +-2 points of the sum of nodes), or until p->max_reps rounds or
 * p->max_time_s seconds of rounds. The target is absolute, not relative to the
 * median, because the overhead may be near zero, where a relative width has
 * no meaning; finer than 0.01 is not asked for, since per-node clock reads and
 * calls already cost about that much on small graphs. The time budget covers
 * all rounds, graph and nodes together.
 *
 * `graph` and `node[i]` are the usual measurements of their own samples (each
 * elapsed_s the sum of its samples); sum_median, sum_lo and sum_hi add up the
 * nodes' medians and CI bounds. `flag` is d5_overhead_classify of the result.
 *
 * `out` is zeroed first and again on error, so d5_overhead_free on it is
 * always safe. D5_ERR_INVALID for bad parameters or an executor that runs no
 * node (everything folded at create); D5_ERR_NUMERIC when the nodes of a round
 * took no measurable time; D5_ERR_NOMEM; any status of a failing run. */
D5_API D5_NODISCARD d5_status d5_overhead_measure(d5_executor *ex, const d5_measure_params *p,
                                                  d5_overhead *out);
D5_API void d5_overhead_free(d5_overhead *o);

/* The flag of a FrameworkOverhead result: its median, CI bounds, and whether
 * the rounds stopped because the CI reached its target (1) or because a budget
 * (time or max_reps) ran out first (0). In order:
 * - D5_OVERHEAD_IMPLAUSIBLE when the median is below
 *   D5_OVERHEAD_IMPLAUSIBLE_MEDIAN (-0.10) or the CI low bound below
 *   D5_OVERHEAD_IMPLAUSIBLE_LOW (-0.25). The whole graph runs the same
 *   operators on the same buffers as its nodes alone, plus scheduling; it can
 *   be a little faster, since the clock reads and calls around each node
 *   count against the nodes, but not by 10%: such a result says the timings
 *   are wrong (frequency changes within rounds, a competing process hitting
 *   the nodes), not that the graph is fast. It takes precedence: an interval
 *   reaching that low contradicts itself, however wide.
 * - D5_OVERHEAD_UNSTABLE when the CI half-width, max(median - lo, hi - median),
 *   is above D5_OVERHEAD_UNSTABLE_HALFWIDTH (0.10), or when stopped_by_ci is 0:
 *   the requested precision was not reached, so the value is not a result.
 * - D5_OVERHEAD_OK otherwise.
 * NaN values are never OK. */
D5_API d5_overhead_flag d5_overhead_classify(double median, double lo, double hi,
                                             int32_t stopped_by_ci);
/* "ok", "unstable", "implausible"; "unknown" for any other value. */
D5_API const char *d5_overhead_flag_name(int flag);

/* ---- Memory recorder (the profile of d5/memory.h) ----------------------------------- */

typedef struct d5_memory_recorder d5_memory_recorder;

/* A recorder for executor `ex` (borrowed: free the recorder before it): it
 * adds an event handler to `ex` that does nothing unless a recording is on,
 * and removes it when freed. `clock` (may be NULL) is the timer whose time
 * line the times are on (see d5_memory_track_params.clock); borrowed until
 * the recorder is freed. D5_ERR_INVALID for a NULL executor or out. */
D5_API D5_NODISCARD d5_status d5_memory_recorder_create(d5_executor *ex, const d5_timer *clock,
                                                        d5_memory_recorder **out);
D5_API void d5_memory_recorder_free(d5_memory_recorder *r);
/* Starts a recording named `name` (copied; NULL: ""): heap accounting with
 * its log, and the executor's next run watched node by node. One recording
 * covers one run (d5_executor_inference or _inference_and_backprop); further
 * runs before d5_memory_recorder_end count in `runs` and their heap events
 * for the "outside nodes" row. D5_ERR_STATE when this recorder records
 * already or heap accounting is on elsewhere. */
D5_API D5_NODISCARD d5_status d5_memory_recorder_begin(d5_memory_recorder *r, const char *name);
/* Attributes what follows, until the next section or the end, to the
 * section row (phase, name): the trainer marks its optimizer update this way.
 * name NULL returns to "outside nodes". Call it outside executor runs.
 * D5_ERR_STATE when not recording. */
D5_API D5_NODISCARD d5_status d5_memory_recorder_section(d5_memory_recorder *r, int32_t phase,
                                                         const char *name);
/* Ends the recording and fills *out (zeroed first; free it with
 * d5_memory_profile_free). D5_ERR_STATE when not recording; D5_ERR_NOMEM. */
D5_API D5_NODISCARD d5_status d5_memory_recorder_end(d5_memory_recorder *r, d5_memory_profile *out);

/* One run of `ex` recorded: d5_executor_inference, or with backprop
 * d5_executor_inference_and_backprop, between a recorder's begin and end.
 * The run uses the inputs fed so far. `clock` and `name` as above. The
 * executor keeps no handler afterwards. */
D5_API D5_NODISCARD d5_status d5_executor_record_memory(d5_executor *ex, int32_t backprop,
                                                        const d5_timer *clock, const char *name,
                                                        d5_memory_profile *out);

#ifdef __cplusplus
}
#endif
#endif
