#include "gpuplan/collective.h"

#include <algorithm>
#include <cmath>

#include "gpuplan/result.h"

namespace gpuplan {
namespace {

double fraction(int64_t n) {
  return static_cast<double>(n - 1) / static_cast<double>(n);
}

// NCCL's LL protocol stores 8-byte words of 4 data bytes and a 4-byte flag, so it moves data at
// half the bus bandwidth of the Simple protocol (NCCL source, src/include/protocol.h, and its
// tuning model).
constexpr double kLowLatencyShare = 0.5;

// The latency a pass pays: hops inside nodes and across them for the Simple protocol, and the
// link levels the LL protocol pays inside nodes.
struct Steps {
  double intra = 0;
  double inter = 0;
  double intra_ll = 0;
};

// An all-reduce: a ring inside the node, NCCL's tree across nodes, ceil(log2 nodes) levels; LL
// passes through the node in ceil(log2 n) levels.
Steps tree_steps(const Group& g) {
  const int64_t in_node = std::min(g.ranks, g.ranks_per_node);
  return {static_cast<double>(in_node - 1), static_cast<double>(latency_levels(g.nodes())),
          static_cast<double>(latency_levels(in_node))};
}

// All-gather and reduce-scatter have no tree: a pass is the ring's chain of n - 1 hops through
// every rank, of which nodes - 1 cross between nodes and n - nodes stay inside one, under either
// protocol (NCCL src/graph/tuning.cc: nsteps - nInterSteps intra steps, nInterSteps inter).
Steps ring_steps(const Group& g) {
  const double inside = static_cast<double>(g.ranks - g.nodes());
  return {inside, static_cast<double>(g.nodes() - 1), inside};
}

// All-to-all: NCCL sends to every peer at once (grouped point-to-point, no chain through the
// ranks); what chains is the node's peers, then one step per other node.
Steps pairwise_steps(const Group& g) {
  const int64_t in_node = std::min(g.ranks, g.ranks_per_node);
  return {static_cast<double>(in_node - 1), static_cast<double>(g.nodes() - 1),
          static_cast<double>(latency_levels(in_node))};
}

// Time of `passes` passes moving `wire` bytes (S x the nccl-tests factor) of a collective NCCL
// sizes at `nbytes`, under the faster of two protocols, as NCCL's tuner picks one per size.
// Simple: the full bus bandwidth, and base + link latency at every step. LL: half the bandwidth,
// the base once and the link latency per step or level.
Seconds collective_time(Bytes wire, int64_t passes, const Group& g, const Network& net,
                        Bytes nbytes, const Steps& steps) {
  const double n = static_cast<double>(passes);
  const BytesPerSecond busbw = group_busbw(g, net, nbytes);
  const Seconds simple = (net.base_latency + net.intra_latency) * steps.intra +
                         (net.base_latency + net.inter_latency) * steps.inter;
  const Seconds low_latency =
      net.base_latency + net.intra_latency * steps.intra_ll + net.inter_latency * steps.inter;
  return std::min(wire / busbw + simple * n, wire / (busbw * kLowLatencyShare) + low_latency * n);
}

}  // namespace

int64_t latency_levels(int64_t n) {
  int64_t levels = 0;
  for (int64_t reach = 1; reach < n; reach *= 2) {
    ++levels;
  }
  return levels;
}

BytesPerSecond group_busbw(const Group& g, const Network& net, Bytes nbytes) {
  GPUPLAN_CHECK(g.ranks >= 1 && g.ranks_per_node >= 1, "empty group");
  if (g.nodes() <= 1) {
    return net.intra_busbw;
  }
  const double share = static_cast<double>(std::min(g.ranks_per_node, net.gpus_per_node)) /
                       static_cast<double>(net.gpus_per_node);
  double nics = static_cast<double>(net.nics_per_node) * share;
  if (net.channel_bytes.si() > 0 && nbytes.si() > 0) {
    // One NIC per channel, and at least one channel.
    nics = std::min(nics, std::max(1.0, std::floor(nbytes / net.channel_bytes)));
  }
  return std::min(net.intra_busbw, net.nic_bandwidth * nics);
}

Seconds all_reduce_time(Bytes bytes, const Group& g, const Network& net) {
  if (g.ranks <= 1 || bytes.si() <= 0) {
    return Seconds(0);
  }
  return collective_time(bytes * (2.0 * fraction(g.ranks)), 2, g, net, bytes, tree_steps(g));
}

Seconds all_gather_time(Bytes bytes, const Group& g, const Network& net) {
  if (g.ranks <= 1 || bytes.si() <= 0) {
    return Seconds(0);
  }
  return collective_time(bytes * fraction(g.ranks), 1, g, net, bytes, ring_steps(g));
}

Seconds reduce_scatter_time(Bytes bytes, const Group& g, const Network& net) {
  return all_gather_time(bytes, g, net);
}

Seconds all_to_all_time(Bytes bytes, const Group& g, const Network& net) {
  if (g.ranks <= 1 || bytes.si() <= 0) {
    return Seconds(0);
  }
  return collective_time(bytes * fraction(g.ranks), 1, g, net, bytes, pairwise_steps(g));
}

Link point_to_point(bool crosses_nodes, const Network& net) {
  if (crosses_nodes) {
    // The sending GPU's share of its node's NICs.
    return {net.nic_bandwidth *
                (static_cast<double>(net.nics_per_node) / static_cast<double>(net.gpus_per_node)),
            net.base_latency + net.inter_latency};
  }
  return {net.intra_busbw, net.base_latency + net.intra_latency};
}

Seconds send_recv_time(Bytes bytes, bool crosses_nodes, const Network& net) {
  if (bytes.si() <= 0) {
    return Seconds(0);
  }
  const Link link = point_to_point(crosses_nodes, net);
  return bytes / link.bandwidth + link.latency;
}

Cluster scale_up_nodes(Cluster c) {
  const int64_t tray = c.gpus_per_node;
  const bool own_fabric =
      c.gpu != nullptr && c.scale_up != nullptr && c.scale_up->id == c.gpu->scale_up;
  if (!own_fabric || tray <= 0 || c.gpu->scale_up_domain <= tray || c.gpus <= tray) {
    return c;
  }
  int64_t node = tray;
  for (int64_t n = tray; n <= std::min(c.gpu->scale_up_domain, c.gpus); n += tray) {
    if (c.gpus % n == 0) {
      node = n;
    }
  }
  const int64_t trays = node / tray;
  c.gpus_per_node = node;
  if (c.nics_per_node > 0) {
    c.nics_per_node *= trays;
  }
  return c;
}

Network cluster_network(const Cluster& c, const TrainParams& p) {
  Network n;
  n.gpus_per_node = c.gpus_per_node;
  const Fabric& up = *c.scale_up;
  n.intra_busbw = up.measured_busbw.value_or(up.bandwidth * p.nccl_efficiency);
  n.base_latency = p.collective_latency;
  n.intra_latency = up.latency;
  n.channel_bytes = p.nccl_channel_bytes;
  if (c.scale_out != nullptr) {
    const Fabric& out = *c.scale_out;
    n.nics_per_node = c.nics_per_node > 0 ? c.nics_per_node : c.gpus_per_node;
    n.nic_bandwidth = out.measured_busbw.value_or(out.bandwidth * p.nccl_efficiency);
    n.inter_latency = out.latency;
  }
  return n;
}

}  // namespace gpuplan
