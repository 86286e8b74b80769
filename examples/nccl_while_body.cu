// nccl_while_body: can an NCCL all-reduce run inside a conditional body, a WHILE loop around a
// collective replayed as one graph per device? CUDA allows only kernel, memcpy, memset, empty,
// child-graph and conditional nodes in a body, and PyTorch fails here (its issues #180960 and
// #191681: NCCL records events). This example tries, with one rank per GPU it finds (at most
// two), and says what happened: the loop ran and every rank holds the right sum, or graphcap
// refused the body and its capture_error says which node broke CUDA's rule and what to do.
//
// Each iteration adds 1 to every rank's contribution, all-reduces it, and counts down; after
// `iterations` trips every rank holds sum over ranks of (rank + 1 + iterations).
#include <graphcap/control_flow.hpp>
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <nccl.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <vector>

namespace {

constexpr int most_ranks = 2;
constexpr std::size_t count = 1024; // floats all-reduced per iteration
constexpr int iterations = 5;

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, ncclGetErrorString(status));
    std::exit(EXIT_FAILURE);
  }
}

__global__ void add_one(float* values, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    values[i] += 1.0F;
  }
}

__global__ void count_down(int* left, graphcap::condition more) {
  if (--*left <= 0) {
    more.set(0);
  }
}

struct rank_state {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* receive = nullptr;
  int* left = nullptr; // the loop's trip counter
};

// thread_local capture mode: NCCL's proxy thread may make CUDA calls while we capture.
using rank_graph = graphcap::graph_with<graphcap::mode::thread_local_>;

/// Opens rank `rank`'s WHILE body inside the bodies of the ranks before it (all of them are
/// capturing at once, as one NCCL group across devices needs), and issues the group in the
/// innermost body.
void capture_bodies(std::vector<rank_state>& state,
                    std::vector<std::optional<rank_graph::scope>>& scopes,
                    std::vector<cudaStream_t>& body_streams, int rank) {
  const int ranks = static_cast<int>(state.size());
  if (rank == ranks) {
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < ranks; ++r) {
      check_nccl(ncclAllReduce(state[r].send, state[r].receive, count, ncclFloat, ncclSum,
                               state[r].comm, body_streams[r]),
                 "ncclAllReduce");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    return;
  }
  example::check(cudaSetDevice(rank), "cudaSetDevice");
  rank_graph::scope& cap = *scopes[rank];
  const graphcap::condition more = graphcap::make_condition(cap, 1, graphcap::reset_each_launch);
  graphcap::while_(cap, more, [&](cudaStream_t body) {
    body_streams[rank] = body;
    add_one<<<(count + 255) / 256, 256, 0, body>>>(state[rank].send, count);
    capture_bodies(state, scopes, body_streams, rank + 1);
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    count_down<<<1, 1, 0, body>>>(state[rank].left, more);
  });
}

} // namespace

