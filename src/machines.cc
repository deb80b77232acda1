#include "gpuplan/machines.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuplan {
namespace {

std::unexpected<Error> flagged(const char* flag, const Error& e) {
  return std::unexpected(Error{flag, e.what, e.hint});
}

}  // namespace

std::optional<Money> offer_gpu_price(const Offer& o) {
  if (!o.price_per_node_hour) {
    return std::nullopt;
  }
  return Money{o.price_per_node_hour->amount / static_cast<double>(o.gpus_per_node),
               o.price_per_node_hour->currency};
}

Result<Machines> resolve_machines(const Catalog& c, const MachineSpec& f) {
  Machines m;
  Cluster& cl = m.cluster;
  cl.gpus = f.gpus;
  std::string gpu = f.gpu;
  std::string up = f.scale_up;
  std::string out = f.scale_out;
  cl.gpus_per_node = f.gpus_per_node;
  cl.nics_per_node = f.nics_per_node;
  if (!f.offer.empty() && !f.gpu.empty()) {
    return fail("--offer", "give --gpu or --offer, not both", "the offer names its GPU");
  }
  if (!f.offer.empty()) {
    Result<const Offer*> o = c.offer(f.offer);
    if (!o) {
      return flagged("--offer", o.error());
    }
    const Offer& offer = **o;
    m.offer = &offer;
    gpu = offer.gpu;
    up = up.empty() ? offer.scale_up : up;
    out = out.empty() ? offer.scale_out : out;
    cl.gpus_per_node = cl.gpus_per_node == 0 ? offer.gpus_per_node : cl.gpus_per_node;
    cl.nics_per_node = cl.nics_per_node == 0 ? offer.nics_per_node : cl.nics_per_node;
    m.price_per_gpu_hour = offer_gpu_price(offer);
    if (f.gpus > offer.gpus_per_node * offer.max_nodes) {
      return fail("--gpus",
                  fmt::format("{} GPUs exceed offer '{}' ({} nodes of {})", f.gpus, offer.id,
                              offer.max_nodes, offer.gpus_per_node),
                  "use fewer GPUs or another offer");
    }
  }
  if (gpu.empty()) {
    return fail("--gpu", "no GPU given", "give --gpu ID or --offer ID");
  }
  Result<const Gpu*> g = c.gpu(gpu);
  if (!g) {
    return flagged("--gpu", g.error());
  }
  cl.gpu = *g;
  if (!cl.gpu->efficiency) {
    return fail("--gpu", fmt::format("gpu '{}' has no [efficiency] calibration", gpu),
                "add one to its catalog file to estimate times");
  }
  Result<const Fabric*> fu = c.fabric(up.empty() ? cl.gpu->scale_up : up);
  if (!fu) {
    return flagged("--scale-up", fu.error());
  }
  cl.scale_up = *fu;
  // A node is what one scale-up fabric joins: a server of 8 GPUs, or a whole rack where the
  // GPU's NVLink domain spans more (GB200 NVL72).
  const int64_t node = std::max<int64_t>(8, cl.gpu->scale_up_domain);
  cl.gpus_per_node = cl.gpus_per_node == 0 ? std::min(node, f.gpus) : cl.gpus_per_node;
  cl.nics_per_node = cl.nics_per_node == 0 ? cl.gpus_per_node : cl.nics_per_node;
  cl = scale_up_nodes(cl);  // nodes given as the trays of one NVLink domain join up
  if (f.gpus > cl.gpus_per_node) {
    if (out.empty()) {
      return fail("--scale-out", fmt::format("{} GPUs span nodes of {}", f.gpus, cl.gpus_per_node),
                  "name the network between nodes, e.g. --scale-out ib-ndr-400g");
    }
    Result<const Fabric*> fo = c.fabric(out);
    if (!fo) {
      return flagged("--scale-out", fo.error());
    }
    cl.scale_out = *fo;
  }
  return m;
}

Cluster offer_cluster(const Catalog& c, const Offer& o, int64_t nodes) {
  Cluster cl;
  cl.gpu = *c.gpu(o.gpu);
  cl.gpus = nodes * o.gpus_per_node;
  cl.gpus_per_node = o.gpus_per_node;
  cl.scale_up = *c.fabric(o.scale_up);
  cl.scale_out = o.scale_out.empty() ? nullptr : *c.fabric(o.scale_out);
  cl.nics_per_node = o.nics_per_node;
  return scale_up_nodes(cl);
}

Instance offer_instance(const Catalog& c, const Offer& o) {
  Instance in;
  in.gpu = *c.gpu(o.gpu);
  in.scale_up = *c.fabric(o.scale_up);
  in.gpus_per_node = o.gpus_per_node;
  in.scale_out = o.scale_out.empty() ? nullptr : *c.fabric(o.scale_out);
  in.nics_per_node = o.nics_per_node;
  return in;
}

}  // namespace gpuplan
