// annotations: name the regions of a captured graph, so that a trace of its replays shows which
// kernels belong to which layer instead of one undifferentiated run of kernels.
//
// graphcap::annot::on (from <graphcap/annotations.hpp>, target graphcap::annotations) makes
// cap.mark(...) tag every node the capture adds while the returned scope lives, work forked to
// other streams included. After the capture, graph.annotations() lists the tagged nodes with the
// ids CUPTI and profilers give them when the graph is replayed; trace_recorder collects CUPTI's
// kernel records over some replays and writes a Chrome trace (open it in https://ui.perfetto.dev)
// with one lane per region. scripts/plot_trace.py renders it to a PNG.
//
//   example_annotations [output directory]   writes annotations.json and annotations_trace.json
#include <graphcap/annotations.hpp>
#include <graphcap/graphcap.hpp>

#include "example_support.cuh"

#include <cstdio>
#include <exception>
#include <string>

namespace {

constexpr int n = 1 << 20;
constexpr int threads = 256;
constexpr int blocks = (n + threads - 1) / threads;

__global__ void qk_scores(const float* x, float* scores, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    scores[i] = x[i] * x[(i + 1) % count];
  }
}

__global__ void softmax_rows(float* scores, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    scores[i] = __expf(scores[i] - 1.0F) / (1.0F + __expf(scores[i] - 1.0F));
  }
}

__global__ void weighted_sum(const float* scores, const float* x, float* out, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    out[i] = scores[i] * x[i];
  }
}

__global__ void mlp_up(const float* in, float* hidden, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    hidden[i] = 2.0F * in[i] + 0.5F;
  }
}

__global__ void gelu(float* hidden, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    const float v = hidden[i];
    hidden[i] = 0.5F * v * (1.0F + tanhf(0.79788456F * (v + 0.044715F * v * v * v)));
  }
}

__global__ void mlp_down(const float* hidden, float* x, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) {
    x[i] = 0.5F * hidden[i] + 0.1F * x[i];
  }
}

using annotated_graph = graphcap::graph_with<graphcap::annot::on>;

struct buffers {
  float* x = nullptr;
  float* scores = nullptr;
  float* attended = nullptr;
  float* hidden = nullptr;
};

/// Two layers of attention + MLP. In attention, a second "head" runs on a side stream forked
/// from the capture stream inside the scope: its kernels are tagged too.
void capture_model(annotated_graph& graph, const buffers& b, cudaStream_t side, cudaEvent_t fork,
                   cudaEvent_t join) {
  // [annotated-capture]
  graph.capture([&](annotated_graph::scope& cap) {
    const cudaStream_t s = cap.stream();
    for (int layer = 0; layer < 2; ++layer) {
      auto in_layer = cap.mark({{"layer", std::to_string(layer)}});
      {
        auto attention = cap.mark("attention");
        example::check(cudaEventRecord(fork, s), "cudaEventRecord");
        example::check(cudaStreamWaitEvent(side, fork, 0), "cudaStreamWaitEvent");
        qk_scores<<<blocks, threads, 0, s>>>(b.x, b.scores, n);
        softmax_rows<<<blocks, threads, 0, s>>>(b.scores, n);
        {
          auto head = cap.mark({{"head", "1"}}); // merged: name=attention, layer, head=1
          qk_scores<<<blocks, threads, 0, side>>>(b.x, b.hidden, n);
          softmax_rows<<<blocks, threads, 0, side>>>(b.hidden, n);
        }
        example::check(cudaEventRecord(join, side), "cudaEventRecord");
        example::check(cudaStreamWaitEvent(s, join, 0), "cudaStreamWaitEvent");
        weighted_sum<<<blocks, threads, 0, s>>>(b.scores, b.x, b.attended, n);
      }
      {
        auto mlp = cap.mark("mlp");
        mlp_up<<<blocks, threads, 0, s>>>(b.attended, b.hidden, n);
        gelu<<<blocks, threads, 0, s>>>(b.hidden, n);
        mlp_down<<<blocks, threads, 0, s>>>(b.hidden, b.x, n);
      }
    }
  });
  // [/annotated-capture]
}

} // namespace

int main(int argc, char** argv) {
  if (!example::device_present("annotations")) {
    return 0;
  }
  const std::string directory = argc > 1 ? std::string{argv[1]} + "/" : std::string{};
  buffers b;
  for (float** buffer : {&b.x, &b.scores, &b.attended, &b.hidden}) {
    *buffer = example::allocate<float>(n);
    example::check(cudaMemset(*buffer, 0, n * sizeof(float)), "cudaMemset");
  }
  cudaStream_t side = example::create_stream();
  cudaEvent_t fork = example::create_event();
  cudaEvent_t join = example::create_event();

  try {
    annotated_graph graph;
    capture_model(graph, b, side, fork, join);
    std::printf("annotations: %zu nodes captured, %zu annotated (ids from %s)\n",
                graph.node_count(), graph.annotations().size(),
                graph.annot_policy().id_source() == graphcap::node_id_source::cupti ? "CUPTI"
                : graph.annot_policy().id_source() == graphcap::node_id_source::tools_id
                    ? "the driver's tools id"
                    : "nowhere: CUPTI is unavailable");
    for (const graphcap::node_annotation& node : graph.annotations()) {
      std::printf("  id %#llx  %-8s %-44s", static_cast<unsigned long long>(node.id),
                  std::string{graphcap::to_string(node.type)}.c_str(),
                  std::string{node.kernel}.c_str());
      for (const auto& [key, value] : node.values) {
        std::printf(" %s=%s", key.c_str(), value.c_str());
      }
      std::printf("\n");
    }
    graphcap::write_annotations_json(directory + "annotations.json", graph.annotations());

    graph.upload(); // the first replay then costs what the others do
    graphcap::trace_recorder recorder;
    for (int replay = 0; replay < 3; ++replay) {
      graph.replay();
    }
    recorder.stop();
    if (recorder.available()) {
      recorder.write_chrome_trace(directory + "annotations_trace.json");
      std::printf("annotations: %zu kernel records over 3 replays -> %sannotations_trace.json\n",
                  recorder.kernels().size(), directory.c_str());
    } else {
      std::printf("annotations: no trace (%s)\n", recorder.reason().c_str());
    }
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "annotations: %s\n", failure.what());
    return 1;
  }

  example::check(cudaEventDestroy(join), "cudaEventDestroy");
  example::check(cudaEventDestroy(fork), "cudaEventDestroy");
  example::check(cudaStreamDestroy(side), "cudaStreamDestroy");
  for (float* buffer : {b.x, b.scores, b.attended, b.hidden}) {
    example::check(cudaFree(buffer), "cudaFree");
  }
  return 0;
}
