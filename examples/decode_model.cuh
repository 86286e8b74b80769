// examples/decode_model.cuh - the small model of examples/decode_step.cu and
// benchmark/decode_step.cu: 8 layers, hidden 256, 4 heads of 64, an MLP of 1024, a vocabulary
// of 512, and a paged KV cache (pages of 16 tokens, 8 pages per sequence). Its decode step,
// decode::forward(cap, batch, ...), is written once against what a piecewise capture offers
// (cap.stream(), cap.allocate<float>(n), cap.deallocate(p), cap.eager(island)): graphcap's
// piecewise scope runs it as 9 captured segments with 8 attention islands between them, and
// decode::static_step runs the same code eagerly (or, in the benchmark, captures it by hand) on
// static buffers. Every kernel computes each output in a fixed order (no atomics), so the same
// launches give bit-identical floats in a graph and eagerly.
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace decode {

constexpr int layers = 8;
constexpr int hidden = 256;
constexpr int heads = 4;
constexpr int head_dim = hidden / heads; // 64: one block of 64 threads per (sequence, head)
constexpr int qkv_width = 3 * hidden;
constexpr int mlp = 1024;
constexpr int vocab = 512;
constexpr int page = 16;     // tokens per KV page
constexpr int max_pages = 8; // pages per sequence: 128 tokens
constexpr std::size_t max_batch = 128;
constexpr int prompt = 40; // the sequence length before the first decode step
constexpr int linear_threads = 128;

/// The 19 batch-size buckets a serving engine captures: 1 to 8, then every 8 to 64, then every
/// 16 to 128.
inline std::vector<std::size_t> buckets() {
  return {1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128};
}

/// Aborts with the CUDA error's name if `status` is not cudaSuccess.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorName(status));
    std::exit(EXIT_FAILURE);
  }
}

/// What the attention islands get at every replay: this step's sequence length (sequence b of
/// the batch has length + b % 3 tokens, the new one included). A host value that changes every
/// step: the islands' kernels take it as an argument.
struct step_values {
  int length = prompt;
};

/// The model's weights (one allocation) and a KV cache with its page table.
struct model {
  const float* weights = nullptr;
  float* k_cache = nullptr; // [layers][max_batch * max_pages pages][page][hidden]
  float* v_cache = nullptr;
  const int* table = nullptr; // [max_batch][max_pages]: sequence b's pages
};

namespace kernels {

__device__ inline float hashed(std::uint32_t i, std::uint32_t seed) {
  std::uint32_t h = i * 2654435761U + seed * 0x9E3779B9U;
  h ^= h >> 15;
  h *= 0x85EBCA6BU;
  h ^= h >> 13;
  return static_cast<float>(h % 2001U) / 1000.0F - 1.0F; // in [-1, 1]
}

__global__ void fill(float* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    p[i] = hashed(static_cast<std::uint32_t>(i), seed) * scale;
  }
}

__global__ void fill_table(int* table) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  constexpr int pages = static_cast<int>(max_batch) * max_pages;
  if (i < pages) {
    table[i] = (i * 37) % pages; // a permutation: sequences' pages are scattered
  }
}

/// x[b] = the embedding of tokens[b].
__global__ void embed(const int* tokens, const float* table, float* x) {
  const int b = static_cast<int>(blockIdx.x);
  const int d = static_cast<int>(threadIdx.x);
  x[b * hidden + d] = table[(tokens[b] % vocab) * hidden + d];
}

/// out[b][o] = sum_i in[b][i] w[o][i] (+ out[b][o] with `residual`), then relu with `relu`.
__global__ void linear(const float* in, const float* w, float* out, int in_features,
                       int out_features, int relu, int residual) {
  const int b = static_cast<int>(blockIdx.y);
  const int o = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (o >= out_features) {
    return;
  }
  const float* a = in + static_cast<std::size_t>(b) * in_features;
  const float* row = w + static_cast<std::size_t>(o) * in_features;
  float sum = 0.0F;
  for (int i = 0; i < in_features; ++i) {
    sum = fmaf(a[i], row[i], sum);
  }
  float* target = out + static_cast<std::size_t>(b) * out_features + o;
  if (residual != 0) {
    sum += *target;
  }
  *target = relu != 0 ? fmaxf(sum, 0.0F) : sum;
}

