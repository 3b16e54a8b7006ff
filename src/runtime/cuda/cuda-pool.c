/* What CUDA runtimes reuse across their lifetimes, process-wide: the
 * device's properties, lanes (a stream with its cuDNN handle and event),
 * pinned staging buffers, and stream-ordered device memory.
 *
 * A proxy or a short training compiles a runtime, runs a few passes and
 * frees it; measured on the H100 (cuda-train proxies), setting up and
 * tearing down cost several times the passes themselves.  Creating a cuDNN
 * handle and querying the device's properties take milliseconds each, and
 * cudaFree and cudaFreeHost wait for the whole device: with several
 * candidates on one GPU, every runtime that finished stalled the others'
 * streams.  So handles, streams and pinned buffers go back to a pool when
 * a runtime is freed, and device memory comes from CUDA's stream-ordered
 * allocator (cudaMallocAsync), whose frees wait for nothing (plain
 * cudaMalloc on a device without memory pools). */
#include "runtime/cuda/cuda-private.h"

/* Pinned buffers kept for reuse at most: beyond, they are freed. */
#define PINNED_KEEP 32

typedef struct {
  float *ptr;
  gsize bytes;
} Pinned;

static GMutex pool_lock;
static GPtrArray *lanes;  /* CuLane *, idle */
static GArray *pinned;    /* Pinned, idle */
static gboolean async_alloc; /* the device has memory pools (cudaMallocAsync) */

gboolean
sieve__cuda_device_info(SieveCudaDevice *out, GError **error)
{
  static gsize once;
  static SieveCudaDevice info;
  static cudaError_t failed;
  if (g_once_init_enter(&once)) {
    struct cudaDeviceProp prop;
    failed = cudaSetDevice(0);
    if (failed == cudaSuccess)
      failed = cudaGetDeviceProperties(&prop, 0);
    if (failed == cudaSuccess) {
      g_strlcpy(info.name, prop.name, sizeof info.name);
      info.multiprocessors = prop.multiProcessorCount;
      /* Memory freed into the default pool stays there for the next
       * runtime instead of going back to the driver at every sync, up to a
       * quarter of the GPU (what several small candidates at once use);
       * what it holds idle counts as free (sieve__cuda_free_bytes). */
      int pools = 0;
      cudaMemPool_t mem;
      guint64 keep = prop.totalGlobalMem / 4;
      async_alloc = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0) == cudaSuccess && pools &&
                    cudaDeviceGetDefaultMemPool(&mem, 0) == cudaSuccess &&
                    cudaMemPoolSetAttribute(mem, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess;
    }
    (void)cudaGetLastError();
    g_once_init_leave(&once, 1);
  }
  if (failed != cudaSuccess) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "setting up the GPU: %s", cudaGetErrorString(failed));
    return FALSE;
  }
  /* Each thread that compiles a runtime must be on device 0. */
  CU_TRY(cudaSetDevice(0), "setting up the GPU");
  *out = info;
  return TRUE;
}

gboolean
sieve__cuda_lane_take(CuLane **out, GError **error)
{
  g_mutex_lock(&pool_lock);
  CuLane *lane = lanes && lanes->len ? g_ptr_array_steal_index_fast(lanes, lanes->len - 1) : NULL;
  g_mutex_unlock(&pool_lock);
  if (lane == NULL) {
    lane = g_new0(CuLane, 1);
    cudaError_t e = cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess)
      e = cudaEventCreateWithFlags(&lane->staged, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "setting up the GPU: %s", cudaGetErrorString(e));
      sieve__cuda_lane_free(lane);
      return FALSE;
    }
    cudnnStatus_t st = cudnnCreate(&lane->cudnn);
    if (st != CUDNN_STATUS_SUCCESS)
      lane->cudnn = NULL;
    else
      st = cudnnSetStream(lane->cudnn, lane->stream);
    if (st != CUDNN_STATUS_SUCCESS) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "starting cuDNN: %s", cudnnGetErrorString(st));
      sieve__cuda_lane_free(lane);
      return FALSE;
    }
  }
  *out = lane;
  return TRUE;
}

void
sieve__cuda_lane_free(CuLane *lane)
{
  if (lane == NULL)
    return;
  if (lane->cudnn)
    cudnnDestroy(lane->cudnn);
  if (lane->staged)
    cudaEventDestroy(lane->staged);
  if (lane->stream)
    cudaStreamDestroy(lane->stream);
  g_free(lane);
}

