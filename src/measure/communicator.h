// One rank's view of a group of processes that run collectives together: the seam between the
// measurement harness and the engines that move the bytes (MPI for CPU processes, NCCL for GPUs).
// Buffers are float32; sizes are element counts. Every call is collective: all ranks call it
// in the same order.
#ifndef GPUPLAN_SRC_MEASURE_COMMUNICATOR_H_
#define GPUPLAN_SRC_MEASURE_COMMUNICATOR_H_

#include <cstddef>
#include <memory>
#include <string>

#include "gpuplan/result.h"

namespace gpuplan::measure {

enum class Op { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll };

std::string_view op_name(Op op);
Result<Op> parse_op(std::string_view name);

// nccl-tests' bus-bandwidth factor for `op` on n ranks: all-reduce 2(n-1)/n, all-gather,
// reduce-scatter and all-to-all (n-1)/n, broadcast 1.
double bus_factor(Op op, int n);

// A pending non-blocking all-reduce.
class Request {
 public:
  virtual ~Request() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "mpi", "nccl"

  // Runs `op` on `count` elements per rank (the nccl-tests convention: the all-gather output and
  // the reduce-scatter input are `count`; each rank's share is count / size).
  // Buffers live where the backend computes (host for MPI, device for NCCL).
  virtual void run(Op op, const float* send, float* recv, size_t count) = 0;
  // Sum all-reduce in place, started now, finished by wait().
  virtual std::unique_ptr<Request> start_all_reduce(float* data, size_t count) = 0;
  // Blocks until the backend's queued work is done (a device synchronise for NCCL).
  virtual void synchronize() = 0;

  // Host-side helpers for the harness itself (always over MPI).
  virtual void barrier() = 0;
  virtual double max(double v) = 0;
  virtual double sum(double v) = 0;
  // Aborts every rank with `message` printed by this one (a hang or a dead peer).
  [[noreturn]] virtual void abort(const std::string& message) = 0;

  // Buffers in the backend's memory space.
  virtual float* allocate(size_t count) = 0;
  virtual void release(float* p) = 0;
  virtual void to_device(float* device, const float* host, size_t count) = 0;
  virtual void to_host(float* host, const float* device, size_t count) = 0;
};

// MPI_COMM_WORLD. REQUIRES: MPI initialised (see MpiSession).
std::unique_ptr<Communicator> make_mpi_communicator();

// NCCL over one GPU per rank (rank % visible devices); an Error when this build or this
// machine has no GPU.
Result<std::unique_ptr<Communicator>> make_nccl_communicator();

// Initialises MPI for the lifetime of the object (and finalises it), with thread support for
// the watchdog.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

}  // namespace gpuplan::measure

#endif  // GPUPLAN_SRC_MEASURE_COMMUNICATOR_H_