/// One block per (sequence, head), one thread per dimension: appends the new token's K and V to
/// the paged cache, then attends over the sequence's `length + b % 3` tokens (online softmax).
__global__ void attention(const float* qkv, float* k_cache, float* v_cache, const int* table,
                          float* out, int length) {
  const int b = static_cast<int>(blockIdx.x);
  const int col = static_cast<int>(blockIdx.y) * head_dim + static_cast<int>(threadIdx.x);
  const int tokens = length + b % 3;
  const int* pages = table + b * max_pages;
  const float* row = qkv + static_cast<std::size_t>(b) * qkv_width;
  const auto slot = [&](int t) {
    return (static_cast<std::size_t>(pages[t / page]) * page + t % page) * hidden + col;
  };
  k_cache[slot(tokens - 1)] = row[hidden + col];
  v_cache[slot(tokens - 1)] = row[2 * hidden + col];
  const float q = row[col];
  __shared__ float partial[head_dim / 32];
  float m = -INFINITY;
  float l = 0.0F;
  float acc = 0.0F;
  for (int t = 0; t < tokens; ++t) {
    const std::size_t at = slot(t);
    float s = q * k_cache[at];
    for (int offset = 16; offset > 0; offset /= 2) {
      s += __shfl_xor_sync(0xFFFFFFFFU, s, offset);
    }
    if (threadIdx.x % 32 == 0) {
      partial[threadIdx.x / 32] = s;
    }
    __syncthreads();
    s = (partial[0] + partial[1]) * 0.125F; // 1 / sqrt(head_dim)
    __syncthreads();
    const float m_new = fmaxf(m, s);
    const float keep = expf(m - m_new);
    const float p = expf(s - m_new);
    l = l * keep + p;
    acc = acc * keep + p * v_cache[at];
    m = m_new;
  }
  out[static_cast<std::size_t>(b) * hidden + col] = acc / l;
}

} // namespace kernels

constexpr std::size_t layer_weights = std::size_t{qkv_width} * hidden +
                                      std::size_t{hidden} * hidden + std::size_t{mlp} * hidden +
                                      std::size_t{hidden} * mlp;
constexpr std::size_t weight_count =
    2 * std::size_t{vocab} * hidden + layers * layer_weights; // embedding, layers, head
constexpr std::size_t cache_count =
    std::size_t{layers} * max_batch * max_pages * page * hidden; // floats of K (and of V)

inline const float* embedding(const model& m) {
  return m.weights;
}
inline const float* qkv_weights(const model& m, int l) {
  return m.weights + std::size_t{vocab} * hidden + l * layer_weights;
}
inline const float* out_weights(const model& m, int l) {
  return qkv_weights(m, l) + std::size_t{qkv_width} * hidden;
}
inline const float* up_weights(const model& m, int l) {
  return out_weights(m, l) + std::size_t{hidden} * hidden;
}
inline const float* down_weights(const model& m, int l) {
  return up_weights(m, l) + std::size_t{mlp} * hidden;
}
inline const float* head_weights(const model& m) {
  return m.weights + std::size_t{vocab} * hidden + layers * layer_weights;
}
inline std::size_t cache_layer(int l) {
  return l * (cache_count / layers);
}

/// Weights, filled with the same values at every call (a hash of the index, scaled by the
/// fan-in): one cudaMalloc, freed by the caller.
inline float* make_weights(cudaStream_t stream) {
  float* weights = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&weights), weight_count * sizeof(float)), "cudaMalloc");
  kernels::fill<<<1024, 256, 0, stream>>>(weights, weight_count, 1U, 1.0F / 16.0F);
  check(cudaGetLastError(), "fill");
  return weights;
}

