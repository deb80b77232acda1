#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <thread>

#include "measure/harness.h"

namespace gpuplan::measure {
namespace {

// Small integers, so float sums are exact and the expected result is known.
float value(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * ((i % 5) + 1));
}

// The element every rank should hold at output index i.
float expected(Op op, int rank, int n, int64_t count, int64_t i) {
  const int64_t share = count / n;
  switch (op) {
    case Op::kAllReduce: {
      return static_cast<float>((i % 5) + 1) * static_cast<float>(n * (n + 1) / 2);
    }
    case Op::kAllGather:
      return value(static_cast<int>(i / share), i % share);
    case Op::kReduceScatter: {
      const int64_t g = rank * share + i;
      return static_cast<float>((g % 5) + 1) * static_cast<float>(n * (n + 1) / 2);
    }
    case Op::kBroadcast:
      return value(0, i);
    case Op::kAllToAll: {
      const int64_t from = i / share;
      return value(static_cast<int>(from), rank * share + i % share);
    }
  }
  return 0;
}

// Elements each rank receives: a reduce-scatter leaves one share, the others the whole buffer.
int64_t output_count(Op op, int n, int64_t count) {
  return op == Op::kReduceScatter ? count / n : count;
}

}  // namespace

std::vector<SizePoint> sweep_collective(Communicator& comm, Watchdog& dog, const SweepOptions& o) {
  const int n = comm.size();
  std::vector<SizePoint> out;
  for (double bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    // Element counts divide evenly over the ranks, as collectives with shares need.
    int64_t count = std::max<int64_t>(1, static_cast<int64_t>(bytes / sizeof(float)));
    count = std::max<int64_t>(n, count - count % n);
    const int64_t share = count / n;
    const int64_t in_count = o.op == Op::kAllGather ? share : count;
    const int64_t out_n = output_count(o.op, n, count);
    std::vector<float> host_in(static_cast<size_t>(in_count));
    for (int64_t i = 0; i < in_count; ++i) {
      host_in[static_cast<size_t>(i)] = value(comm.rank(), i);
    }
    // Allocated and written once before timing, so first-touch costs stay out of the loop.
    float* send = comm.allocate(static_cast<size_t>(in_count));
    float* recv = comm.allocate(static_cast<size_t>(std::max(out_n, in_count)));
    comm.to_device(send, host_in.data(), host_in.size());
    std::vector<double> times;
    const std::string what =
        fmt::format("{} of {} bytes", op_name(o.op), count * static_cast<int64_t>(sizeof(float)));
    for (int it = 0; it < o.warmup + o.iters; ++it) {
      comm.barrier();
      dog.begin(what);
      if (comm.rank() == o.inject_hang_rank) {
        std::this_thread::sleep_for(std::chrono::hours(1));  // fault injection: a hung rank
      }
      if (comm.rank() == o.inject_kill_rank) {
        std::raise(SIGKILL);  // fault injection: a rank that dies, as under the OOM killer
      }
      const double t0 = seconds_now();
      comm.run(o.op, send, recv, static_cast<size_t>(count));
      comm.synchronize();
      const double t = seconds_now() - t0;
      dog.end();
      const double slowest = comm.max(t);
      if (it >= o.warmup) {
        times.push_back(slowest);
      }
    }
    std::vector<float> host_out(static_cast<size_t>(out_n));
    comm.to_host(host_out.data(), recv, host_out.size());
    int64_t wrong = 0;
    for (int64_t i = 0; i < out_n; ++i) {
      wrong += host_out[static_cast<size_t>(i)] != expected(o.op, comm.rank(), n, count, i);
    }
    comm.release(send);
    comm.release(recv);
    std::sort(times.begin(), times.end());
    SizePoint p;
    p.count = count;
    p.bytes = static_cast<double>(count) * sizeof(float);
    p.min_s = times.front();
    p.max_s = times.back();
    p.median_s = times[times.size() / 2];
    p.algbw = p.bytes / p.median_s;
    p.busbw = p.algbw * bus_factor(o.op, n);
    p.wrong = static_cast<int64_t>(comm.sum(static_cast<double>(wrong)));
    out.push_back(p);
  }
  return out;
}

}  // namespace gpuplan::measure
