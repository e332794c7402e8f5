/* d5 level 0: the operator ABI.
 *
 * An operator is a versioned table of C functions (d5_op_desc). Built-in
 * operators (backends ref, blas, dnnl, cuda) and custom operators loaded from
 * shared objects use the same table, so the validator, the benchmark runner
 * and the executor treat them alike. Shapes and dtypes cross the ABI as
 * d5_tensor_desc; attributes as d5_attrs.
 *
 * Life of an operator instance: create(inputs, attributes) checks its inputs,
 * infers the output descriptors and builds any state (a oneDNN primitive,
 * workspace); forward and backward then run on tensors of exactly those
 * descriptors, any number of times; destroy frees the state. At create, an
 * input whose values are already known (a constant or an initializer: the
 * shape of a Reshape, the pads of a Pad) comes with its data; the others have
 * data NULL. Operators whose output shape depends on an input's values require
 * that input to be known at create.
 */
#ifndef D5_OPERATOR_H
#define D5_OPERATOR_H

#include "d5/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change to the structs and functions below. The
 * loader refuses an operator built against another version, with a status
 * that says how to rebuild it. Version 2 passes create, forward and backward
 * one struct (d5_op_create_args, d5_op_call) in place of version 1's separate
 * arguments; docs/level0.md says what a library author changes. */
#define D5_OP_ABI_VERSION 2u

/* ---- Attributes ---------------------------------------------------------------- */

typedef enum d5_attr_type {
    D5_ATTR_INT = 1,
    D5_ATTR_FLOAT = 2,
    D5_ATTR_STRING = 3,
    D5_ATTR_INTS = 4,
    D5_ATTR_FLOATS = 5,
    D5_ATTR_TENSOR = 6
} d5_attr_type;

typedef struct d5_attr {
    const char *name;
    int32_t type; /* a d5_attr_type */
    int32_t reserved;
    int64_t i;            /* INT */
    double f;             /* FLOAT */
    const char *s;        /* STRING; ONNX's STRINGS arrive as one STRING, the strings
                             joined by commas, with `count` = their number (0 for a
                             STRING), and are written back as STRINGS */
    const int64_t *ints;  /* INTS: `count` values */
    const double *floats; /* FLOATS: `count` values */
    int64_t count;
    const d5_tensor *tensor; /* TENSOR (CPU memory) */
} d5_attr;

typedef struct d5_attrs {
    const d5_attr *items;
    int32_t count;
} d5_attrs;

/* Attribute the executor passes to an operator whose activations it keeps in
 * a backend's own blocked layout between two of that backend's operators
 * (layout propagation): an INT of D5_BLOCKED_* bits for the inputs X (slot 0)
 * and Z (slot 3) and the output Y. An operator that cannot take the layout
 * declines (D5_ERR_UNSUPPORTED) and the executor keeps ONNX's layout; only
 * operators with the flag D5_OP_BLOCKED_LAYOUT receive it (d5's dnnl Conv,
 * FusedConv, poolings and BatchNormalization). */
#define D5_ATTR_BLOCKED "__blocked"
/* D5_BLOCKED_BACKWARD tells that the executor will run the node's backward
 * too (training), for operators whose best layout depends on it. */
enum { D5_BLOCKED_X = 1, D5_BLOCKED_Y = 2, D5_BLOCKED_Z = 4, D5_BLOCKED_BACKWARD = 8 };

/* Looks an attribute up by name; NULL if absent (or `a` is NULL). */
D5_API const d5_attr *d5_attrs_find(const d5_attrs *a, const char *name);
/* Typed getters: `def` when absent, D5_ERR_INVALID when present with another type. */
D5_API D5_NODISCARD d5_status d5_attrs_int(const d5_attrs *a, const char *name, int64_t def,
                                           int64_t *out);
D5_API D5_NODISCARD d5_status d5_attrs_float(const d5_attrs *a, const char *name, double def,
                                             double *out);
D5_API D5_NODISCARD d5_status d5_attrs_string(const d5_attrs *a, const char *name, const char *def,
                                              const char **out);
/* INTS: *values and *count are NULL and 0 when absent. */
D5_API D5_NODISCARD d5_status d5_attrs_ints(const d5_attrs *a, const char *name,
                                            const int64_t **values, int64_t *count);

/* ---- The operator table ------------------------------------------------------------ */

