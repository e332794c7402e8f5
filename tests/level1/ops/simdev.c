/* A device in host memory that the host cannot touch, for the executor's
 * device tests: a custom operator library whose operators (Relu, Add) run on
 * "simdev" memory, exported with D5_DEVICE_MEMORY_EXPORT. Its memory is pages
 * mapped PROT_NONE: only this library's copies and operators open them, for
 * the duration of one call, so a host operator handed a device pointer, or a
 * copy the executor forgot, crashes the test instead of passing by luck.
 * Every operator checks that each tensor lies in simdev memory and carries
 * its device tag. simdev_stats() counts the copies (the tests dlsym it). */
#define _GNU_SOURCE
#include "d5/operator.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_BLOCKS 64

typedef struct block {
    unsigned char *p;
    size_t bytes; /* mapped: a whole number of pages */
} block;

static block blocks[MAX_BLOCKS];
static int64_t uploads, downloads, upload_bytes, download_bytes, syncs;

__attribute__((visibility("default"))) void simdev_stats(int64_t out[5]);
void simdev_stats(int64_t out[5])
{
    out[0] = uploads;
    out[1] = downloads;
    out[2] = upload_bytes;
    out[3] = download_bytes;
    out[4] = syncs;
}

static void open_all(int prot)
{
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].p) mprotect(blocks[i].p, blocks[i].bytes, prot);
}

/* 1 when [p, p + bytes) lies inside one block. */
static int inside(const void *p, size_t bytes)
{
    const unsigned char *c = p;
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (blocks[i].p && c >= blocks[i].p && c + bytes <= blocks[i].p + blocks[i].bytes) return 1;
    return 0;
}

static d5_status sim_alloc(size_t bytes, void **ptr)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (bytes + page - 1) / page * page;
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (!blocks[i].p) {
            void *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) return d5_error(D5_ERR_NOMEM, "simdev: mmap of %zu bytes", n);
            blocks[i] = (block){p, n};
            *ptr = p;
            return D5_OK;
        }
    return d5_error(D5_ERR_NOMEM, "simdev: more than %d blocks", MAX_BLOCKS);
}

static void sim_free(void *ptr)
{
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (ptr && blocks[i].p == ptr) {
            munmap(blocks[i].p, blocks[i].bytes);
            blocks[i] = (block){NULL, 0};
        }
}

static d5_status sim_to_device(void *dst, const void *src, size_t bytes)
{
    if (!inside(dst, bytes) || inside(src, bytes))
        return d5_error(D5_ERR_INVALID, "simdev: upload from %p to %p is not host to device", src,
                        dst);
    open_all(PROT_READ | PROT_WRITE);
    memcpy(dst, src, bytes);
    open_all(PROT_NONE);
    uploads++;
    upload_bytes += (int64_t)bytes;
    return D5_OK;
}

static d5_status sim_to_host(void *dst, const void *src, size_t bytes)
{
    if (!inside(src, bytes) || inside(dst, bytes))
        return d5_error(D5_ERR_INVALID, "simdev: download from %p to %p is not device to host", src,
                        dst);
    open_all(PROT_READ | PROT_WRITE);
    memcpy(dst, src, bytes);
    open_all(PROT_NONE);
    downloads++;
    download_bytes += (int64_t)bytes;
    return D5_OK;
}

static d5_status sim_sync(void)
{
    syncs++;
    return D5_OK;
}

static d5_status sim_add(float *dst, const float *src, size_t n)
{
    if (!inside(dst, n * sizeof *dst) || !inside(src, n * sizeof *src))
        return d5_error(D5_ERR_INVALID, "simdev: add outside simdev memory");
    open_all(PROT_READ | PROT_WRITE);
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
    open_all(PROT_NONE);
    return D5_OK;
}

static d5_status sim_fill(float *dst, float value, size_t n)
{
    if (!inside(dst, n * sizeof *dst))
        return d5_error(D5_ERR_INVALID, "simdev: fill outside simdev memory");
    open_all(PROT_READ | PROT_WRITE);
    for (size_t i = 0; i < n; i++) dst[i] = value;
    open_all(PROT_NONE);
    return D5_OK;
}