/// Fills the KV cache of `m` with the values make_model() gives it (the prompt's K and V): the
/// state before the first decode step, again.
inline void refill_cache(const model& m, cudaStream_t stream) {
  kernels::fill<<<4096, 256, 0, stream>>>(m.k_cache, cache_count, 2U, 1.0F);
  kernels::fill<<<4096, 256, 0, stream>>>(m.v_cache, cache_count, 3U, 1.0F);
  check(cudaGetLastError(), "fill");
}

/// A model over `weights` with a KV cache of its own (the prompt's K and V filled with the same
/// values at every call) and its page table. free_cache() frees what this allocates.
inline model make_model(const float* weights, cudaStream_t stream) {
  model m;
  m.weights = weights;
  float* k = nullptr;
  float* v = nullptr;
  int* table = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&k), cache_count * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&v), cache_count * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&table), max_batch * max_pages * sizeof(int)),
        "cudaMalloc");
  kernels::fill_table<<<(max_batch * max_pages + 255) / 256, 256, 0, stream>>>(table);
  m.k_cache = k;
  m.v_cache = v;
  m.table = table;
  refill_cache(m, stream);
  return m;
}

inline void free_cache(model& m) {
  check(cudaFree(m.k_cache), "cudaFree");
  check(cudaFree(m.v_cache), "cudaFree");
  check(cudaFree(const_cast<int*>(m.table)), "cudaFree");
  m = model{m.weights, nullptr, nullptr, nullptr};
}

inline void launch_linear(const float* in, const float* w, float* out, std::size_t batch,
                          int in_features, int out_features, bool relu, bool residual,
                          cudaStream_t stream) {
  const dim3 grid((out_features + linear_threads - 1) / linear_threads,
                  static_cast<unsigned>(batch));
  kernels::linear<<<grid, linear_threads, 0, stream>>>(in, w, out, in_features, out_features,
                                                       relu ? 1 : 0, residual ? 1 : 0);
}

/// The decode step of `batch` sequences, written the way a piecewise capture wants it: per
/// layer, the QKV projection in a segment, attention as an island (its kernel takes this step's
/// length from the replay's step_values), then the out projection and the MLP in the next
/// segment. The residual x, the QKV and the attention output cross islands: allocated before
/// the break, freed after it. `cap` offers stream(), allocate<float>(n), deallocate(p) and
/// eager(island): graphcap's piecewise scope, or decode::static_step.
template <class Capture>
void forward(Capture& cap, std::size_t batch, const model& m, const int* tokens, float* logits) {
  const cudaStream_t stream = cap.stream();
  float* x = cap.template allocate<float>(batch * hidden); // crosses every island
  kernels::embed<<<static_cast<unsigned>(batch), hidden, 0, stream>>>(tokens, embedding(m), x);
  for (int l = 0; l < layers; ++l) {
    float* qkv = cap.template allocate<float>(batch * qkv_width);
    float* attended = cap.template allocate<float>(batch * hidden);
    launch_linear(x, qkv_weights(m, l), qkv, batch, hidden, qkv_width, false, false, stream);
    float* k = m.k_cache + cache_layer(l);
    float* v = m.v_cache + cache_layer(l);
    const int* table = m.table;
    cap.eager([=](cudaStream_t s, step_values& now) { // attention, an island
      kernels::attention<<<dim3(static_cast<unsigned>(batch), heads), head_dim, 0, s>>>(
          qkv, k, v, table, attended, now.length);
    });
    cap.deallocate(qkv); // bridges, freed after the break
    launch_linear(attended, out_weights(m, l), x, batch, hidden, hidden, false, true, stream);
    cap.deallocate(attended);
    float* h = cap.template allocate<float>(batch * mlp); // within one segment
    launch_linear(x, up_weights(m, l), h, batch, hidden, mlp, true, false, stream);
    launch_linear(h, down_weights(m, l), x, batch, mlp, hidden, false, true, stream);
    cap.deallocate(h);
  }
  launch_linear(x, head_weights(m), logits, batch, hidden, vocab, false, false, stream);
  cap.deallocate(x);
}