enum {
    D5_OP_HAS_BACKWARD = 1u << 0, /* backward is implemented */
    D5_OP_CUDA = 1u << 1,         /* runs on its backend's device memory (d5_device_memory) */
    D5_OP_F64 = 1u << 2,          /* accepts float64 as well as float32 */
    /* Input 3 (FusedConv's Z) may share output 0's memory when both are in
     * the same layout: the executor then writes Y over a Z nobody reads
     * later, and the operator skips copying Z into Y. */
    D5_OP_Z_IN_PLACE = 1u << 3,
    /* backward may be called with the gradient of an input of output 0's
     * descriptor in output 0's gradient memory (call->grad_inputs[k].data ==
     * call->grad_outputs[0].data):
     * an element-wise operator whose gradient is dY itself (Add) */
    D5_OP_GRAD_IN_PLACE = 1u << 4,
    /* create takes D5_ATTR_BLOCKED: the executor may keep X (slot 0), Z (slot
     * 3) and Y in the backend's own blocked layout between this operator and
     * others of the same backend with this flag (layout propagation) */
    D5_OP_BLOCKED_LAYOUT = 1u << 5,
    /* the state (create's *state) begins with a d5_op_impl (d5/precision.h)
     * that says what the instance runs: d5_op_impl_get copies it */
    D5_OP_REPORTS_IMPL = 1u << 6
};

/* What create receives. d5 builds it; it lives for the call only. */
typedef struct d5_op_create_args {
    /* The inputs, `ninputs` of them. inputs[i].desc is always set; an input
     * whose dtype is D5_DTYPE_INVALID is an omitted optional input.
     * inputs[i].data is set only for inputs known at create (constants,
     * initializers) and must not be kept after create returns. */
    const d5_tensor *inputs;
    int32_t ninputs;
    /* The output descriptors create fills (shape inference), `noutputs` of
     * them: the number of outputs the instance has, between the table's
     * min_outputs and max_outputs. */
    d5_tensor_desc *outputs;
    int32_t noutputs;
    const d5_attrs *attrs; /* the node's attributes; NULL when it has none */
} d5_op_create_args;

/* What forward and backward receive. d5 builds it; it lives for the call
 * only, and every tensor has exactly the descriptor create saw or inferred.
 * All memory is the caller's (host memory, or the backend's device memory
 * for tables flagged D5_OP_CUDA). */
typedef struct d5_op_call {
    /* The inputs, `ninputs` of them (read only). An omitted optional input
     * has dtype D5_DTYPE_INVALID and data NULL. */
    const d5_tensor *inputs;
    int32_t ninputs;
    /* The outputs, `noutputs` of them. forward writes them; backward gets
     * the outputs of the forward call, which it must not write (the
     * pointer is not const only so that one struct serves both calls). */
    d5_tensor *outputs;
    int32_t noutputs;
    /* backward only (NULL in forward): the gradients of the loss with
     * respect to the outputs, `noutputs` of them. An entry whose data is
     * NULL has no gradient: read it as zeros. */
    const d5_tensor *grad_outputs;
    /* backward only (NULL in forward): the gradients with respect to the
     * inputs that backward writes, `ninputs` of them. An entry whose data is
     * NULL is not wanted. */
    d5_tensor *grad_inputs;
} d5_op_call;

/* An operator. Define it with designated initialisers, so that it reads by
 * field name:
 *   const d5_op_desc relu = {.abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_HAS_BACKWARD,
 *                            .name = "Relu", .backend = "custom", .min_inputs = 1,
 *                            .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
 *                            .create = relu_create, .forward = relu_forward,
 *                            .backward = relu_backward};
 * An operator reads from the structs only what it needs: one that takes a
 * fixed number of inputs does not read ninputs. */