static const d5_device_memory memory = {
    .name = "simdev",
    .device = D5_DEVICE_CUDA,
    .alloc = sim_alloc,
    .free = sim_free,
    .to_device = sim_to_device,
    .to_host = sim_to_host,
    .sync = sim_sync,
    .add = sim_add,
    .fill = sim_fill,
};

/* ---- Operators ---- */

static d5_status on_device(const d5_tensor *t, int32_t n, const char *what)
{
    for (int32_t i = 0; i < n; i++) {
        size_t bytes = 0;
        if (!t[i].data) continue;
        if (d5_tensor_desc_bytes(&t[i].desc, &bytes) != D5_OK || !inside(t[i].data, bytes) ||
            t[i].device != D5_DEVICE_CUDA)
            return d5_error(D5_ERR_INVALID, "simdev: %s %d is not in simdev memory", what, (int)i);
    }
    return D5_OK;
}

static d5_status same_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    for (int32_t i = 0; i < nin; i++)
        if (in[i].desc.dtype != D5_F32 || in[i].desc.ndim != in[0].desc.ndim ||
            memcmp(in[i].desc.shape, in[0].desc.shape, sizeof(int64_t) * (size_t)in[0].desc.ndim))
            return d5_error(D5_ERR_UNSUPPORTED, "simdev: float32 inputs of one shape only");
    out[0] = in[0].desc;
    return D5_OK;
}

static d5_status run(const d5_tensor *in, int32_t nin, d5_tensor *out, int add)
{
    d5_status s = on_device(in, nin, "input");
    if (s == D5_OK) s = on_device(out, 1, "output");
    if (s != D5_OK) return s;
    int64_t n = d5_tensor_desc_numel(&out[0].desc);
    open_all(PROT_READ | PROT_WRITE);
    const float *a = in[0].data, *b = add ? in[1].data : NULL;
    float *y = out[0].data;
    for (int64_t i = 0; i < n; i++) y[i] = add ? a[i] + b[i] : (a[i] > 0 ? a[i] : 0);
    open_all(PROT_NONE);
    return D5_OK;
}

static d5_status relu_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *out = call->outputs;
    (void)state;
    return run(in, nin, out, 0);
}

static d5_status add_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_tensor *out = call->outputs;
    (void)state;
    return run(in, nin, out, 1);
}

/* dX = dY where X > 0 (Relu); dA = dB = dY (Add). */
static d5_status backward(const d5_op_call *call, int add)
{
    const d5_tensor *gout = call->grad_outputs, *in = call->inputs, *out = call->outputs;
    d5_tensor *gin = call->grad_inputs;
    int32_t nin = call->ninputs;
    d5_status s = on_device(gout, 1, "output gradient");
    if (s == D5_OK) s = on_device(in, nin, "input");
    if (s == D5_OK) s = on_device(out, 1, "output");
    if (s == D5_OK) s = on_device(gin, nin, "input gradient");
    if (s != D5_OK) return s;
    int64_t n = d5_tensor_desc_numel(&out[0].desc);
    open_all(PROT_READ | PROT_WRITE);
    const float *dy = gout[0].data, *x = in[0].data;
    for (int32_t k = 0; k < nin; k++) {
        float *dx = gin[k].data;
        for (int64_t i = 0; dx && i < n; i++) dx[i] = add || x[i] > 0 ? dy[i] : 0.0f;
    }
    open_all(PROT_NONE);
    return D5_OK;
}

static d5_status relu_backward(void *state, const d5_op_call *call)
{
    (void)state;
    return backward(call, 0);
}

static d5_status add_backward(void *state, const d5_op_call *call)
{
    (void)state;
    return backward(call, 1);
}

/* clang-format off */
static const d5_op_desc relu = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_CUDA | D5_OP_HAS_BACKWARD, .name = "Relu",
    .backend = "simdev", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = same_create, .forward = relu_forward, .backward = relu_backward};
/* clang-format on */
/* clang-format off */
static const d5_op_desc add = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_CUDA | D5_OP_HAS_BACKWARD, .name = "Add",
    .backend = "simdev", .min_inputs = 2, .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
    .create = same_create, .forward = add_forward, .backward = add_backward};
/* clang-format on */

D5_OPERATOR_EXPORT(&relu, &add)
D5_DEVICE_MEMORY_EXPORT(&memory)
