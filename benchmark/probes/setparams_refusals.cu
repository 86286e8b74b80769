// Probe (kept, docs/rebinding.md "Errors"): which moves of an executable's node the set-params
// calls refuse, and what the executable does after a refusal. Each case runs in its own process
// (a launch that faults cannot spoil the next case) and prints
//
//   <case>: <status of the executable's set-params call>
//   <case> (template): <status of the same move set on the template node>
//   <case> then launch: <launch>, sync <sync>, pending <error pending after the set>; <what ran>
//
// where <what ran> is "old thing" (the node did what it was instantiated with), "new thing" (the
// move took effect) or the bytes read. Memory kinds: device (cudaMalloc), device2 (another
// cudaMalloc), pinned (cudaMallocHost), registered (malloc + cudaHostRegister), managed
// (cudaMallocManaged), async (cudaMallocAsync, the device's default pool), pageable (malloc).
//
//   nvcc -std=c++20 -arch=sm_90 -o setparams_refusals setparams_refusals.cu && ./setparams_refusals
#include <cuda_runtime.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr std::size_t bytes = 16384; // every buffer
constexpr std::size_t span = 4096;   // what a node writes

enum class mem { device, device2, pinned, registered, managed, async, pageable, same };

const char* mem_name(mem m) {
  switch (m) {
  case mem::device:
    return "device";
  case mem::device2:
    return "device2";
  case mem::pinned:
    return "pinned";
  case mem::registered:
    return "registered";
  case mem::managed:
    return "managed";
  case mem::async:
    return "async";
  case mem::pageable:
    return "pageable";
  case mem::same:
  default:
    return "same";
  }
}

const char* name(cudaError_t e) {
  return cudaGetErrorName(e);
}

cudaStream_t stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
    return created;
  }();
  return s;
}

unsigned char* alloc(mem m) {
  void* p = nullptr;
  cudaError_t e = cudaSuccess;
  switch (m) {
  case mem::device:
  case mem::device2:
    e = cudaMalloc(&p, bytes);
    break;
  case mem::pinned:
    e = cudaMallocHost(&p, bytes);
    break;
  case mem::registered:
    p = std::aligned_alloc(4096, bytes);
    e = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
    break;
  case mem::managed:
    e = cudaMallocManaged(&p, bytes);
    break;
  case mem::async:
    e = cudaMallocAsync(&p, bytes, stream());
    if (e == cudaSuccess)
      e = cudaStreamSynchronize(stream());
    break;
  case mem::pageable:
  case mem::same:
  default:
    p = std::aligned_alloc(4096, bytes);
    break;
  }
  if (e != cudaSuccess || p == nullptr) {
    std::printf("  allocation of %s memory failed: %s\n", mem_name(m), name(e));
    std::exit(2);
  }
  return static_cast<unsigned char*>(p);
}

void fill(void* p, unsigned char value) {
  std::vector<unsigned char> host(bytes, value);
  const cudaError_t e = cudaMemcpy(p, host.data(), bytes, cudaMemcpyDefault);
  if (e != cudaSuccess) {
    std::printf("  fill failed: %s\n", name(e));
    std::exit(2);
  }
}

unsigned char byte_at(const void* p) {
  unsigned char value = 0xee;
  static_cast<void>(cudaMemcpy(&value, p, 1, cudaMemcpyDefault));
  return value;
}

/// "old thing", "new thing" or the bytes, from the first byte at the old and the new target.
std::string outcome(const void* old_target, unsigned char old_value, const void* new_target,
                    unsigned char new_value) {
  const unsigned char at_old = byte_at(old_target);
  char text[96];
  if (old_target == new_target) {
    std::snprintf(text, sizeof text, "%s (byte %02x)",
                  at_old == old_value   ? "old thing"
                  : at_old == new_value ? "new thing"
                                        : "neither",
                  at_old);
    return text;
  }
  const unsigned char at_new = byte_at(new_target);
  const char* verdict = at_old == old_value && at_new == 0   ? "old thing"
                        : at_old == 0 && at_new == new_value ? "new thing"
                                                             : "neither";
  std::snprintf(text, sizeof text, "%s (old target %02x, new target %02x)", verdict, at_old,
                at_new);
  return text;
}