gboolean
sieve__cuda_lane_give(CuLane *lane)
{
  if (lane == NULL)
    return TRUE;
  /* Idle before anyone else may queue work on it; a lane whose stream
   * failed is not handed on. */
  if (cudaStreamSynchronize(lane->stream) != cudaSuccess) {
    (void)cudaGetLastError();
    sieve__cuda_lane_free(lane);
    return FALSE;
  }
  g_mutex_lock(&pool_lock);
  if (lanes == NULL)
    lanes = g_ptr_array_new();
  g_ptr_array_add(lanes, lane);
  g_mutex_unlock(&pool_lock);
  return TRUE;
}

float *
sieve__cuda_pinned_take(gsize bytes, gsize *got)
{
  g_mutex_lock(&pool_lock);
  gint best = -1;
  for (guint k = 0; pinned && k < pinned->len; k++) {
    Pinned *p = &g_array_index(pinned, Pinned, k);
    /* Large enough, and not so large that a small runtime holds a big one. */
    if (p->bytes >= bytes && p->bytes <= MAX(4 * bytes, 1u << 20) &&
        (best < 0 || p->bytes < g_array_index(pinned, Pinned, best).bytes))
      best = (gint)k;
  }
  float *ptr = NULL;
  if (best >= 0) {
    ptr = g_array_index(pinned, Pinned, best).ptr;
    *got = g_array_index(pinned, Pinned, best).bytes;
    g_array_remove_index_fast(pinned, (guint)best);
  }
  g_mutex_unlock(&pool_lock);
  if (ptr)
    return ptr;
  if (cudaMallocHost((void **)&ptr, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return NULL;
  }
  *got = bytes;
  return ptr;
}

void
sieve__cuda_pinned_give(float *ptr, gsize bytes)
{
  if (ptr == NULL)
    return;
  g_mutex_lock(&pool_lock);
  if (pinned == NULL)
    pinned = g_array_new(FALSE, FALSE, sizeof(Pinned));
  gboolean kept = pinned->len < PINNED_KEEP;
  if (kept)
    g_array_append_val(pinned, ((Pinned){ptr, bytes}));
  g_mutex_unlock(&pool_lock);
  if (!kept)
    cudaFreeHost(ptr);
}

/* Gives the driver back what the default pool holds idle. */
void
sieve__cuda_pool_trim(void)
{
  cudaMemPool_t mem;
  if (async_alloc && (cudaDeviceGetDefaultMemPool(&mem, 0) != cudaSuccess || cudaMemPoolTrimTo(mem, 0) != cudaSuccess))
    (void)cudaGetLastError();
}

gsize
sieve__cuda_free_bytes(void)
{
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return G_MAXSIZE; /* unknown: let the allocation say */
  }
  cudaMemPool_t mem;
  guint64 reserved = 0, used = 0;
  if (async_alloc && cudaDeviceGetDefaultMemPool(&mem, 0) == cudaSuccess &&
      cudaMemPoolGetAttribute(mem, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
      cudaMemPoolGetAttribute(mem, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess && reserved > used)
    free_b += reserved - used;
  (void)cudaGetLastError();
  return free_b;
}

gboolean
sieve__cuda_alloc(CuLane *lane, gsize bytes, void **out)
{
  *out = NULL;
  if (!async_alloc) {
    if (cudaMalloc(out, MAX(bytes, 256)) == cudaSuccess)
      return TRUE;
    (void)cudaGetLastError();
    *out = NULL;
    return FALSE;
  }
  if (cudaMallocAsync(out, MAX(bytes, 256), lane->stream) == cudaSuccess)
    return TRUE;
  (void)cudaGetLastError();
  /* The pool may hold memory that runtimes freed: hand what is idle back
   * to the driver once and try again before calling it out of memory (not
   * after a device-wide sync, which would break another thread's capture). */
  cudaMemPool_t mem;
  if (cudaDeviceGetDefaultMemPool(&mem, 0) == cudaSuccess && cudaStreamSynchronize(lane->stream) == cudaSuccess &&
      cudaMemPoolTrimTo(mem, 0) == cudaSuccess && cudaMallocAsync(out, MAX(bytes, 256), lane->stream) == cudaSuccess)
    return TRUE;
  (void)cudaGetLastError();
  *out = NULL;
  return FALSE;
}

void
sieve__cuda_release(CuLane *lane, void *ptr)
{
  if (ptr && (async_alloc ? cudaFreeAsync(ptr, lane->stream) : cudaFree(ptr)) != cudaSuccess)
    (void)cudaGetLastError();
}
