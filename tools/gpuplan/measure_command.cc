// gpuplan measure collectives | train | report: runs the real thing on the user's machines,
// through MPI (CPU processes) or NCCL (GPUs), under mpirun. Rank 0 prints and writes --json.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>

#include "command.h"
#include "flags.h"
#include "gpuplan/collective.h"
#include "gpuplan/json_writer.h"
#include "gpuplan/measurement.h"
#include "gpuplan/suggest.h"
#include "measure/communicator.h"
#include "measure/harness.h"
#include "report.h"

namespace gpuplan::cli {
namespace {

constexpr const char* kName = "measure";

Result<double> bytes_flag(const char* flag, const std::string& text) {
  Result<double> v = parse_quantity(text, Dimension::kBytes);
  if (!v)
    return fail(flag, v.error().what, v.error().hint);
  return check_field(fields::kBufferBytes, *v, flag);
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty()
             ? 0.0
             : v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

int write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    return report_error(kName, Error{path, "cannot write the file", "check the folder exists"});
  }
  return kExitOk;
}

Result<std::unique_ptr<measure::Communicator>> communicator(const std::string& backend) {
  if (backend == "mpi")
    return measure::make_mpi_communicator();
  if (backend == "nccl")
    return measure::make_nccl_communicator();
  return fail("--backend", fmt::format("unknown backend '{}'", backend), "expected mpi or nccl");
}

int collectives(const std::vector<std::string>& args) {
  CLI::App app(
      "Collective sweep: time, algorithm and bus bandwidth (nccl-tests definitions), "
      "correctness, per message size. Run under mpirun.",
      "gpuplan measure collectives");
  std::string op = "all_reduce", min = "8B", max = "256MiB", backend = "mpi", json;
  double factor = 2, timeout = 60;
  int iters = 20, warmup = 5, hang = -1, kill = -1;
  app.add_option("--op", op, "all_reduce | all_gather | reduce_scatter | broadcast | all_to_all");
  app.add_option("--min", min, "smallest message, e.g. 8B");
  app.add_option("--max", max, "largest message, e.g. 256MiB");
  app.add_option("--factor", factor, "size multiplier between steps (default 2)")
      ->check(rule(fields::kSizeFactor));
  app.add_option("--iters", iters, "timed iterations per size (default 20)")
      ->check(rule(fields::kIterations));
  app.add_option("--warmup", warmup, "untimed iterations first (default 5)")
      ->check(rule(fields::kWarmup));
  app.add_option("--backend", backend, "mpi (CPU processes) | nccl (one GPU per rank)");
  app.add_option("--timeout", timeout, "seconds without progress before the run is aborted")
      ->check(rule(fields::kTimeout));
  app.add_option("--json", json, "also write the results to this file");
  app.add_option("--inject-hang", hang, "fault injection: this rank hangs (tests the watchdog)");
  app.add_option("--inject-kill", kill, "fault injection: this rank dies mid-sweep");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  measure::SweepOptions o;
  Result<measure::Op> parsed = measure::parse_op(op);
  if (!parsed)
    return report_error(kName, parsed.error(), kExitUsage);
  o.op = *parsed;
  Result<double> lo = bytes_flag("--min", min);
  if (!lo)
    return report_error(kName, lo.error(), kExitUsage);
  Result<double> hi = bytes_flag("--max", max);
  if (!hi)
    return report_error(kName, hi.error(), kExitUsage);
  if (*hi < *lo) {
    return report_error(kName, Error{"--max", "is smaller than --min", "need --min <= --max"},
                        kExitUsage);
  }
  o.min_bytes = *lo;
  o.max_bytes = *hi;
  o.factor = factor;
  o.iters = iters;
  o.warmup = warmup;
  o.inject_hang_rank = hang;
  o.inject_kill_rank = kill;
  measure::MpiSession mpi(nullptr, nullptr);
  auto comm = communicator(backend);
  if (!comm)
    return report_error(kName, comm.error());
  measure::Watchdog dog(**comm, timeout);
  const std::vector<measure::SizePoint> points = measure::sweep_collective(**comm, dog, o);
  if ((*comm)->rank() != 0)
    return kExitOk;
  const int n = (*comm)->size();
  emit(
      "# gpuplan measure collectives: {}, {} rank(s), backend {}; time is the slowest "
      "rank's per iteration\n",
      op, n, backend);
  Table t({"size (B)", "count", "min (us)", "median (us)", "max (us)", "algbw (GB/s)",
           "busbw (GB/s)", "wrong"},
          {true, true, true, true, true, true, true, true});
  JsonWriter w;
  w.begin_object()
      .field("kind", "collectives")
      .field("op", op)
      .field("backend", backend)
      .field("ranks", n)
      .key("points")
      .begin_array();
  int64_t wrong = 0;
  for (const measure::SizePoint& p : points) {
    t.add({grouped(static_cast<int64_t>(p.bytes)), grouped(p.count),
           fmt::format("{:.1f}", p.min_s * 1e6), fmt::format("{:.1f}", p.median_s * 1e6),
           fmt::format("{:.1f}", p.max_s * 1e6), fmt::format("{:.3f}", p.algbw / 1e9),
           fmt::format("{:.3f}", p.busbw / 1e9), fmt::format("{}", p.wrong)});
    w.begin_object()
        .field("bytes", p.bytes)
        .field("count", p.count)
        .field("min_s", p.min_s)
        .field("median_s", p.median_s)
        .field("max_s", p.max_s)
        .field("algbw_bytes_per_s", p.algbw)
        .field("busbw_bytes_per_s", p.busbw)
        .field("wrong", p.wrong)
        .end_object();
    wrong += p.wrong;
  }
  w.end_array().end_object();
  emit("{}", t.str());
  if (!json.empty() && write_file(json, w.str()) != kExitOk)
    return kExitError;
  if (wrong > 0) {
    return report_error(kName, Error{"", fmt::format("{} elements were wrong", wrong),
                                     "the collective returned incorrect data"});
  }
  emit("# correctness: every element of every result checked, 0 wrong\n");
  return kExitOk;
}

int train(const std::vector<std::string>& args) {
  CLI::App app(
      "Data-parallel training loop on a real network: forward, backward, bucketed "
      "gradient all-reduce overlapped with backward, update. Run under mpirun.",
      "gpuplan measure train");
  measure::TrainOptions o;
  std::string backend = "mpi", bucket = "25MiB", json, model, data;
  double timeout = 120;
  bool no_overlap = false;
  app.add_option("--hidden", o.hidden, "hidden size (default 1024)")->check(rule(fields::kWidth));
  app.add_option("--layers", o.layers, "MLP blocks (default 4)")->check(rule(fields::kLayers));
  app.add_option("--seq", o.seq, "tokens per sequence (default 512)")->check(rule(fields::kSeq));
  app.add_option("--per-worker-batch", o.per_worker_batch,
                 "sequences per worker per step (default 8)")
      ->check(rule(fields::kPerGpuBatch));
  app.add_option("--model", model,
                 "take the hidden size from a catalog model (scaled down by --layers)");
  app.add_option("--steps", o.steps, "timed steps (default 10)")->check(rule(fields::kIterations));
  app.add_option("--warmup", o.warmup, "untimed steps first (default 2)")
      ->check(rule(fields::kWarmup));
  app.add_option("--bucket", bucket, "gradient bucket size (default 25MiB, PyTorch DDP's)");
  app.add_flag("--no-overlap", no_overlap,
               "reduce gradients after the backward pass, not during it");
  app.add_flag("--verify", o.verify,
               "rank 0 also trains one worker on the whole global batch and compares weights");
  app.add_option("--backend", backend,
                 "mpi (CPU, fp32, OpenBLAS) | nccl (GPU, bf16 cuBLAS, one GPU per rank)");
  app.add_option("--timeout", timeout, "seconds without progress before the run is aborted")
      ->check(rule(fields::kTimeout));
  app.add_option("--json", json, "also write the results to this file");
  app.add_option("--data", data, "catalog directory (for --model)");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  if (!model.empty()) {
    Result<Catalog> c = load_catalog(data);
    if (!c)
      return report_error(kName, c.error());
    Result<Model> m = c->model(model);
    if (!m)
      return report_error(kName, m.error());
    o.hidden = m->hidden;
  }
  Result<double> b = bytes_flag("--bucket", bucket);
  if (!b)
    return report_error(kName, b.error(), kExitUsage);
  if (backend == "nccl" && o.verify) {
    return report_error(kName,
                        Error{"--verify", "the GPU loop has no single-worker check",
                              "verify the data-parallel arithmetic with --backend mpi"},
                        kExitUsage);
  }
  o.bucket_bytes = *b;
  o.overlap = !no_overlap;
  measure::MpiSession mpi(nullptr, nullptr);
  auto comm = communicator(backend);
  if (!comm)
    return report_error(kName, comm.error());
  measure::Watchdog dog(**comm, timeout);
  const measure::TrainResult r = backend == "nccl" ? measure::train_loop_gpu(**comm, dog, o)
                                                   : measure::train_loop(**comm, dog, o);
  if ((*comm)->rank() != 0)
    return kExitOk;
  const double step = quantile(r.step_s, 0.5);
  const double p90 = quantile(r.step_s, 0.9);
  emit(
      "# gpuplan measure train: {} rank(s), backend {}, {} parameters, {} x {} tokens per "
      "worker, {} bucket(s), overlap {}\n",
      r.ranks, backend, grouped(r.parameters), o.per_worker_batch, o.seq, r.buckets,
      o.overlap ? "on" : "off");
  Table t({"per step (slowest rank)", "median (ms)", "p90 (ms)"}, {false, true, true});
  auto row = [&](const char* name, const std::vector<double>& v) {
    t.add({name, fmt::format("{:.2f}", quantile(v, 0.5) * 1e3),
           fmt::format("{:.2f}", quantile(v, 0.9) * 1e3)});
  };
  row("step", r.step_s);
  row("compute (forward + backward)", r.compute_s);
  row("exposed gradient all-reduce", r.exposed_s);
  row("update", r.update_s);
  emit("{}", t.str());
  emit("throughput  {} tokens/s, {:.1f} GFLOP/s per rank\n",
       grouped(std::llround(r.tokens_per_step / step)),
       r.flops_per_step / quantile(r.compute_s, 0.5) / 1e9);
  int status = kExitOk;
  if (o.verify) {
    // fp32 sums in a different order (rows split over ranks) differ in the last bits.
    const double tolerance = 1e-4;
    emit(
        "verify      {} worker(s) x batch {} vs 1 worker x batch {}: max relative weight "
        "difference {:.3g} ({} {:g})\n",
        r.ranks, o.per_worker_batch, o.per_worker_batch * r.ranks, r.verify_max_rel_diff,
        r.verify_max_rel_diff <= tolerance ? "within" : "OVER", tolerance);
    if (r.verify_max_rel_diff > tolerance) {
      status = report_error(
          kName, Error{"--verify", "data-parallel weights differ from the single-worker run", ""});
    }
  }
  if (!json.empty()) {
    JsonWriter w;
    w.begin_object()
        .field("kind", "train")
        .field("backend", backend)
        .field("ranks", r.ranks)
        .field("hidden", o.hidden)
        .field("layers", o.layers)
        .field("seq", o.seq)
        .field("per_worker_batch", o.per_worker_batch)
        .field("overlap", o.overlap)
        .field("bucket_bytes", o.bucket_bytes)
        .field("parameters", r.parameters)
        .field("tokens_per_step", r.tokens_per_step)
        .field("flops_per_step_per_rank", r.flops_per_step)
        .field("gradient_bytes", r.gradient_bytes)
        .field("step_median_s", step)
        .field("step_p90_s", p90)
        .field("compute_median_s", quantile(r.compute_s, 0.5))
        .field("exposed_comm_median_s", quantile(r.exposed_s, 0.5))
        .field("update_median_s", quantile(r.update_s, 0.5));
    if (o.verify)
      w.field("verify_max_rel_diff", r.verify_max_rel_diff);
    w.key("step_s").begin_array();
    for (double s : r.step_s)
      w.value(s);
    w.end_array().end_object();
    if (write_file(json, w.str()) != kExitOk)
      return kExitError;
  }
  return status;
}

int gemm(const std::vector<std::string>& args) {
  CLI::App app("Square GEMMs n x n x n on each rank: fp32 OpenBLAS (mpi) or bf16 cuBLAS (nccl).",
               args.front());
  std::vector<int64_t> sizes = {1024, 2048, 4096, 8192};
  std::string backend = "mpi", json;
  int iters = 10;
  app.add_option("--sizes", sizes, "matrix sizes, e.g. 1024,4096,16384")
      ->delimiter(',')
      ->check(rule(fields::kGemmSize));
  app.add_option("--iters", iters, "timed runs per size (default 10)")
      ->check(rule(fields::kIterations));
  app.add_option("--backend", backend, "mpi (CPU, fp32) | nccl (GPU, bf16)");
  app.add_option("--json", json, "also write the results to this file");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  measure::MpiSession mpi(nullptr, nullptr);
  auto comm = communicator(backend);
  if (!comm)
    return report_error(kName, comm.error());
  const std::vector<measure::GemmPoint> points = measure::gemm_sweep(**comm, sizes, iters);
  if ((*comm)->rank() != 0)
    return kExitOk;
  emit("# gpuplan measure gemm: backend {} ({}), rank 0\n", backend,
       backend == "nccl" ? "bf16 in, fp32 accumulate" : "fp32");
  Table t({"n", "median (ms)", "TFLOP/s"}, {true, true, true});
  JsonWriter w;
  w.begin_object().field("kind", "gemm").field("backend", backend).key("points").begin_array();
  for (const measure::GemmPoint& p : points) {
    t.add({grouped(p.n), fmt::format("{:.3f}", p.median_s * 1e3),
           fmt::format("{:.2f}", p.flops_per_s / 1e12)});
    w.begin_object()
        .field("n", p.n)
        .field("median_s", p.median_s)
        .field("flops_per_s", p.flops_per_s)
        .end_object();
  }
  w.end_array().end_object();
  emit("{}", t.str());
  return json.empty() ? kExitOk : write_file(json, w.str());
}

int memory(const std::vector<std::string>& args) {
  CLI::App app("Copy bandwidth of each rank's memory: host memcpy (mpi) or GPU HBM (nccl).",
               args.front());
  std::string backend = "mpi", size = "1GiB", json;
  int iters = 10;
  app.add_option("--size", size, "bytes copied per run (default 1GiB)");
  app.add_option("--iters", iters, "timed runs (default 10)")->check(rule(fields::kIterations));
  app.add_option("--backend", backend, "mpi (host memory) | nccl (GPU memory)");
  app.add_option("--json", json, "also write the results to this file");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  Result<double> bytes = bytes_flag("--size", size);
  if (!bytes)
    return report_error(kName, bytes.error(), kExitUsage);
  measure::MpiSession mpi(nullptr, nullptr);
  auto comm = communicator(backend);
  if (!comm)
    return report_error(kName, comm.error());
  const measure::MemoryPoint p = measure::memory_probe(**comm, *bytes, iters);
  if ((*comm)->rank() != 0)
    return kExitOk;
  emit(
      "# gpuplan measure memory: backend {}, rank 0\ncopy of {}: median {:.3f} ms, "
      "{:.1f} GB/s (read + write)\n",
      backend, size, p.median_s * 1e3, p.bytes_per_s / 1e9);
  JsonWriter w;
  w.begin_object()
      .field("kind", "memory")
      .field("backend", backend)
      .field("bytes", p.bytes)
      .field("median_s", p.median_s)
      .field("bytes_per_s", p.bytes_per_s)
      .end_object();
  return json.empty() ? kExitOk : write_file(json, w.str());
}

int report(const std::vector<std::string>& args) {
  CLI::App app(
      "Combine training measurements at several rank counts: scaling efficiency by "
      "the source document's formula, next to gpuplan's prediction.",
      "gpuplan measure report");
  std::vector<std::string> files;
  std::string fabric, data;
  app.add_option("files", files, "JSON files from 'gpuplan measure train --json'")->required();
  app.add_option("--fabric", fabric, "catalog fabric the ranks talk over, for the prediction");
  app.add_option("--data", data, "catalog directory");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  std::vector<TrainRun> runs;
  for (const std::string& f : files) {
    Result<Measurement> m = read_measurement(f);
    if (!m)
      return report_error(kName, m.error());
    if (!m->is_train) {
      return report_error(
          kName, Error{f, "is a collectives measurement", "report combines 'measure train' files"});
    }
    runs.push_back(m->train);
  }
  // The prediction needs the fabric, and the catalog it comes from.
  std::optional<Catalog> catalog;
  const Fabric* on = nullptr;
  if (!fabric.empty()) {
    Result<Catalog> c = load_catalog(data);
    if (!c)
      return report_error(kName, c.error());
    catalog = std::move(*c);
    Result<const Fabric*> f = catalog->fabric(fabric);
    if (!f)
      return report_error(kName, Error{"--fabric", f.error().what, f.error().hint});
    on = *f;
  }
  const MeasureReport rep =
      measure_report(std::move(runs), on, catalog ? catalog->train_params() : TrainParams{});
  Table t({"ranks", "step (ms)", "p90 (ms)", "exposed comm (ms)", "tokens/s", "efficiency (%)",
           "predicted (%)"},
          {true, true, true, true, true, true, true});
  for (const ReportRow& row : rep.rows) {
    const TrainRun& r = row.run;
    t.add({fmt::format("{}", r.ranks), fmt::format("{:.2f}", r.step_median_s * 1e3),
           fmt::format("{:.2f}", r.step_p90_s * 1e3),
           fmt::format("{:.2f}", r.exposed_median_s * 1e3), grouped(std::llround(row.tokens_per_s)),
           fmt::format("{:.1f}", row.efficiency_pct),
           row.predicted_pct ? fmt::format("{:.1f}", *row.predicted_pct) : std::string("-")});
  }
  emit(
      "efficiency = T1 / (TN x N) x 100 on the time to process the same tokens, against {} "
      "rank(s)\n{}",
      rep.base_ranks, t.str());
  return kExitOk;
}

}  // namespace

int run_measure_here(const std::vector<std::string>& args) {
  using Sub = int (*)(const std::vector<std::string>&);
  const std::vector<std::pair<std::string, Sub>> subs = {{"collectives", collectives},
                                                         {"train", train},
                                                         {"gemm", gemm},
                                                         {"memory", memory},
                                                         {"report", report}};
  if (args.size() < 2 || args[1] == "--help" || args[1] == "-h") {
    emit(
        "usage: gpuplan measure collectives|train|gemm|memory|report [options]\n"
        "  under mpirun: mpirun -np N gpuplan measure collectives ...\n");
    return args.size() < 2 ? kExitUsage : kExitOk;
  }
  std::vector<std::string> rest = {fmt::format("gpuplan measure {}", args[1])};
  rest.insert(rest.end(), args.begin() + 2, args.end());
  std::vector<std::string> names;
  for (const auto& [name, run] : subs) {
    if (name == args[1]) {
      return run(rest);
    }
    names.push_back(name);
  }
  return report_error(
      kName,
      Error{"", fmt::format("unknown measurement '{}'", args[1]), suggestion_hint(args[1], names)},
      kExitUsage);
}

}  // namespace gpuplan::cli