void report_launch(const char* label, cudaGraphExec_t exec, cudaError_t pending,
                   const std::function<std::string()>& what_ran) {
  const cudaError_t launched = cudaGraphLaunch(exec, stream());
  const cudaError_t synced = cudaStreamSynchronize(stream());
  const std::string ran = synced == cudaSuccess ? what_ran() : std::string{"not read"};
  std::printf("%s then launch: %s, sync %s, pending %s; %s\n", label, name(launched), name(synced),
              name(pending), ran.c_str());
}

// ---- memset --------------------------------------------------------------------------------

struct memset_case {
  const char* label;
  mem from; // the node's destination
  mem to;   // the new destination (same: the old allocation at to_offset)
  std::size_t to_offset = 0;
  unsigned element = 1; // the new elementSize
  std::size_t width = span;
  std::size_t height = 1;
  std::size_t pitch = 0;
};

void run(const memset_case& c) {
  unsigned char* old_target = alloc(c.from);
  unsigned char* new_target = c.to == mem::same ? old_target + c.to_offset : alloc(c.to);
  fill(old_target, 0);
  if (c.to != mem::same)
    fill(new_target, 0);
  cudaGraph_t graph = nullptr;
  cudaGraphCreate(&graph, 0);
  cudaMemsetParams before{};
  before.dst = old_target;
  before.value = 0x11;
  before.elementSize = 1;
  before.width = span;
  before.height = 1;
  cudaGraphNode_t node = nullptr;
  cudaError_t e = cudaGraphAddMemsetNode(&node, graph, nullptr, 0, &before);
  if (e != cudaSuccess) {
    std::printf("%s: node not added (cudaGraphAddMemsetNode %s)\n", c.label, name(e));
    return;
  }
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    std::printf("%s: not instantiated (%s)\n", c.label, name(e));
    return;
  }
  cudaMemsetParams after = before;
  after.dst = new_target;
  after.elementSize = c.element;
  after.value = c.element == 1 ? 0x22u : c.element == 2 ? 0x2222u : 0x22222222u;
  after.width = c.width;
  after.height = c.height;
  after.pitch = c.pitch;
  const cudaError_t set = cudaGraphExecMemsetNodeSetParams(exec, node, &after);
  const cudaError_t pending = cudaGetLastError();
  std::printf("%s: %s\n", c.label, name(set));
  report_launch(c.label, exec, pending,
                [&] { return outcome(old_target, 0x11, new_target, 0x22); });
  std::printf("%s (template): %s\n", c.label, name(cudaGraphMemsetNodeSetParams(node, &after)));
  static_cast<void>(cudaGetLastError());
}

// ---- memcpy --------------------------------------------------------------------------------

struct memcpy_case {
  const char* label;
  mem src_from, dst_from; // the node's operands
  mem src_to, dst_to;     // the new ones (same: unchanged)
  cudaMemcpyKind kind_from, kind_to;
  bool three_d = false;  // cudaGraphExecMemcpyNodeSetParams with the node's params, moved
  bool captured = false; // the node made by cudaMemcpyAsync in a capture (else AddMemcpyNode1D)
  std::size_t count = span;
};

