/* The executor's representation, shared by executor.c, choose.c, plan.c,
 * backprop.c, events.c and overhead.c. */
#ifndef D5_EXECUTOR_INTERNAL_H
#define D5_EXECUTOR_INTERNAL_H

#include "network_internal.h"

/* Where a value's memory comes from. */
typedef enum xkind {
    XV_NONE = 0, /* not used by the schedule */
    XV_INPUT,    /* graph input: an owned buffer, fed by the user */
    XV_INIT,     /* initializer read in place (a parameter under backprop) */
    XV_CONST,    /* evaluated at create: owned */
    XV_ACT       /* written by a scheduled node: the arena */
} xkind;

typedef struct xval {
    d5_tensor_desc desc;
    int32_t known;
    int32_t kind;      /* xkind */
    int32_t trainable; /* a parameter (or input) whose gradient is computed */
    int32_t variable;  /* a parameter whose data may change between runs: never folded */
    void *data;        /* resolved memory */
    void *owned;       /* XV_INPUT, XV_CONST: freed with the executor */
    size_t bytes;
    int32_t buf;   /* index in the plan's buffers, -1 */
    int32_t alias; /* the value whose memory it shares (a view node's output), -1 */
    /* Backprop. */
    int32_t needs_grad;   /* depends on a trainable value */
    int32_t reaches_loss; /* the loss depends on it */
    int32_t has_grad;     /* a gradient buffer exists */
    int32_t grad_buf;     /* plan buffer of the gradient */
    int32_t grad_root;    /* the value whose gradient memory this one's shares, -1 */
    void *grad;
    int32_t blocked;   /* held in a backend's blocked layout (layout.c): not fetchable */
    int32_t mem;       /* memory: 0 host, else the device memory ex->devs[mem] (device.c) */
    int32_t host_copy; /* a graph output on a device: its copy on the host, else -1 */
    d5_tensor view;    /* d5_executor_fetch_value's item of a tensor */
} xval;

typedef struct xnode {
    int32_t net_index;
    const d5_op_desc *desc;
    d5_op *op;
    d5_attr *attrs; /* node attributes + the opset */
    d5_attrs attrs_view;
    int32_t nin, nout;
    int32_t *in, *out; /* value indices, -1 for omitted */
    d5_tensor *tin, *tout;
    double flops, bytes;
    int32_t alias; /* a view (Reshape, Flatten, ...): its output shares its input's memory */
    /* Backprop. */
    int32_t backward;
    d5_tensor *tgout, *tgin;
    int32_t *scratch; /* per input slot: plan buffer of a scratch gradient, -1 direct */
    /* Per input slot, a gradient computed in this node's memory for a value
     * of another (device.c): 0 none; 1 the scratch is copied into the
     * value's gradient (its first write); 2 copied into stage[k], a buffer in
     * the value's memory, then added. */
    int32_t *xfer, *stage;
    int32_t mem; /* the memory its operator runs on (device.c) */
} xnode;

/* A value copied into another memory (device.c). */
typedef struct xcopy {
    int32_t value;    /* the (root) value copied */
    int32_t from, to; /* memories */
    int32_t node;     /* the scheduled node it runs before; -1: after the forward pass */
    int32_t once;     /* a constant: copied at the first run, then kept */
    int32_t done;
    int32_t buf; /* plan buffer of the copy; -1: owned (a graph output's host copy) */
    void *data, *owned;
    size_t bytes;
} xcopy;

#define D5__MAX_DEVICES 4 /* device memories of one executor */

typedef struct xhandler {
    d5_event_fn fn;
    void *user;
} xhandler;

/* A sequence or optional graph input or output of a network whose control
 * flow lower.c resolved: the tensors of the network built that hold its
 * items, "<name>[k]" (an optional tensor's: "<name>"). */
typedef struct d5__lowered_value {
    char *name;
    int32_t type, present, dtype, count;
    char **names;
    d5_tensor *views; /* d5_executor_fetch_value's items */
} d5__lowered_value;

typedef struct d5__lowered {
    d5_network *net;                     /* tensors only */
    d5__lowered_value *inputs, *outputs; /* those that are not tensors */
    int32_t ninputs, noutputs;
} d5__lowered;

/* Resolves the control flow, sequences and optionals of net (lower.c), with
 * the bound inputs and values of opt. */
d5_status d5__lower(const d5_network *net, const d5_executor_options *opt, d5__lowered **out);
void d5__lowered_free(d5__lowered *l);
/* Feeds the sequence and optional graph inputs given at create
 * (executor_values.c). */
d5_status d5__executor_feed_given(d5_executor *ex);