typedef struct d5_op_desc {
    uint32_t abi_version; /* D5_OP_ABI_VERSION */
    uint32_t flags;
    const char *name;    /* the ONNX operator it implements, "Conv"; or a custom name */
    const char *backend; /* "ref", "blas", "dnnl", "cuda", or a custom label */
    int32_t min_inputs, max_inputs, min_outputs, max_outputs;

    /* Checks the inputs and attributes, fills args->outputs (shape
     * inference) and creates the state, which *state receives (it may stay
     * NULL). */
    d5_status (*create)(const d5_op_create_args *args, void **state);
    /* Computes call->outputs from call->inputs (grad_outputs and
     * grad_inputs are NULL). */
    d5_status (*forward)(void *state, const d5_op_call *call);
    /* Given call->grad_outputs, the gradients of a loss with respect to the
     * outputs, and the inputs and outputs of the forward call, writes
     * call->grad_inputs, the gradients with respect to the inputs. NULL when
     * the operator is not differentiable. */
    d5_status (*backward)(void *state, const d5_op_call *call);
    void (*destroy)(void *state); /* frees the state; NULL: nothing to free */
    /* Work of one forward call: floating-point operations and bytes moved.
     * NULL: d5 counts 0 FLOPs and the bytes of inputs and outputs. */
    void (*cost)(void *state, double *flops, double *bytes);
} d5_op_desc;

/* A custom operator library exports this one symbol; D5_OPERATOR_EXPORT(desc)
 * writes it (C and C++). One library may export several operators. */
typedef const d5_op_desc *const *(*d5_op_entry_fn)(int32_t *count, uint32_t *abi_version);
#define D5_OP_ENTRY_SYMBOL "d5_operator_entry"
#ifdef __cplusplus
#define D5__EXTERN_C extern "C"
#else
#define D5__EXTERN_C
#endif
#define D5_OPERATOR_EXPORT(...)                                                                    \
    D5__EXTERN_C __attribute__((visibility("default"))) const d5_op_desc *const *                  \
    d5_operator_entry(int32_t *count, uint32_t *abi_version)                                       \
    {                                                                                              \
        static const d5_op_desc *const ops[] = {__VA_ARGS__};                                      \
        *count = (int32_t)(sizeof ops / sizeof ops[0]);                                            \
        *abi_version = D5_OP_ABI_VERSION;                                                          \
        return ops;                                                                                \
    }

/* ---- The registry of built-in operators --------------------------------------------- */

/* Number of built-in (operator, backend) pairs, and one of them. */
D5_API size_t d5_op_count(void);
D5_API const d5_op_desc *d5_op_at(size_t i);
/* Finds a built-in operator. D5_ERR_UNSUPPORTED names the operator and
 * backend asked for and lists the backends that have it (or says that no
 * backend has it). Backends reported unavailable at run time (cuda without a
 * device) return D5_ERR_NODEVICE. */
D5_API D5_NODISCARD d5_status d5_op_find(const char *name, const char *backend,
                                         const d5_op_desc **out);
/* The default test cases of built-in operator `name` (the D5_OP_CASE rows
 * beside its registration): writes up to `max` of their specs to `specs`
 * (static strings) and returns how many there are (0: the operator has none,
 * or no such operator). A spec is a case of `d5 test-operator --sizes`:
 * "f32[2,8,16,16] | kernel_shape=[3,3]" (grammar: docs/level0.md). */
D5_API size_t d5_op_cases(const char *name, const char **specs, size_t max);
/* ---- The registry of backends ----------------------------------------------------------- */

/* Every backend is one row of level0_operators/backends.def: its name, a
 * probe that says whether it can run here, the data types it accepts and a
 * description. Its operators are the rows of the operator registry (d5_op_at)
 * whose backend field is its name. The functions below are thread safe and
 * keep no state: each call that reports availability probes afresh (the cuda
 * probe asks the CUDA runtime for its devices). */

typedef struct d5_backend_info {
    const char *name;         /* "dnnl" (static storage, like the two below) */
    const char *description;  /* one line */
    const char *dtypes;       /* element types its operators accept: "float32,float64" */
    int32_t available;        /* 1 when it can run here */
    int32_t operators;        /* its built-in operators in this build of d5 */
    int32_t device_operators; /* of those, operators on device memory (D5_OP_CUDA) */
    char reason[256];         /* why it cannot run here; "" when available */
} d5_backend_info;

/* A backend and the number of nodes it runs (d5_executor_backend_nodes,
 * training results). */
typedef struct d5_backend_nodes {
    char backend[32]; /* a backend name, or a custom operator's label (truncated) */
    int32_t nodes;
} d5_backend_nodes;

/* Number of backends (built or not), and backend i of them, in the table's
 * order (ref, blas, dnnl, cuda). D5_ERR_RANGE for i >= d5_backend_count(). */