void run(const memcpy_case& c) {
  unsigned char* src0 = alloc(c.src_from);
  unsigned char* dst0 = alloc(c.dst_from);
  unsigned char* src1 = c.src_to == mem::same ? src0 : alloc(c.src_to);
  unsigned char* dst1 = c.dst_to == mem::same ? dst0 : alloc(c.dst_to);
  fill(src0, 0x01);
  fill(dst0, 0);
  if (src1 != src0)
    fill(src1, 0x02);
  if (dst1 != dst0)
    fill(dst1, 0);
  cudaGraph_t graph = nullptr;
  cudaGraphNode_t node = nullptr;
  cudaError_t e = cudaSuccess;
  if (c.captured) {
    cudaStreamBeginCapture(stream(), cudaStreamCaptureModeGlobal);
    e = cudaMemcpyAsync(dst0, src0, span, c.kind_from, stream());
    const cudaError_t ended = cudaStreamEndCapture(stream(), &graph);
    if (e == cudaSuccess)
      e = ended;
    std::size_t one = 1;
    if (e == cudaSuccess)
      e = cudaGraphGetNodes(graph, &node, &one);
  } else {
    cudaGraphCreate(&graph, 0);
    e = cudaGraphAddMemcpyNode1D(&node, graph, nullptr, 0, dst0, src0, span, c.kind_from);
  }
  if (e != cudaSuccess) {
    std::printf("%s: node not added (%s)\n", c.label, name(e));
    static_cast<void>(cudaGetLastError());
    return;
  }
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    std::printf("%s: not instantiated (%s)\n", c.label, name(e));
    return;
  }
  cudaError_t set = cudaSuccess;
  cudaError_t template_set = cudaSuccess;
  // With a source move alone, the new bytes show at the old destination: 0x02 is the new thing.
  const bool source_moved = src1 != src0;
  if (c.three_d) {
    cudaMemcpy3DParms p{};
    cudaGraphMemcpyNodeGetParams(node, &p);
    p.srcPtr.ptr = src1;
    p.dstPtr.ptr = dst1;
    p.kind = c.kind_to;
    p.extent.width = c.count;
    set = cudaGraphExecMemcpyNodeSetParams(exec, node, &p);
    const cudaError_t pending = cudaGetLastError();
    std::printf("%s: %s\n", c.label, name(set));
    report_launch(c.label, exec, pending,
                  [&] { return outcome(dst0, 0x01, dst1, source_moved ? 0x02 : 0x01); });
    template_set = cudaGraphMemcpyNodeSetParams(node, &p);
  } else {
    set = cudaGraphExecMemcpyNodeSetParams1D(exec, node, dst1, src1, c.count, c.kind_to);
    const cudaError_t pending = cudaGetLastError();
    std::printf("%s: %s\n", c.label, name(set));
    report_launch(c.label, exec, pending,
                  [&] { return outcome(dst0, 0x01, dst1, source_moved ? 0x02 : 0x01); });
    template_set = cudaGraphMemcpyNodeSetParams1D(node, dst1, src1, c.count, c.kind_to);
  }
  std::printf("%s (template): %s\n", c.label, name(template_set));
  static_cast<void>(cudaGetLastError());
}

// ---- kernel --------------------------------------------------------------------------------

