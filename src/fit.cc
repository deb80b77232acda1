#include "gpuplan/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpuplan/training.h"

namespace gpuplan {
namespace {

// The training job `software` would run `memory` as, for software_layout_problem.
TrainJob run_by(const MemoryJob& memory, const Software& software) {
  TrainJob t;
  t.memory = memory;
  t.software = software;
  return t;
}

constexpr Lang kEn = Lang::kEn;
constexpr Lang kPt = Lang::kPt;

// The (pp, tp) pairs with pp * tp dividing n, tp <= max_tp, in increasing pp then tp.
std::vector<std::pair<int64_t, int64_t>> stage_and_tensor_sizes(int64_t n, int64_t max_tp) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t pp = 1; pp <= n; ++pp) {
    if (n % pp != 0) {
      continue;
    }
    for (int64_t tp = 1; tp <= std::min(max_tp, n / pp); ++tp) {
      if ((n / pp) % tp == 0) {
        out.emplace_back(pp, tp);
      }
    }
  }
  return out;
}

}  // namespace

FitReport fit_on_gpu(const Model& model, const MemoryJob& job, const Gpu& gpu,
                     const MemoryParams& params) {
  FitReport r;
  r.memory = memory_per_gpu(model, job, params);
  FitVerdict& v = r.verdict;
  v.usable = gpu.memory_usable;
  v.required = r.memory.total();
  v.margin = v.usable - v.required;
  v.fits = v.margin.si() >= 0;
  if (v.fits) {
    v.reason = {fmt::format("fits: {} of {} usable, {} to spare", gib_text(v.required, kEn),
                            gib_text(v.usable, kEn), gib_text(v.margin, kEn)),
                fmt::format("cabe: {} de {} utilizáveis, sobram {}", gib_text(v.required, kPt),
                            gib_text(v.usable, kPt), gib_text(v.margin, kPt))};
  } else {
    const Bytes short_by(-v.margin.si());
    v.reason = {fmt::format("does not fit: needs {} per GPU, {} has {} usable ({} short)",
                            gib_text(v.required, kEn), gpu.id, gib_text(v.usable, kEn),
                            gib_text(short_by, kEn)),
                fmt::format("não cabe: precisa de {} por GPU, {} tem {} utilizáveis (faltam {})",
                            gib_text(v.required, kPt), gpu.id, gib_text(v.usable, kPt),
                            gib_text(short_by, kPt))};
  }
  if (job.task == Task::kInfer) {
    KvCapacity kv;
    kv.bytes_per_token = kv_bytes_per_token_per_gpu(model, job, r.memory.stage_layers);
    kv.budget = v.usable - (r.memory.total() - r.memory.kv_cache);
    kv.tokens = kv.budget.si() > 0
                    ? static_cast<int64_t>(std::floor(kv.budget.si() / kv.bytes_per_token))
                    : 0;
    kv.max_context =
        context_held_in(model, static_cast<double>(kv.tokens) /
                                   static_cast<double>(std::max<int64_t>(1, job.batch)));
    if (model.max_positions > 0) {
      kv.max_context = std::min(kv.max_context, model.max_positions);
    }
    r.kv = kv;
  }
  return r;
}

