// cg_solver: a conjugate-gradient solver (cuSPARSE SpMV, cuBLAS dot and axpy) captured once as a
// WHILE loop that iterates on the device until the residual meets the tolerance, checked against
// the same solver driven by a host loop that copies the convergence flag back every iteration.
//
// What makes cuBLAS and cuSPARSE work inside a conditional body (CUDA allows only kernel, memset,
// memcpy, empty, child-graph and conditional nodes there):
//  - every scalar stays on the device: cuBLAS in device pointer mode (dots write to device
//    memory, axpy reads alpha there), and a tiny kernel computes alpha, beta and the loop's
//    condition from them; cuSPARSE's SpMV takes host constants (1 and 0, captured by value);
//  - no library allocates inside the capture: cuBLAS gets its workspace (cublasSetWorkspace) and
//    SpMV its external buffer, both from the graph's pool, and the handles are made before
//    (without a workspace of its own, cuBLAS 12.2+ takes one with cudaMallocAsync in a capture:
//    a graph memory node, which a body may not hold);
//  - the handles are pointed at the body's stream inside the body (cublasSetStream resets the
//    workspace, so it is set again after), and back at the host loop's stream after the capture.
// A library that records an event or launches a host function inside the body ends the capture
// with a capture_error naming the node; this example prints it and what to try.
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cublas_v2.h>
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

namespace {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cg_solver: %s failed: %s\n", what, cublasGetStatusName(status));
    std::exit(EXIT_FAILURE);
  }
}

void check_cusparse(cusparseStatus_t status, const char* what) {
  if (status != CUSPARSE_STATUS_SUCCESS) {
    std::fprintf(stderr, "cg_solver: %s failed: %s\n", what, cusparseGetErrorString(status));
    std::exit(EXIT_FAILURE);
  }
}

constexpr int grid = 128;             // the 2-D Poisson problem's grid: grid x grid unknowns
constexpr int unknowns = grid * grid; // rows of the 5-point Laplacian
constexpr double tolerance = 1e-8;    // on ||r|| / ||b||
constexpr int max_iterations = 5000;  // a guard: CG needs a few hundred here
constexpr std::size_t cublas_workspace_bytes = 4 * 1024 * 1024;

/// The scalars of one solve, in device memory.
struct scalars {
  double rr;          // r.r of the current iterate
  double rr_new;      // r.r after the update
  double bb;          // b.b: the tolerance is relative to ||b||
  double pap;         // p.Ap
  double alpha;       // rr / pAp
  double minus_alpha; // -alpha, for r -= alpha Ap
  int iterations;
  int more; // what the host loop copies back: 1 while not converged
};

/// Before the loop: the convergence test of the initial residual (x = 0, r = p = b).
__global__ void start(scalars* s, graphcap::condition more) {
  s->bb = s->rr;
  s->iterations = 0;
  const bool go_on = s->rr > tolerance * tolerance * s->bb && s->bb > 0.0;
  s->more = go_on ? 1 : 0;
  if (more.handle() != 0) {
    more.set(go_on ? 1U : 0U);
  }
}

__global__ void step_length(scalars* s) {
  s->alpha = s->rr / s->pap;
  s->minus_alpha = -s->alpha;
}

/// After the update: beta, the next direction p = r + beta p, and the convergence test.
__global__ void next_direction(scalars* s, const double* r, double* p, int n,
                               graphcap::condition more) {
  const double beta = s->rr_new / s->rr;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = r[i] + beta * p[i];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const bool go_on =
        s->rr_new > tolerance * tolerance * s->bb && s->iterations + 1 < max_iterations;
    s->more = go_on ? 1 : 0;
    if (more.handle() != 0) {
      more.set(go_on ? 1U : 0U);
    }
  }
}

__global__ void finish_iteration(scalars* s) {
  s->rr = s->rr_new;
  ++s->iterations;
}

/// The 5-point Laplacian of a grid x grid mesh, in CSR (host).
struct csr_matrix {
  std::vector<int> offsets{0};
  std::vector<int> columns;
  std::vector<double> values;
};

