// The GPU backend: NCCL collectives between one GPU per rank, CUDA buffers on the device.
// The ranks find each other through MPI (the NCCL unique id is broadcast from rank 0), and the
// harness's own bookkeeping (barriers, maxima) stays on MPI.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdlib>

#include "measure/communicator.h"

namespace gpuplan::measure {
namespace {

class NcclRequest : public Request {
 public:
  explicit NcclRequest(cudaStream_t stream) {
    cudaEventCreateWithFlags(&done_, cudaEventDisableTiming);
    cudaEventRecord(done_, stream);
  }
  ~NcclRequest() override { cudaEventDestroy(done_); }
  void wait() override { cudaEventSynchronize(done_); }

 private:
  cudaEvent_t done_{};
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(std::unique_ptr<Communicator> host, ncclComm_t comm, cudaStream_t stream)
      : host_(std::move(host)), comm_(comm), stream_(stream) {}
  ~NcclCommunicator() override {
    ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string backend() const override { return "nccl"; }

  void run(Op op, const float* send, float* recv, size_t count) override {
    const size_t share = count / static_cast<size_t>(size());
    ncclResult_t r = ncclSuccess;
    switch (op) {
      case Op::kAllReduce:
        r = ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm_, stream_);
        break;
      case Op::kAllGather:
        r = ncclAllGather(send, recv, share, ncclFloat, comm_, stream_);
        break;
      case Op::kReduceScatter:
        r = ncclReduceScatter(send, recv, share, ncclFloat, ncclSum, comm_, stream_);
        break;
      case Op::kBroadcast:
        r = ncclBroadcast(send, recv, count, ncclFloat, 0, comm_, stream_);
        break;
      case Op::kAllToAll:
        ncclGroupStart();
        for (int peer = 0; peer < size(); ++peer) {
          ncclSend(send + static_cast<size_t>(peer) * share, share, ncclFloat, peer, comm_,
                   stream_);
          ncclRecv(recv + static_cast<size_t>(peer) * share, share, ncclFloat, peer, comm_,
                   stream_);
        }
        r = ncclGroupEnd();
        break;
    }
    if (r != ncclSuccess) {
      abort(fmt::format("gpuplan measure: error: rank {}: NCCL {} failed: {}", rank(), op_name(op),
                        ncclGetErrorString(r)));
    }
  }
  std::unique_ptr<Request> start_all_reduce(float* data, size_t count) override {
    ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream_);
    return std::make_unique<NcclRequest>(stream_);
  }
  void synchronize() override { cudaStreamSynchronize(stream_); }
  void barrier() override { host_->barrier(); }
  double max(double v) override { return host_->max(v); }
  double sum(double v) override { return host_->sum(v); }
  [[noreturn]] void abort(const std::string& message) override {
    host_->abort(message);
    std::abort();  // not reached: the MPI abort ends the process
  }
  float* allocate(size_t count) override {
    void* p = nullptr;
    if (cudaMalloc(&p, (count == 0 ? 1 : count) * sizeof(float)) != cudaSuccess) {
      abort(fmt::format("gpuplan measure: error: rank {}: cannot allocate {} bytes on the GPU",
                        rank(), count * sizeof(float)));
    }
    cudaMemset(p, 0, count * sizeof(float));
    return static_cast<float*>(p);
  }
  void release(float* p) override { cudaFree(p); }
  void to_device(float* device, const float* host, size_t count) override {
    cudaMemcpy(device, host, count * sizeof(float), cudaMemcpyHostToDevice);
  }
  void to_host(float* host, const float* device, size_t count) override {
    cudaMemcpy(host, device, count * sizeof(float), cudaMemcpyDeviceToHost);
  }

 private:
  std::unique_ptr<Communicator> host_;
  ncclComm_t comm_;
  cudaStream_t stream_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_nccl_communicator() {
  std::unique_ptr<Communicator> host = make_mpi_communicator();
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  // Every rank must agree before any collective starts, so the verdict is reduced first.
  const double usable = host->sum(e == cudaSuccess && devices > 0 ? 1.0 : 0.0);
  if (usable < host->size()) {
    return fail("--backend",
                fmt::format("rank {} sees no usable GPU ({})", host->rank(),
                            e == cudaSuccess ? "0 devices" : cudaGetErrorString(e)),
                "run with --backend mpi on machines without GPUs");
  }
  cudaSetDevice(host->rank() % devices);
  ncclUniqueId id;
  if (host->rank() == 0) {
    ncclGetUniqueId(&id);
  }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  const ncclResult_t r = ncclCommInitRank(&comm, host->size(), id, host->rank());
  if (r != ncclSuccess) {
    return fail("--backend", fmt::format("NCCL could not start: {}", ncclGetErrorString(r)),
                "check NCCL_DEBUG=INFO output");
  }
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  return std::unique_ptr<Communicator>(
      std::make_unique<NcclCommunicator>(std::move(host), comm, stream));
}

}  // namespace gpuplan::measure
