#include "gpuplan/collective.h"

#include <algorithm>
#include <cmath>

#include "gpuplan/result.h"

namespace gpuplan {
namespace {

// Latency of one pass: a ring through the node's ranks, then a tree over the nodes.
Seconds pass_latency(const Group& g, const Network& net) {
  const double in_node = static_cast<double>(std::min(g.ranks, g.ranks_per_node) - 1);
  const int64_t nodes = g.nodes();
  const double across = nodes > 1 ? std::ceil(std::log2(static_cast<double>(nodes))) : 0.0;
  return net.intra_latency * in_node + net.inter_latency * across;
}

double fraction(int64_t n) {
  return static_cast<double>(n - 1) / static_cast<double>(n);
}

}  // namespace

BytesPerSecond group_busbw(const Group& g, const Network& net) {
  GPUPLAN_CHECK(g.ranks >= 1 && g.ranks_per_node >= 1, "empty group");
  if (g.nodes() <= 1) {
    return net.intra_busbw;
  }
  const double share = static_cast<double>(std::min(g.ranks_per_node, net.gpus_per_node)) /
                       static_cast<double>(net.gpus_per_node);
  const BytesPerSecond nics = net.nic_bandwidth * (static_cast<double>(net.nics_per_node) * share);
  return std::min(net.intra_busbw, nics);
}

Seconds all_reduce_time(Bytes bytes, const Group& g, const Network& net) {
  if (g.ranks <= 1 || bytes.si() <= 0) {
    return Seconds(0);
  }
  return bytes * (2.0 * fraction(g.ranks)) / group_busbw(g, net) + pass_latency(g, net) * 2.0;
}

Seconds all_gather_time(Bytes bytes, const Group& g, const Network& net) {
  if (g.ranks <= 1 || bytes.si() <= 0) {
    return Seconds(0);
  }
  return bytes * fraction(g.ranks) / group_busbw(g, net) + pass_latency(g, net);
}

Seconds reduce_scatter_time(Bytes bytes, const Group& g, const Network& net) {
  return all_gather_time(bytes, g, net);
}

Seconds all_to_all_time(Bytes bytes, const Group& g, const Network& net) {
  return all_gather_time(bytes, g, net);
}

Seconds send_recv_time(Bytes bytes, bool crosses_nodes, const Network& net) {
  if (bytes.si() <= 0) {
    return Seconds(0);
  }
  if (crosses_nodes) {
    // One stage boundary uses the NIC of the sending GPU.
    const BytesPerSecond per_gpu = net.nic_bandwidth * (static_cast<double>(net.nics_per_node) /
                                                        static_cast<double>(net.gpus_per_node));
    return bytes / per_gpu + net.inter_latency;
  }
  return bytes / net.intra_busbw + net.intra_latency;
}

}  // namespace gpuplan
