// Control of the CUPTI part of the CUDA test double (test/double/src/cupti.cpp).
//
// The double's CUPTI gives graph, executable and node ids following what CUPTI does on the H200:
// a node's id is (its graph's id << 32 | its creation index), an executable's id is its own
// (cuda_double::graph_id / node_id give the same values). Its activity API delivers only the
// kernel records a test queues (queue_kernel_activity): the double runs no kernel.
//
// Its callback API (cuptiSubscribe, cuptiUnsubscribe, cuptiEnableCallback) has one subscriber per
// process, as CUPTI does, and one callback point: CUPTI_CB_DOMAIN_RESOURCE /
// CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, for every node created by stream capture or by a
// cudaGraphAdd*Node call (not for the nodes of clones, executables or embedded child graphs:
// CUPTI reports clones as GRAPHNODE_CLONED, which the double does not make). The callback gets a
// CUpti_ResourceData whose resourceDescriptor is a CUpti_GraphData with the node's graph and the
// node; nodeType is always 0 (CU_GRAPH_NODE_TYPE_KERNEL), as seen on the H200 for captured nodes,
// whatever the node's type. It is made on the calling thread, in creation order, before the CUDA
// call returns but after the node is complete (its id can be queried) and after the double has
// released its lock, so the callback may take locks of its own. It is expected not to call CUDA
// or CUPTI; a callback running on one thread may still be running when cuptiUnsubscribe returns
// on another.
//
// The callback API also reports the runtime and driver calls the double models, in the
// CUPTI_CB_DOMAIN_RUNTIME_API and DRIVER_API domains (cuptiEnableDomain, or cuptiEnableCallback
// with the call's id from cupti_runtime_cbid.h / cupti_driver_cbid.h; test/double/src/
// cupti_cbids.inc lists them): an API_ENTER callback before the call and an API_EXIT one after
// it (after its GRAPHNODE_CREATED callbacks), on the calling thread, without the double's lock,
// each with a CUpti_CallbackData holding the function's name and a correlation id the two share;
// at the exit, functionReturnValue points to the cudaError_t (runtime) or CUresult (driver) the
// call returns. functionParams is null except for cudaStreamBeginCapture,
// cudaStreamBeginCaptureToGraph and cudaStreamEndCapture, which give their
// generated_cuda_runtime_api_meta.h parameter structs. A driver function the double serves through
// its runtime one is reported once, in the driver domain. cudaGetLastError, cudaPeekAtLastError
// and the error-string functions make no callback.
#pragma once

#include <cstdint>

namespace cuda_double {

// While on, every CUPTI call answers CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as when
// compute-sanitizer, Nsight Systems or Compute, or cuda-gdb holds CUPTI. cuda_double::reset()
// turns it off.
void set_cupti_held_by_other_tool(bool held);

// While on, cuptiSubscribe answers CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED and every other
// CUPTI call works, as when another CUPTI client in the process (PyTorch's profiler, say) holds
// the one subscriber. cuda_double::reset() turns it off.
void set_cupti_subscriber_taken(bool taken);

// True while a cuptiSubscribe handle has not been released with cuptiUnsubscribe (the subscriber
// set_cupti_subscriber_taken simulates does not count). cuda_double::reset() releases it.
bool cupti_subscribed();

// A kernel execution as CUPTI's activity records report it (CUpti_ActivityKernel10's fields).
struct kernel_activity {
  const char* name = ""; // copied when queued
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t device = 0;
  std::uint32_t stream = 0;
  std::uint64_t graph_node_id = 0;
  std::uint32_t graph_id = 0;
};

// Records `kernel` as if it had run, if kernel activity (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL or
// KERNEL) is enabled now; false, recording nothing, if not. The next cuptiActivityFlushAll hands
// the records to the callbacks of cuptiActivityRegisterCallbacks, as CONCURRENT_KERNEL records in
// buffers from the request callback; cuptiActivityGetNextRecord walks them. cuda_double::reset()
// drops what was not delivered (the registered callbacks stay, as in CUPTI).
bool queue_kernel_activity(const kernel_activity& kernel);

} // namespace cuda_double