SmallestFit smallest_fit(const Model& model, const MemoryJob& job, const Gpu& gpu,
                         const MemoryParams& params, const FitSearch& search) {
  SmallestFit best;
  const bool training = is_training(job.task);
  const std::vector<int64_t> zero_options = training && search.vary_zero
                                                ? std::vector<int64_t>{0, 1, 2, 3}
                                                : std::vector<int64_t>{job.layout.zero};
  const std::vector<Recompute> recompute_options =
      training && search.vary_recompute
          ? std::vector<Recompute>{Recompute::kNone, Recompute::kSelective, Recompute::kFull}
          : std::vector<Recompute>{job.recompute};
  const Software& sw = search.software;
  const bool runs_sequence_parallel = sw.framework == nullptr || sw.sequence_parallel();
  Bytes least_required(1e300);
  for (int64_t n = 1; n <= search.max_gpus; n = n < 8 ? n + 1 : n + 8) {
    const auto sizes = stage_and_tensor_sizes(n, search.max_tp);
    for (Recompute rc : recompute_options) {
      for (int64_t zero : zero_options) {
        for (const auto& [pp, tp] : sizes) {
          {
            const int64_t dp = n / (pp * tp);
            // Inference is one replica; ZeRO over a single replica is the same as no ZeRO.
            if ((!training && dp != 1) || (search.vary_zero && zero > 0 && dp == 1)) {
              continue;
            }
            MemoryJob candidate = job;
            candidate.recompute = rc;
            candidate.layout.tp = tp;
            candidate.layout.pp = pp;
            candidate.layout.dp = dp;
            candidate.layout.zero = zero;
            candidate.layout.virtual_stages = 1;
            // Sequence parallelism costs nothing extra and Megatron recommends it with TP, where
            // the software has it.
            candidate.layout.sequence_parallel = tp > 1 && runs_sequence_parallel;
            if (layout_problem(model, candidate) ||
                (training && software_layout_problem(run_by(candidate, sw)))) {
              continue;
            }
            ++best.layouts_evaluated;
            FitReport report = fit_on_gpu(model, candidate, gpu, params);
            least_required = std::min(least_required, report.verdict.required);
            if (report.verdict.fits) {
              best.found = true;
              best.gpus = n;
              best.job = candidate;
              best.report = std::move(report);
              return best;
            }
          }
        }
      }
    }
  }
  best.reason = {
      fmt::format("no layout of up to {} x {} fits: the lightest GPU still needs {} ({} usable)",
                  search.max_gpus, gpu.id, gib_text(least_required, kEn),
                  gib_text(gpu.memory_usable, kEn)),
      fmt::format("nenhum layout de até {} x {} cabe: a GPU mais leve ainda precisa de {} ({} "
                  "utilizáveis)",
                  search.max_gpus, gpu.id, gib_text(least_required, kPt),
                  gib_text(gpu.memory_usable, kPt))};
  return best;
}

Result<FitAnswer> fit(const Model& model, const FitJob& job, const Catalog& catalog) {
  if (std::optional<std::string> problem = layout_problem(model, job.memory)) {
    return fail("layout", *problem, "choose tp/pp/dp that suit the model");
  }
  if (is_training(job.memory.task)) {
    if (std::optional<std::string> problem =
            software_layout_problem(run_by(job.memory, job.search.software))) {
      return fail("layout", *problem,
                  "choose a layout the framework ran that year, or a later --framework year");
    }
  }
  const MemoryParams& mp = catalog.memory_params();
  FitAnswer a;
  if (job.gpu != nullptr) {
    a.on_gpu = fit_on_gpu(model, job.memory, *job.gpu, mp);
    if (job.memory.task == Task::kInfer && precision_bytes(job.memory.precision) >= 2) {
      MemoryJob q = job.memory;
      q.precision = Precision::kFp8;
      a.fp8 = fit_on_gpu(model, q, *job.gpu, mp);
    }
  }
  if (job.offer != nullptr) {
    FitSearch search = job.search;
    search.max_gpus = job.offer->gpus_per_node * job.offer->max_nodes;
    a.on_offer = smallest_fit(model, job.memory, **catalog.gpu(job.offer->gpu), mp, search);
  }
  for (const Gpu& g : catalog.gpus()) {
    a.smallest.emplace_back(&g, smallest_fit(model, job.memory, g, mp, job.search));
  }
  for (const Offer& o : catalog.offers()) {
    for (const auto& [g, s] : a.smallest) {
      if (g->id != o.gpu) {
        continue;
      }
      OfferFit f;
      f.offer = &o;
      f.gpus_needed = s.found ? s.gpus : 0;
      f.holds = s.found && s.gpus <= o.gpus_per_node * o.max_nodes;
      f.nodes = f.holds ? (s.gpus + o.gpus_per_node - 1) / o.gpus_per_node : 0;
      a.offers.push_back(f);
    }
  }
  return a;
}

}  // namespace gpuplan
