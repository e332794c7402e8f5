/* d5 level 1: ONNX files in and out.
 *
 * d5_onnx_load reads a ModelProto into a d5_network: graph inputs (symbolic
 * dimensions kept as dim_params), outputs, initializers (raw_data, little-
 * endian, or the typed field of the type: float_data, double_data,
 * int64_data, uint64_data for UINT32 and UINT64, int32_data for the other
 * integers, BOOL, and FLOAT16 and BFLOAT16 bit patterns; tensors in external
 * data files are read relative to the model's folder and may not leave it),
 * every data type d5 has (d5_dtype), nodes with attributes of the types
 * INT, FLOAT, STRING, INTS, FLOATS and TENSOR, opset imports. IR versions below
 * 4, where initializers are also listed as graph inputs, are accepted (the
 * initializer stands). d5_onnx_save writes a network back. TensorProto files
 * (.pb: the test data of ONNX's backend tests, saved inputs and outputs) are
 * read and written by d5_onnx_tensor_read/_write.
 *
 * What d5 cannot represent is D5_ERR_UNSUPPORTED naming the tensor, value,
 * node or attribute: data types other than d5's (STRING, COMPLEX64/128, the
 * FLOAT8 types, UINT4, INT4, FLOAT4E2M1), more than D5_MAX_DIMS dimensions,
 * maps and sparse tensors, sequences of sequences, tensor graph inputs of unknown rank, GRAPHS,
 * TENSORS, SPARSE_TENSOR(S) and TYPE_PROTOS attributes, sparse initializers, model-local functions,
 * and a node output omitted ("") before a present one. Omitted outputs at the end of a node's
 * list are dropped. GRAPH attributes (If's branches, Loop's, Scan's and SequenceMap's bodies)
 * become the node's subgraphs (d5_network_attach_graph); sequence and optional graph inputs and
 * outputs keep their type (d5_type); a TYPE_PROTO attribute (Optional's type) becomes a STRING,
 * "tensor float32" or "sequence float32".
 *
 * Errors are precise and the functions never crash on bad files: every
 * message starts with the file (or `what`). A truncated or corrupt protobuf,
 * or one nested deeper than 64 messages, is D5_ERR_FORMAT; missing external
 * data is D5_ERR_IO naming the file looked for. Operators are not checked here
 * (the executor and d5_network_infer_shapes do that, naming the node). No
 * protobuf type appears in this header.
 */
#ifndef D5_ONNX_H
#define D5_ONNX_H

#include "d5/network.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest version of the default operator set (ai.onnx) whose operators d5
 * knows. A model importing a newer one, or a newer ai.onnx.preview.training
 * than 1, is refused with D5_ERR_UNSUPPORTED: its operators may mean what d5
 * does not compute. */
#define D5_ONNX_NEWEST_OPSET 28

/* Reads an ONNX model file. Free the network with d5_network_free. */
D5_API D5_NODISCARD d5_status d5_onnx_load(const char *path, d5_network **out);
/* Reads a model from memory; `base_dir` (may be NULL: no external data) is
 * where external data files are looked up; `what` names the source in errors. */
D5_API D5_NODISCARD d5_status d5_onnx_load_buffer(const void *data, size_t size,
                                                  const char *base_dir, const char *what,
                                                  d5_network **out);

/* Writes the network as an ONNX model (IR version 8, the network's opsets,
 * producer "d5"), atomically: the file appears whole or not at all. Nodes are
 * written in topological order, initializers as raw_data, graph inputs and
 * outputs with their descriptors (dim_params kept), and the known descriptors
 * of intermediate values as value_info. ONNX requires the type of every graph
 * output: run d5_network_infer_shapes first when some output's is not known,
 * or onnx.checker refuses the file. D5_ERR_UNSUPPORTED when the model would
 * exceed protobuf's 2 GiB. */
D5_API D5_NODISCARD d5_status d5_onnx_save(const d5_network *net, const char *path);
/* The same into a buffer from d5_alloc (*data; free with d5_free). */
D5_API D5_NODISCARD d5_status d5_onnx_save_buffer(const d5_network *net, void **data, size_t *size);

/* Reads a TensorProto file into t (t->data from d5_tensor_alloc: free with
 * d5_tensor_free); *name (may be NULL) receives the tensor's name from
 * d5_strdup (free with d5_free), "" when it has none. */
D5_API D5_NODISCARD d5_status d5_onnx_tensor_read(const char *path, d5_tensor *t, char **name);
/* Reads a value file of the given d5_type: a TensorProto (D5_TYPE_TENSOR,
 * one item), a SequenceProto (D5_TYPE_SEQUENCE) or an OptionalProto
 * (either optional type; the file says whether it holds a tensor or a
 * sequence, or nothing), as ONNX's test data holds the inputs and outputs of
 * graphs that take or give sequences and optionals. *v owns its items (free
 * with d5_value_free); *name (may be NULL) as d5_onnx_tensor_read. Sequences
 * of sequences, maps and sparse tensors are D5_ERR_UNSUPPORTED. */
D5_API D5_NODISCARD d5_status d5_onnx_value_read(const char *path, int32_t type, d5_value *v,
                                                 char **name);
/* Writes t (CPU) as a TensorProto with raw_data, atomically. name may be NULL. */
D5_API D5_NODISCARD d5_status d5_onnx_tensor_write(const char *path, const d5_tensor *t,
                                                   const char *name);

/* ---- Conformance: ONNX backend test folders ------------------------------------------- */

typedef enum d5_onnx_test_outcome {
    D5_ONNX_TEST_PASS = 0,
    D5_ONNX_TEST_FAIL = 1,
    D5_ONNX_TEST_SKIP = 2 /* an operator, attribute or type d5 does not support */
} d5_onnx_test_outcome;

typedef struct d5_onnx_test_params {
    const char *backend; /* executor preference list; NULL: the executor's default */
    double rtol, atol;   /* |got - want| <= atol + rtol * |want| (default 1e-3, 1e-7) */
    int32_t optimize;    /* a d5_optimize_level run before compiling (default all) */
} d5_onnx_test_params;

typedef struct d5_onnx_test_result {
    int32_t outcome;  /* a d5_onnx_test_outcome */
    int32_t datasets; /* data sets run */
    double max_abs_err, max_rel_err;
    char detail[1024]; /* FAIL: the worst element or the error; SKIP: the reason */
    /* The data types the test uses: bit (1u << d) for each d5_dtype d of the
     * model's graph inputs and outputs; 0 when the model did not load. */
    uint32_t dtypes;
} d5_onnx_test_result;

D5_API d5_onnx_test_params d5_onnx_test_default_params(void);
/* Runs one test folder (model.onnx + test_data_set_N/{input,output}_K.pb):
 * loads the model, feeds every data set, compares every output. Returns D5_OK
 * when the test ran, whatever its outcome (in `out`); D5_ERR_IO when `dir`
 * has no model.onnx; the statuses of d5_executor_check_backends when
 * p->backend is not a usable list (no test is skipped for it). Unsupported
 * operators or features are SKIP with the reason; any other error is FAIL.
 * Outputs of integer types and bool must match exactly; floating-point ones
 * (float16 and bfloat16 widened to double) within atol + rtol * |expected|.
 * A UINT16 tensor that feeds a BFLOAT16 graph input, or is expected of a
 * BFLOAT16 output, holds bfloat16 bit patterns (ONNX 1.12's test data stores
 * bfloat16 so). */
D5_API D5_NODISCARD d5_status d5_onnx_test_run(const char *dir, const d5_onnx_test_params *p,
                                               d5_onnx_test_result *out);

#ifdef __cplusplus
}
#endif
#endif