__global__ void write_value(int* p, int v) {
  p[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
__global__ void write_other(int* p, int v) {
  p[blockIdx.x * blockDim.x + threadIdx.x] = v + 1000;
}
__global__ void write_two(int* p, int v, int w) {
  p[blockIdx.x * blockDim.x + threadIdx.x] = v + w;
}

enum class kernel_move {
  pointer_device2,
  pointer_pinned,
  pointer_managed,
  function_same_signature,
  function_other_signature,
  grid,
  block,
  shared_memory
};

struct kernel_case {
  const char* label;
  kernel_move move;
};

void run(const kernel_case& c) {
  int* old_buffer = reinterpret_cast<int*>(alloc(mem::device));
  const mem other = c.move == kernel_move::pointer_pinned    ? mem::pinned
                    : c.move == kernel_move::pointer_managed ? mem::managed
                                                             : mem::device2;
  int* new_buffer = reinterpret_cast<int*>(alloc(other));
  fill(old_buffer, 0);
  fill(new_buffer, 0);
  int* argument = old_buffer;
  int value = 7;
  int extra = 5;
  void* args[] = {&argument, &value, &extra};
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(&write_value);
  p.gridDim = dim3(1);
  p.blockDim = dim3(32);
  p.kernelParams = args;
  cudaGraph_t graph = nullptr;
  cudaGraphCreate(&graph, 0);
  cudaGraphNode_t node = nullptr;
  cudaError_t e = cudaGraphAddKernelNode(&node, graph, nullptr, 0, &p);
  cudaGraphExec_t exec = nullptr;
  if (e == cudaSuccess)
    e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    std::printf("%s: not built (%s)\n", c.label, name(e));
    return;
  }
  // The new thing: what the moved node writes, where it writes it.
  int* watched = old_buffer;
  int expected = 7;
  switch (c.move) {
  case kernel_move::pointer_device2:
  case kernel_move::pointer_pinned:
  case kernel_move::pointer_managed:
    argument = new_buffer;
    watched = new_buffer;
    break;
  case kernel_move::function_same_signature:
    p.func = reinterpret_cast<void*>(&write_other);
    expected = 1007;
    break;
  case kernel_move::function_other_signature:
    p.func = reinterpret_cast<void*>(&write_two);
    expected = 12;
    break;
  case kernel_move::grid:
    p.gridDim = dim3(2);
    break;
  case kernel_move::block:
    p.blockDim = dim3(64);
    break;
  case kernel_move::shared_memory:
  default:
    p.sharedMemBytes = 1024;
    break;
  }
  value = 7;
  const cudaError_t set = cudaGraphExecKernelNodeSetParams(exec, node, &p);
  const cudaError_t pending = cudaGetLastError();
  std::printf("%s: %s\n", c.label, name(set));
  report_launch(c.label, exec, pending, [&] {
    int old_first = -1;
    int old_33rd = -1; // written only by a wider launch
    int new_first = -1;
    cudaMemcpy(&old_first, old_buffer, sizeof old_first, cudaMemcpyDefault);
    cudaMemcpy(&old_33rd, old_buffer + 32, sizeof old_33rd, cudaMemcpyDefault);
    cudaMemcpy(&new_first, new_buffer, sizeof new_first, cudaMemcpyDefault);
    const bool wider = c.move == kernel_move::grid || c.move == kernel_move::block;
    const bool old_thing = old_first == 7 && new_first == 0 && old_33rd == 0;
    const bool new_thing =
        wider ? old_33rd == 7
              : (watched == new_buffer ? new_first == 7 && old_first == 0 : old_first == expected);
    char text[128];
    std::snprintf(text, sizeof text, "%s (old[0] %d, old[32] %d, new[0] %d)",
                  old_thing   ? "old thing"
                  : new_thing ? "new thing"
                              : "neither",
                  old_first, old_33rd, new_first);
    return std::string{text};
  });
  std::printf("%s (template): %s\n", c.label, name(cudaGraphKernelNodeSetParams(node, &p)));
  static_cast<void>(cudaGetLastError());
}

// ---- the cases ---------------------------------------------------------------------------

constexpr cudaMemcpyKind d2d = cudaMemcpyDeviceToDevice;
constexpr cudaMemcpyKind h2d = cudaMemcpyHostToDevice;
constexpr cudaMemcpyKind d2h = cudaMemcpyDeviceToHost;
constexpr cudaMemcpyKind any = cudaMemcpyDefault;

std::vector<std::function<void()>> cases() {
  std::vector<std::function<void()>> all;
  const auto add_memset = [&](memset_case c) { all.emplace_back([c] { run(c); }); };
  const auto add_memcpy = [&](memcpy_case c) { all.emplace_back([c] { run(c); }); };
  const auto add_kernel = [&](kernel_case c) { all.emplace_back([c] { run(c); }); };
  using m = mem;
  add_memset({"memset dst device->device2", m::device, m::device2});
  add_memset({"memset dst device->same allocation +8192", m::device, m::same, 8192});
  add_memset({"memset dst device->pinned", m::device, m::pinned});
  add_memset({"memset dst device->registered", m::device, m::registered});
  add_memset({"memset dst device->managed", m::device, m::managed});
  add_memset({"memset dst device->async", m::device, m::async});
  add_memset({"memset dst device->pageable", m::device, m::pageable});
  add_memset({"memset dst pinned->device", m::pinned, m::device});
  add_memset({"memset dst pinned->pinned", m::pinned, m::pinned});
  add_memset({"memset dst managed->device", m::managed, m::device});
  add_memset({"memset dst async->device", m::async, m::device});
  add_memset({"memset elementSize 1->2 (width 2048)", m::device, m::same, 0, 2, span / 2});
  add_memset({"memset elementSize 1->4 (width 1024)", m::device, m::same, 0, 4, span / 4});
  add_memset({"memset width 4096->2048", m::device, m::same, 0, 1, span / 2});
  add_memset({"memset width 4096->8192", m::device, m::same, 0, 1, 2 * span});
  add_memset({"memset height 1->2 (pitch 4096)", m::device, m::same, 0, 1, span, 2, span});

  // cudaGraphExecMemcpyNodeSetParams1D on a cudaGraphAddMemcpyNode1D node.
  add_memcpy(
      {"memcpy1D src device->device2 (D2D)", m::device, m::device, m::device2, m::same, d2d, d2d});
  add_memcpy(
      {"memcpy1D src device->pinned (D2D)", m::device, m::device, m::pinned, m::same, d2d, d2d});
  add_memcpy({"memcpy1D src device->pinned (D2D->H2D)", m::device, m::device, m::pinned, m::same,
              d2d, h2d});
  add_memcpy({"memcpy1D src device->pinned (Default)", m::device, m::device, m::pinned, m::same,
              any, any});
  add_memcpy({"memcpy1D src device->pageable (D2D->H2D)", m::device, m::device, m::pageable,
              m::same, d2d, h2d});
  add_memcpy({"memcpy1D src device->pageable (Default)", m::device, m::device, m::pageable, m::same,
              any, any});
  add_memcpy(
      {"memcpy1D src device->managed (D2D)", m::device, m::device, m::managed, m::same, d2d, d2d});
  add_memcpy({"memcpy1D src device->managed (Default)", m::device, m::device, m::managed, m::same,
              any, any});
  add_memcpy(
      {"memcpy1D src device->async (D2D)", m::device, m::device, m::async, m::same, d2d, d2d});
  add_memcpy(
      {"memcpy1D dst device->pinned (D2D)", m::device, m::device, m::same, m::pinned, d2d, d2d});
  add_memcpy({"memcpy1D dst device->pinned (D2D->D2H)", m::device, m::device, m::same, m::pinned,
              d2d, d2h});
  add_memcpy({"memcpy1D dst device->pinned (Default)", m::device, m::device, m::same, m::pinned,
              any, any});
  add_memcpy({"memcpy1D dst device->pageable (D2D->D2H)", m::device, m::device, m::same,
              m::pageable, d2d, d2h});
  add_memcpy({"memcpy1D dst device->pageable (Default)", m::device, m::device, m::same, m::pageable,
              any, any});
  add_memcpy(
      {"memcpy1D dst device->managed (D2D)", m::device, m::device, m::same, m::managed, d2d, d2d});
  add_memcpy({"memcpy1D kind only D2D->Default", m::device, m::device, m::same, m::same, d2d, any});
  add_memcpy({"memcpy1D kind only D2D->H2D", m::device, m::device, m::same, m::same, d2d, h2d});
  add_memcpy({"memcpy1D count 4096->2048", m::device, m::device, m::same, m::same, d2d, d2d, false,
              false, span / 2});
  add_memcpy({"memcpy1D src pinned->pageable (H2D)", m::pinned, m::device, m::pageable, m::same,
              h2d, h2d});
  add_memcpy({"memcpy1D src pinned->device (H2D->D2D)", m::pinned, m::device, m::device2, m::same,
              h2d, d2d});
  add_memcpy({"memcpy1D src pinned->device (Default)", m::pinned, m::device, m::device2, m::same,
              any, any});
  add_memcpy({"memcpy1D src pageable->pinned (H2D)", m::pageable, m::device, m::pinned, m::same,
              h2d, h2d});
  add_memcpy({"memcpy1D src managed->device (Default)", m::managed, m::device, m::device2, m::same,
              any, any});
  // cudaGraphExecMemcpyNodeSetParams (what graphcap's rebinder calls) on a captured
  // cudaMemcpyAsync node, its parameters read back and one pointer moved, the kind kept.
  add_memcpy({"memcpy3D captured src device->device2", m::device, m::device, m::device2, m::same,
              d2d, d2d, true, true});
  add_memcpy({"memcpy3D captured src device->pinned", m::device, m::device, m::pinned, m::same, d2d,
              d2d, true, true});
  add_memcpy({"memcpy3D captured src device->pageable", m::device, m::device, m::pageable, m::same,
              d2d, d2d, true, true});
  add_memcpy({"memcpy3D captured src device->managed", m::device, m::device, m::managed, m::same,
              d2d, d2d, true, true});
  add_memcpy({"memcpy3D captured dst device->pinned", m::device, m::device, m::same, m::pinned, d2d,
              d2d, true, true});
  add_memcpy({"memcpy3D captured dst device->pageable", m::device, m::device, m::same, m::pageable,
              d2d, d2d, true, true});
  add_memcpy({"memcpy3D captured Default src device->pinned", m::device, m::device, m::pinned,
              m::same, any, any, true, true});
  add_memcpy({"memcpy3D captured Default src device->pageable", m::device, m::device, m::pageable,
              m::same, any, any, true, true});
  add_memcpy({"memcpy3D captured H2D src pinned->pageable", m::pinned, m::device, m::pageable,
              m::same, h2d, h2d, true, true});
  add_memcpy({"memcpy3D captured H2D src pinned->device", m::pinned, m::device, m::device2, m::same,
              h2d, h2d, true, true});

  // Stream-ordered pool memory (cudaMallocAsync) and the other kinds, both calls.
  add_memcpy(
      {"memcpy1D src async->device (D2D)", m::async, m::device, m::device2, m::same, d2d, d2d});
  add_memcpy(
      {"memcpy1D dst device->async (D2D)", m::device, m::device, m::same, m::async, d2d, d2d});
  add_memcpy(
      {"memcpy1D src device->async (Default)", m::device, m::device, m::async, m::same, any, any});
  add_memcpy({"memcpy3D captured src device->async", m::device, m::device, m::async, m::same, d2d,
              d2d, true, true});
  add_memcpy({"memcpy3D captured dst device->async", m::device, m::device, m::same, m::async, d2d,
              d2d, true, true});
  add_memcpy({"memcpy3D captured src async->device", m::async, m::device, m::device2, m::same, d2d,
              d2d, true, true});
  add_memcpy({"memcpy3D captured src async->async", m::async, m::device, m::async, m::same, d2d,
              d2d, true, true});
  add_memcpy({"memcpy3D captured Default src device->async", m::device, m::device, m::async,
              m::same, any, any, true, true});
  add_memcpy({"memcpy3D captured dst device->managed", m::device, m::device, m::same, m::managed,
              d2d, d2d, true, true});
  add_memcpy({"memcpy3D captured src device->registered", m::device, m::device, m::registered,
              m::same, d2d, d2d, true, true});
  add_memcpy({"memcpy3D captured kind D2D->Default", m::device, m::device, m::device2, m::same, d2d,
              any, true, true});
  add_memcpy({"memcpy3D captured D2H dst pinned->pageable", m::device, m::pinned, m::same,
              m::pageable, d2h, d2h, true, true});

  add_kernel({"kernel pointer device->device2", kernel_move::pointer_device2});
  add_kernel({"kernel pointer device->pinned", kernel_move::pointer_pinned});
  add_kernel({"kernel pointer device->managed", kernel_move::pointer_managed});
  add_kernel({"kernel another function, same signature", kernel_move::function_same_signature});
  add_kernel({"kernel another function, another signature", kernel_move::function_other_signature});
  add_kernel({"kernel grid 1->2", kernel_move::grid});
  add_kernel({"kernel block 32->64", kernel_move::block});
  add_kernel({"kernel dynamic shared memory 0->1024", kernel_move::shared_memory});
  return all;
}

} // namespace

int main(int argc, char** argv) {
  const std::vector<std::function<void()>> all = cases();
  if (argc == 3 && std::strcmp(argv[1], "--case") == 0) {
    alarm(30);
    const std::size_t index = std::strtoul(argv[2], nullptr, 10);
    if (index < all.size())
      all[index]();
    std::fflush(stdout);
    return 0;
  }
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int pageable_access = 0;
  cudaDeviceGetAttribute(&pageable_access, cudaDevAttrPageableMemoryAccess, 0);
  std::printf("device %s, driver %d, runtime %d, pageable memory access %d\n", prop.name, driver,
              runtime, pageable_access);
  std::fflush(stdout);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string index = std::to_string(i);
    char flag[] = "--case";
    char* child_argv[] = {argv[0], flag, const_cast<char*>(index.c_str()), nullptr};
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, child_argv, environ) != 0) {
      std::printf("case %zu: could not start\n", i);
      continue;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::printf("case %zu: process ended abnormally (%s %d)\n", i,
                  WIFSIGNALED(status) ? "signal" : "exit",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    std::fflush(stdout);
  }
  return 0;
}
