// What a job runs on, from catalog ids: a GPU with a node of the user's size, or an offer's GPU,
// node, network and price, with the user's overrides. One resolution for train, scale, serve
// and plan, so that an offer means the same machines to every command.
#ifndef GPUPLAN_MACHINES_H_
#define GPUPLAN_MACHINES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "gpuplan/catalog.h"
#include "gpuplan/collective.h"
#include "gpuplan/inference.h"

namespace gpuplan {

// Ids and sizes as a user gives them; empty or 0: the offer's, else the default.
struct MachineSpec {
  std::string gpu;
  std::string offer;
  std::string scale_up;   // default: the offer's, else the GPU's own
  std::string scale_out;  // default: the offer's
  int64_t gpus = 0;
  int64_t gpus_per_node = 0;  // default: the offer's, else the GPUs one scale-up fabric joins
                              // (8, or a larger NVLink domain: 72 on GB200), at most gpus
  int64_t nics_per_node = 0;  // default: the offer's, else one per GPU
};

struct Machines {
  Cluster cluster;
  const Offer* offer = nullptr;
  std::optional<Money> price_per_gpu_hour;  // the offer's, when public
};

// Errors name the flag that holds the bad id or size ("--gpu", "--offer", "--scale-out", ...).
// The GPU must have an efficiency calibration (times are estimated on it).
Result<Machines> resolve_machines(const Catalog& catalog, const MachineSpec& spec);

// `nodes` of an offer. REQUIRES: the catalog checked the offer's ids when it loaded.
Cluster offer_cluster(const Catalog& catalog, const Offer& offer, int64_t nodes);

// One serving instance's hardware on an offer: its GPU, node and network (tp, pp and
// precisions are left to the caller).
Instance offer_instance(const Catalog& catalog, const Offer& offer);

// An offer's price per GPU-hour, when it has a public one.
std::optional<Money> offer_gpu_price(const Offer& offer);

}  // namespace gpuplan

#endif  // GPUPLAN_MACHINES_H_