struct d5_executor {
    const d5_network *net;
    d5__lowered *lowered; /* NULL, or what net (then lowered->net) was resolved from */
    d5_executor_options opt;
    char *backend_list, *node_backends;
    int32_t infer_only;
    xval *vals;
    int32_t nvals;
    xnode *nodes;
    int32_t nnodes;
    int32_t nfolded;
    size_t folded_bytes; /* what folding holds, at most FOLD_BUDGET (fold.c) */
    int32_t loss;
    /* Memory. */
    unsigned char *arena;
    size_t arena_bytes;
    struct xbuf *bufs;
    int32_t nbufs, buf_cap;
    void *zeros; /* gradient of outputs that do not reach the loss */
    d5_memory_plan plan;
    /* Device memory (device.c): memories 1..ndevs, their arenas, the copies
     * in schedule order (those after the forward pass last). */
    const d5_device_memory *devs[D5__MAX_DEVICES + 1];
    const char *dev_backends[D5__MAX_DEVICES + 1];
    void *dev_arena[D5__MAX_DEVICES + 1];
    void *dev_zeros[D5__MAX_DEVICES + 1]; /* backprop: gradients of outputs off the loss */
    int32_t ndevs;
    xcopy *copies;
    int32_t ncopies, copy_cap;
    /* Events. */
    xhandler *handlers;
    int32_t nhandlers;
    struct xtimer *timer;
};

/* A buffer of the plan: live from step first to step last (inclusive). */
typedef struct xbuf {
    size_t bytes;
    int32_t first, last;
    size_t offset;
    int32_t mem; /* the memory whose arena holds it (0: the host's) */
} xbuf;

/* Steps: forward node i runs at step i, its backward at 2 * nnodes - 1 - i;
 * D5__STEP_END is after every step. */
#define D5__STEP_END INT32_MAX

d5_status d5__plan_add(d5_executor *ex, size_t bytes, int32_t first, int32_t last, int32_t *index);
/* Places every buffer (sharing memory between buffers whose lives do not
 * overlap unless keep_values) and allocates the arena. */
d5_status d5__plan_place(d5_executor *ex);
void *d5__plan_ptr(const d5_executor *ex, int32_t buf);

/* Picks the backend of one node and creates its operator (choose.c). */
d5_status d5__choose(d5_executor *ex, const d5__node *node, const d5_tensor *in, int32_t nin,
                     const d5_attrs *attrs, int32_t need_backward, const d5_op_desc **desc,
                     d5_op **op);

/* D5_ERR_UNSUPPORTED naming the node and listing the supported operators. */
d5_status d5__unsupported(const d5__node *node);

/* Backprop analysis and buffers (backprop.c). */
d5_status d5__backprop_prepare(d5_executor *ex);
d5_status d5__backprop_run(d5_executor *ex);
/* Marks values the loss depends on, from the network's structure. */
d5_status d5__backprop_reach(d5_executor *ex, const int32_t *order);

/* Events (events.c). */
d5_status d5__emit(d5_executor *ex, int32_t event, int32_t phase, int32_t node);
/* The events of copy `copy` (device.c). */
d5_status d5__emit_copy(d5_executor *ex, int32_t event, int32_t copy);
void d5__timer_detach(d5_executor *ex);
/* Removes the handler added with (fn, user); nothing when there is none
 * (executor.c). */
void d5__executor_remove_handler(d5_executor *ex, d5_event_fn fn, void *user);

/* "node 'x' (Op): " + the current detail message. */
d5_status d5__node_error(const d5__node *node, d5_status s);

/* 1 when value v's data is known at create and fixed: a folded constant, or an
 * initializer that is not a variable parameter. */
int d5__executor_value_is_const(const d5_executor *ex, int32_t v);
/* Constant folding (fold.c): 1 when a node of the default domain may be
 * folded: all its inputs constant (all_const), or a Shape, which needs only
 * its input's descriptor. */
int d5__fold_candidate(const d5__node *node, int all_const);
/* Evaluates such a node with the ref backend; its outputs become constants.
 * *folded is 0 when they do not fit what is left of the folding budget: the
 * node is then scheduled like any other. */
d5_status d5__fold(d5_executor *ex, const d5__node *node, const d5_tensor *in,
                   const d5_attrs *attrs, int *folded);
/* Device memory (device.c). After find_views: the memory of every node and
 * value; an error for backprop through device operators. */
d5_status d5__device_assign(d5_executor *ex);
/* After the lifetimes: the copies between memories and their plan buffers. */
d5_status d5__device_copies(d5_executor *ex);
/* After bind: copies' data and the node tensors that read them. */
void d5__device_bind(d5_executor *ex);
/* Runs copy c (a constant's only once). */
d5_status d5__device_copy(d5_executor *ex, int32_t c);
/* Waits for device memory `mem`'s queued work (-1: every device's). */
d5_status d5__device_sync(d5_executor *ex, int32_t mem);
/* Backprop in device memory: after node n's backward, the gradient of input
 * slot k moved to its value's memory and added (xfer, stage); the loss's
 * gradient seeded with ones; the zeros of memory `mem`. */
d5_status d5__device_grad_in(d5_executor *ex, const xnode *n, int32_t k, void *scratch);
d5_status d5__device_seed(d5_executor *ex, int32_t v);
d5_status d5__device_zeros(d5_executor *ex, size_t bytes);
/* Value v's data changed on the host: its copies run again. */
void d5__device_invalidate(d5_executor *ex, int32_t v);
void d5__device_free(d5_executor *ex);

/* Layout propagation (layout.c): after backends are chosen, before the plan. */
d5_status d5__layout_propagate(d5_executor *ex);

#endif
