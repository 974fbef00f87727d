// Every CUDA, NCCL and cuBLAS call checked, with file:line in the message.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace ovv {

struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) throw GpuError(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " + cudaGetErrorString(e));
}
inline void nccl_check(ncclResult_t e, const char* what, const char* file, int line) {
  if (e != ncclSuccess) throw GpuError(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " + ncclGetErrorString(e));
}
inline void cublas_check(cublasStatus_t e, const char* what, const char* file, int line) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw GpuError(std::string(file) + ":" + std::to_string(line) + ": " + what + ": cuBLAS status " + std::to_string(static_cast<int>(e)));
}

}  // namespace ovv

#define CUDA_CHECK(x) ::ovv::cuda_check((x), #x, __FILE__, __LINE__)
#define NCCL_CHECK(x) ::ovv::nccl_check((x), #x, __FILE__, __LINE__)
#define CUBLAS_CHECK(x) ::ovv::cublas_check((x), #x, __FILE__, __LINE__)