int main() {
  if (!example::device_present("nccl_while_body")) {
    return 0;
  }
  int devices = 0;
  example::check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int ranks = std::min(devices, most_ranks);
  std::printf("nccl_while_body: %d rank%s (one per GPU), NCCL %d.%d.%d, %d iterations of an "
              "all-reduce of %zu floats in a WHILE body\n",
              ranks, ranks == 1 ? "" : "s", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, iterations, count);

  std::vector<rank_state> state(static_cast<std::size_t>(ranks));
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(ranks));
  std::vector<int> device_ids(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    device_ids[rank] = rank;
  }
  check_nccl(ncclCommInitAll(comms.data(), ranks, device_ids.data()), "ncclCommInitAll");
  for (int rank = 0; rank < ranks; ++rank) {
    state[rank].comm = comms[rank];
    example::check(cudaSetDevice(rank), "cudaSetDevice");
    state[rank].stream = example::create_stream();
    state[rank].send = example::allocate<float>(count);
    state[rank].receive = example::allocate<float>(count);
    state[rank].left = example::allocate<int>(1);
  }
  const auto for_each_rank = [&](auto&& step) {
    for (int rank = 0; rank < ranks; ++rank) {
      example::check(cudaSetDevice(rank), "cudaSetDevice");
      step(state[rank], rank);
    }
  };
  const auto reset_inputs = [&] {
    for_each_rank([](rank_state& own, int rank) {
      const std::vector<float> contribution(count, static_cast<float>(rank + 1));
      example::check(
          cudaMemcpy(own.send, contribution.data(), count * sizeof(float), cudaMemcpyHostToDevice),
          "cudaMemcpy");
      example::check(cudaMemset(own.receive, 0, count * sizeof(float)), "cudaMemset");
      example::check(cudaMemcpy(own.left, &iterations, sizeof iterations, cudaMemcpyHostToDevice),
                     "cudaMemcpy");
    });
  };

  // One eager all-reduce first: NCCL connects the ranks at the first collective, outside any
  // capture.
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (const rank_state& own : state) {
    check_nccl(ncclAllReduce(own.send, own.receive, 1, ncclFloat, ncclSum, own.comm, own.stream),
               "ncclAllReduce");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  for_each_rank([](rank_state& own, int) {
    example::check(cudaStreamSynchronize(own.stream), "cudaStreamSynchronize");
  });

  bool captured = true;
  std::vector<rank_graph> graphs(static_cast<std::size_t>(ranks));
  try {
    std::vector<std::optional<rank_graph::scope>> scopes(static_cast<std::size_t>(ranks));
    std::vector<cudaStream_t> body_streams(static_cast<std::size_t>(ranks));
    for (int rank = 0; rank < ranks; ++rank) {
      example::check(cudaSetDevice(rank), "cudaSetDevice");
      scopes[rank].emplace(graphs[rank].begin_capture());
    }
    capture_bodies(state, scopes, body_streams, 0);
    for (int rank = 0; rank < ranks; ++rank) {
      example::check(cudaSetDevice(rank), "cudaSetDevice");
      scopes[rank]->end();
    }
  } catch (const std::exception& refused) {
    std::printf("nccl_while_body: graphcap refused the capture:\n  %s\n", refused.what());
    std::printf("nccl_while_body: instead, replay a graph of one iteration n times "
                "(graphcap::replay_loop), or keep the collective outside the body "
                "(docs/multi-gpu.md)\n");
    captured = false; // an answer to the question, not a failure: the example still succeeds
  }

  int status = EXIT_SUCCESS;
  if (captured) {
    reset_inputs();
    for_each_rank([&](rank_state& own, int rank) { graphs[rank].replay(own.stream); });
    for_each_rank([](rank_state& own, int) {
      example::check(cudaStreamSynchronize(own.stream), "cudaStreamSynchronize");
    });
    const float expected = ranks * (ranks + 1) / 2.0F + static_cast<float>(ranks * iterations);
    bool right = true;
    for_each_rank([&](rank_state& own, int rank) {
      std::vector<float> host(count);
      int left = -1;
      example::check(
          cudaMemcpy(host.data(), own.receive, count * sizeof(float), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
      example::check(cudaMemcpy(&left, own.left, sizeof left, cudaMemcpyDeviceToHost),
                     "cudaMemcpy");
      const bool rank_right = left == 0 && std::all_of(host.begin(), host.end(),
                                                       [&](float v) { return v == expected; });
      std::printf("  rank %d: graph of %zu top-level node(s), counter %d, receive[0] = %g "
                  "(expected %g)%s\n",
                  rank, graphs[rank].node_count(), left, static_cast<double>(host[0]),
                  static_cast<double>(expected), rank_right ? "" : "  WRONG");
      right = right && rank_right;
    });
    std::printf("nccl_while_body: the WHILE loop around the all-reduce %s\n",
                right ? "ran, every rank holds the right sum" : "ran, with a WRONG result");
    status = right ? EXIT_SUCCESS : EXIT_FAILURE;
  }

  graphs.clear(); // the graphs before their communicators
  for_each_rank([](rank_state& own, int) {
    check_nccl(ncclCommDestroy(own.comm), "ncclCommDestroy");
    example::check(cudaStreamDestroy(own.stream), "cudaStreamDestroy");
    example::check(cudaFree(own.send), "cudaFree");
    example::check(cudaFree(own.receive), "cudaFree");
    example::check(cudaFree(own.left), "cudaFree");
  });
  return status;
}
