// The advisor: a job (train, fine-tune, serve) against every offer in the catalog, ranked.
//
// For each offer that the constraints allow (residency, an allowed list) and every count of its
// nodes up to a limit, it finds the best layout (search.h) and the time to finish, the cost
// (GPU-hours x price + egress) and the energy; serving is sized as `gpuplan serve --offer`
// sizes it (serve.h): the best instance shape per GPU within the latency target, simulated, and
// the replicas the load needs. Each offer gets one recommendation — the fewest nodes that meet
// the deadline — or a "why not". The ranking puts offers that meet the deadline first, then by cost
// where every offer has a price (in one currency), else by time.
#ifndef GPUPLAN_ADVISOR_H_
#define GPUPLAN_ADVISOR_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/lang.h"
#include "gpuplan/training.h"

namespace gpuplan {

enum class JobKind { kPretrain, kFinetune, kLora, kQlora, kServe };
std::string_view job_kind_name(JobKind k);
Result<JobKind> parse_job_kind(std::string_view name);
std::vector<std::string> job_kind_names();  // every name parse_job_kind takes, in order

struct PlanJob {
  JobKind kind = JobKind::kFinetune;
  std::string model;         // catalog id or config.json path
  double tokens = 0;         // training tokens (epochs x dataset tokens)
  int64_t seq = 4096;        // training sequence length
  int64_t global_batch = 0;  // sequences per step; 0: 1,024 for pretraining, 128 otherwise
  int64_t lora_rank = 16;
  LoraTargets lora_targets = LoraTargets::kAllLinear;
  // Weights; nullopt: bf16 for training, the checkpoint's own format for serving
  // (choose_weights, memory.h).
  std::optional<Precision> precision;
  // The training software, "ID" or "ID@YEAR" (Catalog::software): its memory rule, kernels and
  // overlap.
  std::string framework = std::string(kDefaultFramework);
  std::optional<Seconds> deadline;
  std::optional<Money> budget;
  // Serving.
  int64_t users = 0;      // concurrent users, each with one sequence in flight
  double rate_per_s = 0;  // or a request rate: Poisson arrivals
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double prefix_hit = 0;  // share of prompt tokens found in the prefix cache (Workload)
  std::string engine;     // serving engine, "ID" or "ID@RELEASE" (Catalog::engine_choice); empty:
                          // the catalog's default
  std::optional<Seconds> latency_target;  // p99 time per output token
  // Constraints.
  std::vector<std::string> residency;   // ISO country codes the work must stay in; empty: any
  std::vector<std::string> offers;      // allowed offers; empty: all
  std::string currency;                 // report costs in this currency; empty: each offer's own
  std::optional<double> usd_rate;       // units of `currency` per USD
  Bytes egress;                         // data that leaves the provider
  std::map<std::string, Money> prices;  // per node-hour, for offers without a public price
  int64_t max_nodes = 256;              // most nodes per offer: a training cluster or a fleet
};

// Servers of a serving fleet at one of the offer's sites.
struct SiteNodes {
  std::string site;  // Site::id
  int64_t nodes = 0;
};

// One offer's answer.
struct PlanCandidate {
  const Offer* offer = nullptr;
  bool feasible = false;
  Why why = Why::kNone;  // the kind of why_not
  Text why_not;          // when not feasible (or when it misses the deadline), for people
  bool meets_deadline = true;
  int64_t nodes = 0;
  int64_t gpus = 0;         // GPUs the job runs on
  int64_t gpus_rented = 0;  // nodes x the offer's GPUs per node: more than gpus where a
                            // serving fleet's replicas leave some of the last node idle
  Text layout;              // serving: the replicas and their shape, for people
  Seconds time;             // to finish the training job; 0 for serving
  double tokens_per_s = 0;  // training throughput, or serving output tokens/s
  double mfu = 0;
  double scaling_efficiency = 0;  // vs the offer's smallest count that runs (%)
  std::optional<Money> cost;      // job cost (training) or per month (serving), in the currency
  std::optional<Money> hourly;    // price of the whole allocation per hour
  double energy_joules = 0;       // at TDP
  std::optional<TrainEstimate> training;
  int64_t replicas = 0;  // serving
  // Serving: the replicas on engines 1 + speed_uncertainty times slower than modelled
  // (ServeFleet::replicas_if_slower); 0 when not even kFleetTries - 1 more would do.
  int64_t replicas_if_slower = 0;
  int64_t gpus_per_replica = 0;
  int64_t batch_per_replica = 0;  // serving: users per replica (0 for a request rate)
  Seconds tpot;                   // serving: p99 time per output token
  // Serving: the fleet's nodes spread over the offer's sites the residency allows, in catalog
  // order, a replica never split between sites. Replicas behind a load balancer need no link
  // between servers, so a fleet is not bound by the offer's max_nodes (that bounds one replica).
  std::vector<SiteNodes> sites;
  Text price_note;  // a missing price, a currency not converted
};

// The kind of plain answer a plan gives; plan_headline() writes it in either language.
enum class PlanVerdict {
  kNoOffer,      // the allowed offers left nothing to consider
  kNoSite,       // no offer has a site where the data may stay
  kNothingRuns,  // every offer was rejected
  kServe,        // serving on the best offer
  kOneGpu,       // training: one GPU is enough
  kOneServer,    // training: several GPUs of one server
  kCluster,      // training: several nodes
};

struct Plan {
  std::vector<PlanCandidate> ranked;    // feasible first, best first
  std::vector<PlanCandidate> rejected;  // with why_not
  PlanVerdict verdict = PlanVerdict::kNoOffer;
  std::string headline;     // plan_headline(plan, job, Lang::kEn)
  std::vector<Text> notes;  // missing prices, currencies, assumptions
  // For a full training job nothing can run: the offers where a LoRA fine-tune would.
  std::vector<Text> lora_alternative;
};

// "SP1: 3, SP2: 2" — nodes per site, the same in every language.
std::string sites_text(const std::vector<SiteNodes>& sites);

// The plain answer for people: "You need a cluster: 4 nodes of ... finish in 3.2 days, ...".
std::string plan_headline(const Plan& plan, const PlanJob& job, Lang lang);

// REQUIRES: the job validated by check_plan_job().
Plan make_plan(const PlanJob& job, const Model& model, const Catalog& catalog, int threads);

// Bad or contradictory jobs: zero tokens, an unknown allowed offer, a negative deadline, ...
Result<bool> check_plan_job(const PlanJob& job, const Catalog& catalog);

// Reads a job file (TOML, schema 1, [job] and [constraints] tables; docs in examples/).
Result<PlanJob> load_plan_job(const std::string& path);

}  // namespace gpuplan

#endif  // GPUPLAN_ADVISOR_H_