D5_API size_t d5_backend_count(void);
D5_API D5_NODISCARD d5_status d5_backend_at(size_t i, d5_backend_info *out);
/* The name of backend i without probing it (static storage); NULL for i >=
 * d5_backend_count(). */
D5_API const char *d5_backend_name(size_t i);
/* The backend named `name`, available or not. D5_ERR_UNSUPPORTED for a name
 * that is no backend: the detail names it and lists the backends and those
 * available here. */
D5_API D5_NODISCARD d5_status d5_backend_find(const char *name, d5_backend_info *out);
/* The executor's default preference list, "dnnl,blas,ref" (static storage).
 * The executor skips the backends of the default that cannot run here (dnnl in
 * a build without oneDNN); a list given explicitly must hold only available
 * backends. */
D5_API const char *d5_backend_default_list(void);
/* Checks a comma-separated list of backend names, as users give it ("dnnl,ref"):
 * D5_OK when every item is a backend available here, named once. "auto" (alone)
 * is accepted when allow_auto is nonzero. Errors, whose detail names the item
 * and lists the backends and those available here:
 * - D5_ERR_UNSUPPORTED: an item is no backend ("unknown backend 'dnn' ...");
 * - D5_ERR_NODEVICE: a backend that cannot run here, with the probe's reason
 *   ("backend 'cuda' is unavailable here: no CUDA device: ...");
 * - D5_ERR_INVALID: a NULL or empty list, an empty item ("ref,,blas", "ref,"),
 *   a name given twice, or "auto" where it is not allowed or not alone. */
D5_API D5_NODISCARD d5_status d5_backend_check_list(const char *list, int32_t allow_auto);
/* 1 when `backend` is a backend that can run here; otherwise 0, and `why` (may
 * be NULL) receives the reason: the probe's, or "unknown backend '...'" with
 * the list of backends. */
D5_API int d5_backend_available(const char *backend, char *why, size_t why_size);

/* The CPU backends' threads are set with d5_threads_set (d5/threads.h). */

/* ---- Device memory ------------------------------------------------------------------------ */

/* The memory of a backend whose operators run on a device (tables flagged
 * D5_OP_CUDA): the executor keeps the values such operators produce and read
 * in it, in one device arena, and copies values between host and device only
 * where a node on the host reads a device value or the reverse, at graph
 * inputs and at graph outputs. Pointers are the device's; the executor never
 * reads them. The copies are synchronous with respect to the operators'
 * queued work (cudaMemcpy's rule); `sync` waits for that work, so that a
 * host clock around an operator and `sync` measures the operator. */
typedef struct d5_device_memory {
    const char *name; /* the device's label in reports: "cuda" (static storage) */
    int32_t device;   /* the d5_device its tensors carry (D5_DEVICE_CUDA) */
    /* `bytes` (>= 1) of zeroed device memory, aligned for any element type. */
    d5_status (*alloc)(size_t bytes, void **ptr);
    void (*free)(void *ptr);                                          /* NULL is a no-op */
    d5_status (*to_device)(void *dst, const void *src, size_t bytes); /* host -> device */
    d5_status (*to_host)(void *dst, const void *src, size_t bytes);   /* device -> host */
    d5_status (*sync)(void);
    /* For backpropagation through device operators: dst[i] += src[i] and
     * dst[i] = value for n float32 elements of device memory, queued like
     * the operators' work. */
    d5_status (*add)(float *dst, const float *src, size_t n);
    d5_status (*fill)(float *dst, float value, size_t n);
} d5_device_memory;

/* The device memory of built-in backend `backend`: *out is NULL for a backend
 * on host memory (ref, blas, dnnl). For a device backend that cannot run here
 * (cuda without a device or without the plugin), D5_ERR_NODEVICE with the
 * reason; D5_ERR_UNSUPPORTED for a name that is no backend. */
D5_API D5_NODISCARD d5_status d5_backend_memory(const char *backend, const d5_device_memory **out);

/* A custom operator library whose operators run on device memory exports its
 * memory too, with D5_DEVICE_MEMORY_EXPORT(&table) beside D5_OPERATOR_EXPORT;
 * the executor asks d5_op_library_memory for it (NULL: host memory). */
