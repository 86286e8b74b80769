// expect: repeat\(\) is spelled device_loop\(\) since 0\.3
// The 0.2 name of device_loop(), repeat(), still compiles for one release (every form of it),
// deprecated with a message that gives the new name (made an error here, so that the test sees
// it; the control names the loop's result without it).
#pragma GCC diagnostic error "-Wdeprecated-declarations"
#include <graphcap/control_flow/device_loop.hpp>
#include <graphcap/graphcap.hpp>

#include <cuda_runtime_api.h>

#include <type_traits>
#include <utility>

#ifdef GRAPHCAP_CONTROL
using result = graphcap::loop_counter;
#else
using result =
    decltype(graphcap::repeat(std::declval<graphcap::graph::scope&>(), 3, [](cudaStream_t) {}));
#endif
static_assert(std::is_same_v<result, graphcap::loop_counter>);

int main() {}
