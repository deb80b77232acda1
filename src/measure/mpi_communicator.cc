#include <fmt/format.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpuplan/measurement.h"
#include "gpuplan/suggest.h"
#include "measure/communicator.h"

namespace gpuplan::measure {
namespace {

class MpiRequest : public Request {
 public:
  MPI_Request request = MPI_REQUEST_NULL;
  void wait() override { MPI_Wait(&request, MPI_STATUS_IGNORE); }
};

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void run(Op op, const float* send, float* recv, size_t count) override {
    const int n = static_cast<int>(count);
    const int share = n / size_;
    switch (op) {
      case Op::kAllReduce:
        // MPI forbids aliased buffers; an in-place reduction says so explicitly.
        MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, n, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        break;
      case Op::kAllGather:
        MPI_Allgather(send, share, MPI_FLOAT, recv, share, MPI_FLOAT, MPI_COMM_WORLD);
        break;
      case Op::kReduceScatter:
        MPI_Reduce_scatter_block(send, recv, share, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
      case Op::kBroadcast:
        if (rank_ == 0 && send != recv) {
          std::copy(send, send + count, recv);
        }
        MPI_Bcast(recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
      case Op::kAllToAll:
        MPI_Alltoall(send, share, MPI_FLOAT, recv, share, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    }
  }
  std::unique_ptr<Request> start_all_reduce(float* data, size_t count) override {
    auto r = std::make_unique<MpiRequest>();
    MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &r->request);
    return r;
  }
  void synchronize() override {}
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  double max(double v) override {
    double out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
  double sum(double v) override {
    double out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }
  float* allocate(size_t count) override { return new float[count == 0 ? 1 : count](); }
  void release(float* p) override { delete[] p; }
  void to_device(float* device, const float* host, size_t count) override {
    std::copy(host, host + count, device);
  }
  void to_host(float* host, const float* device, size_t count) override {
    std::copy(device, device + count, host);
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kAllReduce:
      return "all_reduce";
    case Op::kAllGather:
      return "all_gather";
    case Op::kReduceScatter:
      return "reduce_scatter";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kAllToAll:
      return "all_to_all";
  }
  return "?";
}

Result<Op> parse_op(std::string_view name) {
  const std::vector<std::string> names = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                          "all_to_all"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) {
      return static_cast<Op>(i);
    }
  }
  return fail("--op", fmt::format("unknown collective '{}'", name), suggestion_hint(name, names));
}

double bus_factor(Op op, int n) {
  return gpuplan::bus_factor(std::string(op_name(op)), n);
}

std::unique_ptr<Communicator> make_mpi_communicator() {
  return std::make_unique<MpiCommunicator>();
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
}

MpiSession::~MpiSession() {
  MPI_Finalize();
}

}  // namespace gpuplan::measure