typedef const d5_device_memory *(*d5_device_memory_fn)(uint32_t *abi_version);
#define D5_DEVICE_MEMORY_SYMBOL "d5_device_memory_entry"
#define D5_DEVICE_MEMORY_EXPORT(table)                                                             \
    D5__EXTERN_C __attribute__((visibility("default"))) const d5_device_memory *                   \
    d5_device_memory_entry(uint32_t *abi_version)                                                  \
    {                                                                                              \
        *abi_version = D5_OP_ABI_VERSION;                                                          \
        return (table);                                                                            \
    }

/* ---- Operator properties for the graph layers ------------------------------------------ */

typedef struct d5_op_meta {
    int32_t view;          /* output 0 is input 0's bytes under another shape */
    int32_t first_setting; /* input slots first..last are settings, not weights (-1: none) */
    int32_t last_setting;
} d5_op_meta;

/* The properties of an ONNX operator type from the one table
 * (level0_operators/meta.def); an operator without a row gets view 0 and no
 * settings. Never fails: `out` is always filled. */
D5_API void d5_op_meta_get(const char *op_type, d5_op_meta *out);

/* ---- Custom operators from shared objects ---------------------------------------------- */

typedef struct d5_op_library d5_op_library;
/* dlopen()s `path` and reads its operators. D5_ERR_IO when it cannot be
 * loaded (with dlerror's text), D5_ERR_NOTFOUND without the entry symbol,
 * D5_ERR_UNSUPPORTED for another ABI version (a library built against
 * version 1: the detail says to rebuild it against this d5's
 * include/d5/operator.h); nothing of such a library is run but its entry. */
D5_API D5_NODISCARD d5_status d5_op_library_open(const char *path, d5_op_library **out);
D5_API void d5_op_library_close(d5_op_library *lib);
D5_API int32_t d5_op_library_count(const d5_op_library *lib);
D5_API const d5_op_desc *d5_op_library_at(const d5_op_library *lib, int32_t i);
/* The library's device memory (D5_DEVICE_MEMORY_EXPORT), or NULL when its
 * operators run on host memory. */
D5_API const d5_device_memory *d5_op_library_memory(const d5_op_library *lib);
/* Finds an operator of the library by name. */
D5_API D5_NODISCARD d5_status d5_op_library_find(const d5_op_library *lib, const char *name,
                                                 const d5_op_desc **out);

/* ---- Operator instances: create once, run many times ---------------------------------- */

typedef struct d5_op d5_op;

/* Creates an instance with `noutputs` outputs (0: the operator's minimum). The
 * descriptor table must outlive the instance. inputs[i].desc is required;
 * inputs[i].data is given for inputs known now (constants), else NULL. Checks
 * counts against the table's limits and names the operator in every error. */
D5_API D5_NODISCARD d5_status d5_op_create(const d5_op_desc *desc, const d5_tensor *inputs,
                                           int32_t ninputs, const d5_attrs *attrs, int32_t noutputs,
                                           d5_op **out);
/* The same from descriptors alone (no input known at create). */
D5_API D5_NODISCARD d5_status d5_op_create_desc(const d5_op_desc *desc,
                                                const d5_tensor_desc *inputs, int32_t ninputs,
                                                const d5_attrs *attrs, int32_t noutputs,
                                                d5_op **out);
D5_API void d5_op_free(d5_op *op);
D5_API const d5_op_desc *d5_op_desc_of(const d5_op *op);
D5_API int32_t d5_op_ninputs(const d5_op *op);
D5_API int32_t d5_op_noutputs(const d5_op *op);
D5_API const d5_tensor_desc *d5_op_input_desc(const d5_op *op, int32_t i);
D5_API const d5_tensor_desc *d5_op_output_desc(const d5_op *op, int32_t i);
/* Runs forward; checks that every tensor matches its descriptor (D5_ERR_SHAPE). */
D5_API D5_NODISCARD d5_status d5_op_forward(d5_op *op, const d5_tensor *inputs, d5_tensor *outputs);
/* Runs backward; D5_ERR_UNSUPPORTED for an operator without one. */
D5_API D5_NODISCARD d5_status d5_op_backward(d5_op *op, const d5_tensor *grad_outputs,
                                             const d5_tensor *inputs, const d5_tensor *outputs,
                                             d5_tensor *grad_inputs);
/* FLOPs and bytes of one forward call. */
D5_API void d5_op_cost(const d5_op *op, double *flops, double *bytes);

#ifdef __cplusplus
}
#endif
#endif