/// The buffers of the step written without a pool, each sized for the largest batch: the
/// residual, and the QKV, attention output and MLP hidden that every layer reuses.
class static_buffers {
public:
  static_buffers() {
    for (std::size_t r = 0; r < roles; ++r) {
      check(cudaMalloc(reinterpret_cast<void**>(&buffers_[r]), capacity(r) * sizeof(float)),
            "cudaMalloc");
    }
  }
  static_buffers(const static_buffers&) = delete;
  static_buffers& operator=(const static_buffers&) = delete;
  ~static_buffers() {
    for (float* buffer : buffers_) {
      static_cast<void>(cudaFree(buffer));
    }
  }
  /// Their bytes in all.
  [[nodiscard]] static std::size_t bytes() {
    std::size_t total = 0;
    for (std::size_t r = 0; r < roles; ++r) {
      total += capacity(r) * sizeof(float);
    }
    return total;
  }
  /// The buffer of the `k`-th allocation of forward(): x first, then qkv, attended, h per layer.
  [[nodiscard]] float* take(std::size_t k, std::size_t count) const {
    const std::size_t role = k == 0 ? 0 : 1 + (k - 1) % 3;
    if (count > capacity(role)) {
      std::fprintf(stderr,
                   "decode::static_buffers: allocation %zu of %zu floats is larger than its "
                   "buffer\n",
                   k, count);
      std::exit(EXIT_FAILURE);
    }
    return buffers_[role];
  }

private:
  static constexpr std::size_t roles = 4;
  static constexpr std::size_t capacity(std::size_t role) {
    constexpr std::size_t widths[roles] = {hidden, qkv_width, hidden, mlp};
    return max_batch * widths[role];
  }
  float* buffers_[roles] = {};
};

/// forward()'s capture interface over static buffers, run eagerly: each island runs at once
/// with `now`. One object per step.
class static_step {
public:
  static_step(const static_buffers& buffers, cudaStream_t stream, step_values& now)
      : buffers_(&buffers), stream_(stream), now_(&now) {}
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  template <class T>
  [[nodiscard]] T* allocate(std::size_t count) {
    static_assert(sizeof(T) == sizeof(float), "decode::static_step holds floats");
    return buffers_->take(taken_++, count);
  }
  template <class T>
  void deallocate(T* /*pointer*/) const noexcept {}
  template <class Island>
  void eager(Island&& island) {
    island(stream_, *now_);
  }

private:
  const static_buffers* buffers_;
  cudaStream_t stream_;
  step_values* now_;
  std::size_t taken_ = 0;
};

/// The token ids of step `step` for the `max_batch` slots (the batch's first rows used).
inline std::vector<int> tokens_of(int step) {
  std::vector<int> tokens(max_batch);
  for (std::size_t b = 0; b < max_batch; ++b) {
    tokens[b] = static_cast<int>((static_cast<std::size_t>(step) * 131 + b * 17) % vocab);
  }
  return tokens;
}

/// The host's side of step `step`: its token ids uploaded into `buffer` (max_batch ints).
inline void upload_tokens(int* buffer, int step, cudaStream_t stream) {
  const std::vector<int> tokens = tokens_of(step);
  check(cudaMemcpyAsync(buffer, tokens.data(), tokens.size() * sizeof(int), cudaMemcpyHostToDevice,
                        stream),
        "cudaMemcpyAsync");
}

/// The first `batch` rows of `logits`, copied to the host once `stream` has computed them.
inline std::vector<float> read_logits(const float* logits, std::size_t batch, cudaStream_t stream) {
  std::vector<float> host(batch * vocab);
  check(cudaMemcpyAsync(host.data(), logits, host.size() * sizeof(float), cudaMemcpyDeviceToHost,
                        stream),
        "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return host;
}

/// The number of sequences in step `step` (1 to 128, varying from step to step).
inline std::size_t batch_of(int step) {
  return 1 + (static_cast<std::size_t>(step) * 37) % max_batch;
}

} // namespace decode