csr_matrix laplacian() {
  csr_matrix a;
  for (int y = 0; y < grid; ++y) {
    for (int x = 0; x < grid; ++x) {
      const int row = y * grid + x;
      const auto add = [&](int column, double value) {
        a.columns.push_back(column);
        a.values.push_back(value);
      };
      if (y > 0) {
        add(row - grid, -1.0);
      }
      if (x > 0) {
        add(row - 1, -1.0);
      }
      add(row, 4.0);
      if (x + 1 < grid) {
        add(row + 1, -1.0);
      }
      if (y + 1 < grid) {
        add(row + grid, -1.0);
      }
      a.offsets.push_back(static_cast<int>(a.columns.size()));
    }
  }
  return a;
}

template <class T>
T* to_device(const std::vector<T>& host) {
  T* device = example::allocate<T>(host.size());
  example::check(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
                 "cudaMemcpy");
  return device;
}

/// One solve's state: where its vectors and scalars live, and the library objects over them.
struct solver {
  cublasHandle_t blas = nullptr;
  cusparseHandle_t sparse = nullptr;
  cusparseSpMatDescr_t a = nullptr;
  const double* b = nullptr;
  double* x = nullptr;
  double* r = nullptr;
  double* p = nullptr;
  double* ap = nullptr;
  scalars* s = nullptr;
  void* spmv_buffer = nullptr;
  void* blas_workspace = nullptr;
  cusparseDnVecDescr_t p_vector = nullptr;
  cusparseDnVecDescr_t ap_vector = nullptr;

  /// Points the libraries at `stream` (cublasSetStream first: it resets the workspace).
  void use_stream(cudaStream_t stream) const {
    check_cublas(cublasSetStream(blas, stream), "cublasSetStream");
    check_cublas(cublasSetWorkspace(blas, blas_workspace, cublas_workspace_bytes),
                 "cublasSetWorkspace");
    check_cusparse(cusparseSetStream(sparse, stream), "cusparseSetStream");
  }

  void describe_vectors() {
    check_cusparse(cusparseCreateDnVec(&p_vector, unknowns, p, CUDA_R_64F), "cusparseCreateDnVec");
    check_cusparse(cusparseCreateDnVec(&ap_vector, unknowns, ap, CUDA_R_64F),
                   "cusparseCreateDnVec");
  }

  void forget_vectors() {
    check_cusparse(cusparseDestroyDnVec(p_vector), "cusparseDestroyDnVec");
    check_cusparse(cusparseDestroyDnVec(ap_vector), "cusparseDestroyDnVec");
  }

