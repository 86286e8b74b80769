// Devices: a configurable number of identical fake Hopper-class devices.
#include "state.hpp"

#include <cstdio>
#include <cstring>

using namespace cuda_double::detail;

namespace cuda_double::detail {

bool valid_device(int device) {
  return device >= 0 && device < state().device_count;
}

} // namespace cuda_double::detail

namespace {

constexpr int kMajor = 9, kMinor = 0, kSMs = 132;

} // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  return api(__func__, [&] {
    if (!count)
      return cudaErrorInvalidValue;
    if (state().device_count == 0)
      return cudaErrorNoDevice;
    *count = state().device_count;
    return cudaSuccess;
  });
}

cudaError_t cudaGetDevice(int* device) {
  return api(__func__, [&] {
    if (!device)
      return cudaErrorInvalidValue;
    if (state().device_count == 0)
      return cudaErrorNoDevice;
    *device = thread_state().device;
    return cudaSuccess;
  });
}

cudaError_t cudaSetDevice(int device) {
  return api(__func__, [&] {
    if (state().device_count == 0)
      return cudaErrorNoDevice;
    if (!valid_device(device))
      return cudaErrorInvalidDevice;
    thread_state().device = device;
    return cudaSuccess;
  });
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  return api(__func__, [&] {
    if (!prop)
      return cudaErrorInvalidValue;
    if (!valid_device(device))
      return cudaErrorInvalidDevice;
    std::memset(prop, 0, sizeof *prop);
    std::snprintf(prop->name, sizeof prop->name, "graphcap CUDA double %d", device);
    prop->uuid.bytes[0] = static_cast<char>(device + 1);
    prop->totalGlobalMem = state().total_memory;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->sharedMemPerBlockOptin = 227 * 1024;
    prop->sharedMemPerMultiprocessor = 228 * 1024;
    prop->regsPerBlock = 65536;
    prop->regsPerMultiprocessor = 65536;
    prop->warpSize = 32;
    prop->memPitch = std::size_t{1} << 31;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 64 * 1024;
    prop->major = kMajor;
    prop->minor = kMinor;
    prop->textureAlignment = 512;
    prop->texturePitchAlignment = 32;
    prop->multiProcessorCount = kSMs;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->pciBusID = device + 1;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    prop->memoryBusWidth = 6144;
    prop->l2CacheSize = 50 * 1024 * 1024;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->streamPrioritiesSupported = 1;
    prop->managedMemory = 1;
    prop->concurrentManagedAccess = 1;
    prop->cooperativeLaunch = 1;
    prop->maxBlocksPerMultiProcessor = 32;
    prop->memoryPoolsSupported = 1;
    prop->clusterLaunch = 1;
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  return api(__func__, [&] {
    if (!value)
      return cudaErrorInvalidValue;
    if (!valid_device(device))
      return cudaErrorInvalidDevice;
    switch (attr) {
    case cudaDevAttrComputeCapabilityMajor:
      *value = kMajor;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = kMinor;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = kSMs;
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = 48 * 1024;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = 227 * 1024;
      break;
    case cudaDevAttrUnifiedAddressing:
      *value = 1;
      break;
    case cudaDevAttrConcurrentManagedAccess:
      *value = 1;
      break;
    case cudaDevAttrManagedMemory:
      *value = 1;
      break;
    case cudaDevAttrMemoryPoolsSupported:
      *value = 1;
      break;
    case cudaDevAttrIntegrated:
      *value = 0;
      break;
    case cudaDevAttrCanMapHostMemory:
      *value = 1;
      break;
    case cudaDevAttrPciBusId:
      *value = device + 1;
      break;
    case cudaDevAttrPciDeviceId:
      *value = 0;
      break;
    case cudaDevAttrPciDomainId:
      *value = 0;
      break;
    case cudaDevAttrL2CacheSize:
      *value = 50 * 1024 * 1024;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = 2048;
      break;
    case cudaDevAttrCooperativeLaunch:
      *value = 1;
      break;
    default:
      return cudaErrorInvalidValue; // not modelled
    }
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  return api(__func__, [&] {
    if (leastPriority)
      *leastPriority = 0;
    if (greatestPriority)
      *greatestPriority = -5;
    return cudaSuccess;
  });
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  // Works without a driver too: CUDA then reports version 0.
  return api(
      __func__,
      [&] {
        if (!driverVersion)
          return cudaErrorInvalidValue;
        *driverVersion = state().no_driver ? 0 : kDriverVersion;
        return cudaSuccess;
      },
      false);
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  return api(
      __func__,
      [&] {
        if (!runtimeVersion)
          return cudaErrorInvalidValue;
        *runtimeVersion = kRuntimeVersion;
        return cudaSuccess;
      },
      false);
}

cudaError_t cudaDeviceSynchronize(void) {
  return api(__func__, [&] {
    if (cudaError_t e = check_device_sync())
      return e;
    release_pools_on_sync();
    return cudaSuccess;
  });
}

} // extern "C"
