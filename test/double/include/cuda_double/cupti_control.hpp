// Control of the CUPTI part of the CUDA test double (test/double/src/cupti.cpp).
//
// The double's CUPTI gives graph, executable and node ids following what CUPTI does on the H200:
// a node's id is (its graph's id << 32 | its creation index), an executable's id is its own
// (cuda_double::graph_id / node_id give the same values). Its activity API accepts every call
// and delivers no record: the double runs no kernel.
#pragma once

namespace cuda_double {

// While on, every CUPTI call answers CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as when
// compute-sanitizer, Nsight Systems or Compute, or cuda-gdb holds CUPTI. cuda_double::reset()
// turns it off.
void set_cupti_held_by_other_tool(bool held);

} // namespace cuda_double
