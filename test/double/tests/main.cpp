// Catch2 v2 needs one TU to provide main; v3 links Catch2::Catch2WithMain.
#if defined(GRAPHCAP_CUDA_DOUBLE_CATCH2_MAIN)
#define CATCH_CONFIG_MAIN
#endif
#include "catch_shim.hpp"