  /// x = 0, r = p = b, rr = r.r, and the first convergence test.
  void begin(cudaStream_t stream, graphcap::condition more) const {
    const std::size_t bytes = unknowns * sizeof(double);
    example::check(cudaMemsetAsync(x, 0, bytes, stream), "cudaMemsetAsync");
    example::check(cudaMemcpyAsync(r, b, bytes, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync");
    example::check(cudaMemcpyAsync(p, b, bytes, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync");
    check_cublas(cublasDdot(blas, unknowns, r, 1, r, 1, &s->rr), "cublasDdot");
    start<<<1, 1, 0, stream>>>(s, more);
  }

  /// One CG iteration on `stream` (the libraries must use it: use_stream).
  void iterate(cudaStream_t stream, graphcap::condition more) const {
    const double one = 1.0;
    const double zero = 0.0;
    check_cusparse(cusparseSpMV(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, p_vector, &zero,
                                ap_vector, CUDA_R_64F, CUSPARSE_SPMV_CSR_ALG2, spmv_buffer),
                   "cusparseSpMV");
    check_cublas(cublasDdot(blas, unknowns, p, 1, ap, 1, &s->pap), "cublasDdot");
    step_length<<<1, 1, 0, stream>>>(s);
    check_cublas(cublasDaxpy(blas, unknowns, &s->alpha, p, 1, x, 1), "cublasDaxpy");
    check_cublas(cublasDaxpy(blas, unknowns, &s->minus_alpha, ap, 1, r, 1), "cublasDaxpy");
    check_cublas(cublasDdot(blas, unknowns, r, 1, r, 1, &s->rr_new), "cublasDdot");
    next_direction<<<(unknowns + 255) / 256, 256, 0, stream>>>(s, r, p, unknowns, more);
    finish_iteration<<<1, 1, 0, stream>>>(s);
  }
};

std::size_t spmv_buffer_bytes(const solver& sv) {
  const double one = 1.0;
  const double zero = 0.0;
  std::size_t bytes = 0;
  check_cusparse(cusparseSpMV_bufferSize(sv.sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, sv.a,
                                         sv.p_vector, &zero, sv.ap_vector, CUDA_R_64F,
                                         CUSPARSE_SPMV_CSR_ALG2, &bytes),
                 "cusparseSpMV_bufferSize");
  return std::max<std::size_t>(bytes, 1);
}

std::vector<double> to_host(const double* device) {
  std::vector<double> host(unknowns);
  example::check(cudaMemcpy(host.data(), device, unknowns * sizeof(double), cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
  return host;
}

/// ||b - A x|| / ||b|| on the host.
double relative_residual(const csr_matrix& a, const std::vector<double>& b,
                         const std::vector<double>& x) {
  double residual = 0.0;
  double norm_b = 0.0;
  for (int row = 0; row < unknowns; ++row) {
    double ax = 0.0;
    for (int k = a.offsets[row]; k < a.offsets[row + 1]; ++k) {
      ax += a.values[k] * x[a.columns[k]];
    }
    residual += (b[row] - ax) * (b[row] - ax);
    norm_b += b[row] * b[row];
  }
  return std::sqrt(residual / norm_b);
}

} // namespace

int main() {
  if (!example::device_present("cg_solver")) {
    return 0;
  }
  const csr_matrix host_a = laplacian();
  std::vector<double> host_b(unknowns);
  for (int i = 0; i < unknowns; ++i) {
    host_b[i] = 1.0 + static_cast<double>((i * 7919) % 13) / 13.0;
  }
  int* offsets = to_device(host_a.offsets);
  int* columns = to_device(host_a.columns);
  double* values = to_device(host_a.values);
  const double* b = to_device(host_b);

  cudaStream_t stream = example::create_stream();
  solver host_driven;
  check_cublas(cublasCreate(&host_driven.blas), "cublasCreate");
  check_cublas(cublasSetPointerMode(host_driven.blas, CUBLAS_POINTER_MODE_DEVICE),
               "cublasSetPointerMode");
  check_cusparse(cusparseCreate(&host_driven.sparse), "cusparseCreate");
  check_cusparse(cusparseCreateCsr(&host_driven.a, unknowns, unknowns,
                                   static_cast<std::int64_t>(host_a.values.size()), offsets,
                                   columns, values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
                 "cusparseCreateCsr");
  host_driven.b = b;

  // The host loop: its own vectors; every iteration copies `more` back and synchronizes.
  solver eager = host_driven;
  eager.x = example::allocate<double>(unknowns);
  eager.r = example::allocate<double>(unknowns);
  eager.p = example::allocate<double>(unknowns);
  eager.ap = example::allocate<double>(unknowns);
  eager.s = example::allocate<scalars>(1);
  eager.blas_workspace = example::allocate<unsigned char>(cublas_workspace_bytes);
  eager.describe_vectors();
  eager.spmv_buffer = example::allocate<unsigned char>(spmv_buffer_bytes(eager));
  eager.use_stream(stream);
  const auto solve_on_host = [&] {
    eager.begin(stream, graphcap::condition{});
    int more = 0;
    example::check(
        cudaMemcpyAsync(&more, &eager.s->more, sizeof more, cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync");
    example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    while (more != 0) {
      eager.iterate(stream, graphcap::condition{});
      example::check(
          cudaMemcpyAsync(&more, &eager.s->more, sizeof more, cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
      example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
  };
  solve_on_host(); // warm-up: the libraries load their kernels
  auto clock = std::chrono::steady_clock::now();
  solve_on_host();
  const std::chrono::duration<double, std::milli> host_time =
      std::chrono::steady_clock::now() - clock;
  scalars host_result{};
  example::check(cudaMemcpy(&host_result, eager.s, sizeof host_result, cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
  const std::vector<double> host_x = to_host(eager.x);

  // The graph: captured once; its vectors, scalars and library workspaces from its pool.
  graphcap::graph graph;
  solver captured = host_driven;
  graphcap::buffer<double> solution;
  try {
    graph.capture(stream, [&](graphcap::graph::scope& cap) {
      solution = cap.make_buffer<double>(unknowns); // outlives the capture: read after
      captured.x = solution.data();
      captured.r = cap.allocate<double>(unknowns);
      captured.p = cap.allocate<double>(unknowns);
      captured.ap = cap.allocate<double>(unknowns);
      captured.s = cap.allocate<scalars>(1);
      captured.blas_workspace = cap.allocate<unsigned char>(cublas_workspace_bytes);
      captured.describe_vectors();
      captured.spmv_buffer = cap.allocate<unsigned char>(spmv_buffer_bytes(captured));
      captured.use_stream(cap.stream());
      const graphcap::condition more =
          graphcap::make_condition(cap, 0, graphcap::reset_each_launch);
      captured.begin(cap.stream(), more); // `start` sets `more`
      graphcap::while_(cap, more, [&](auto& body) {
        captured.use_stream(body.stream()); // the body is captured on a stream of its own
        captured.iterate(body.stream(), more);
      });
    });
  } catch (const graphcap::capture_error& failure) {
    std::fprintf(stderr,
                 "cg_solver: the WHILE loop could not be captured: %s\n"
                 "  (cuBLAS or cuSPARSE put a node CUDA does not allow in a conditional body "
                 "into it: check that both use device-side scalars, a workspace set before "
                 "the body, and no algorithm that records events; the graph was discarded)\n",
                 failure.what());
    return 1;
  }
  host_driven.use_stream(stream); // the handles must not keep the body's destroyed stream
  captured.forget_vectors();

  graph.replay(stream); // warm-up: the first launch uploads the graph
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  clock = std::chrono::steady_clock::now();
  graph.replay(stream);
  example::check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const std::chrono::duration<double, std::milli> graph_time =
      std::chrono::steady_clock::now() - clock;
  scalars graph_result{};
  example::check(cudaMemcpy(&graph_result, captured.s, sizeof graph_result, cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
  const std::vector<double> graph_x = to_host(solution.data());

  double largest = 0.0;
  double difference = 0.0;
  for (int i = 0; i < unknowns; ++i) {
    largest = std::max(largest, std::fabs(host_x[i]));
    difference = std::max(difference, std::fabs(graph_x[i] - host_x[i]));
  }
  const double residual = relative_residual(host_a, host_b, graph_x);
  std::printf("cg_solver: %d unknowns; host loop %d iterations in %.2f ms (%.1f us each); "
              "WHILE node %d iterations in %.2f ms (%.1f us each, %.1fx)\n",
              unknowns, host_result.iterations, host_time.count(),
              1000.0 * host_time.count() / std::max(host_result.iterations, 1),
              graph_result.iterations, graph_time.count(),
              1000.0 * graph_time.count() / std::max(graph_result.iterations, 1),
              host_time.count() / graph_time.count());
  std::printf("cg_solver: ||b - Ax|| / ||b|| = %.2e (tolerance %.0e); largest difference from "
              "the host loop's x: %.2e (|x| up to %.2e)\n",
              residual, tolerance, difference, largest);

  eager.forget_vectors();
  cusparseDestroySpMat(host_driven.a);
  cusparseDestroy(host_driven.sparse);
  cublasDestroy(host_driven.blas);
  cudaStreamDestroy(stream);
  const bool agree = graph_result.iterations == host_result.iterations &&
                     difference <= 1e-9 * std::max(largest, 1.0) && residual <= 2 * tolerance;
  if (!agree) {
    std::fprintf(stderr, "cg_solver: the WHILE loop and the host loop disagree\n");
  }
  return agree ? 0 : 1;
}
