// The time of NCCL-style collectives over the GPUs of a group, placed as frameworks place them.
//
// Alpha-beta model: a collective of S bytes per rank over n ranks takes the bandwidth term
// S * factor / busbw plus a latency term. `factor` is the one nccl-tests uses to define bus
// bandwidth (all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n, all-to-all (n-1)/n),
// so a measured busbw plugs in directly. A group inside one node runs at the node's bus
// bandwidth (NVLink/NVSwitch, or PCIe). A group spanning nodes is limited by its share of the
// nodes' NICs: NCCL runs one ring per NIC ("rail"), so g ranks of a group on a node together get
// g / gpus_per_node of the node's NIC bandwidth (docs/FORMULAS.md#collectives).
#ifndef GPUPLAN_COLLECTIVE_H_
#define GPUPLAN_COLLECTIVE_H_

#include <cstdint>

#include "gpuplan/hardware.h"
#include "gpuplan/params.h"
#include "gpuplan/units.h"

namespace gpuplan {

// What the machines offer to collectives.
struct Network {
  int64_t gpus_per_node = 1;
  BytesPerSecond intra_busbw;  // bus bandwidth of a collective inside one node
  Seconds base_latency;        // software cost: launch, handshake (Simple: per step; LL: per pass)
  Seconds intra_latency;       // per ring hop or link level inside a node
  int64_t nics_per_node = 0;
  BytesPerSecond nic_bandwidth;  // achieved per NIC, per direction
  Seconds inter_latency;         // per ring hop or link level between nodes
  // Bytes of a collective that one NCCL channel needs: NCCL drops channels while nBytes <
  // channels x threads x threshold (src/enqueue.cc; Simple protocol: 512 threads x 64 B =
  // 32 KiB), and each channel's ring leaves a node through one NIC. 0: no such limit.
  Bytes channel_bytes;
};

// A group of `ranks` GPUs of which `ranks_per_node` share each node.
struct Group {
  int64_t ranks = 1;
  int64_t ranks_per_node = 1;

  int64_t nodes() const { return (ranks + ranks_per_node - 1) / ranks_per_node; }
};

// Bus bandwidth the group reaches: the node's inside one node; across nodes the lesser of that
// and the group's share of the NICs, ranks_per_node * nics * nic_bandwidth / gpus_per_node — of
// which a collective NCCL sizes at `nbytes` uses nbytes / channel_bytes NICs at most. NCCL sizes
// every collective by its whole buffer: an all-gather's output, a reduce-scatter's input, not one
// rank's slice (src/misc/argcheck.cc: nBytes *= nRanks).
BytesPerSecond group_busbw(const Group& g, const Network& net, Bytes nbytes = Bytes(0));

// Two protocols, the faster one taken, as NCCL's tuner picks one per message size. Simple: the
// full bus bandwidth, and base_latency + the link's latency at every step of a pass. LL, for
// small messages: half the bus bandwidth, base_latency once per pass plus the link latencies,
// which is what the measured 8 B floors show (~15 us on 2 GPUs, ~25 us on 8;
// docs/FORMULAS.md#collectives). The steps: an all-reduce runs a ring through the node (LL:
// ceil(log2 n) levels) and NCCL's tree over the nodes; an all-gather or reduce-scatter the ring's
// chain of n - 1 hops through every rank, nodes - 1 of them between nodes (NCCL
// src/graph/tuning.cc); an all-to-all the node's peers and one step per other node.
// All-reduce of `bytes` per rank: 2(n-1)/n * S / busbw + 2 passes.
Seconds all_reduce_time(Bytes bytes, const Group& g, const Network& net);
// All-gather whose output is `bytes` per rank; reduce-scatter whose input is `bytes` per rank:
// (n-1)/n * S / busbw + steps.
Seconds all_gather_time(Bytes bytes, const Group& g, const Network& net);
Seconds reduce_scatter_time(Bytes bytes, const Group& g, const Network& net);
// All-to-all of `bytes` per rank: (n-1)/n * S / busbw + steps.
Seconds all_to_all_time(Bytes bytes, const Group& g, const Network& net);
// ceil(log2 n) for n >= 1: the link levels a low-latency pass over n peers pays.
int64_t latency_levels(int64_t n);
// One GPU's point-to-point link: inside a node the scale-up fabric, across nodes the GPU's share
// of the node's NICs; a transfer of b bytes takes b / bandwidth + latency.
struct Link {
  BytesPerSecond bandwidth;
  Seconds latency;
};
Link point_to_point(bool crosses_nodes, const Network& net);
// Point-to-point transfer between neighbouring pipeline stages, over point_to_point's link.
Seconds send_recv_time(Bytes bytes, bool crosses_nodes, const Network& net);

// The machines: how many GPUs of which type, how they are grouped into nodes, and the fabrics.
struct Cluster {
  const Gpu* gpu = nullptr;
  int64_t gpus = 1;
  int64_t gpus_per_node = 8;
  const Fabric* scale_up = nullptr;   // inside a node
  const Fabric* scale_out = nullptr;  // between nodes; may be null for one node
  int64_t nics_per_node = 0;          // 0: one per GPU, as the front ends default it
};

// Builds the Network a cluster offers to collectives, from its fabrics' measured bus bandwidth
// (or link rate x nccl_efficiency where none is measured).
Network cluster_network(const Cluster& c, const TrainParams& p);

// The cluster with its nodes as the communication model counts them: a node is what one scale-up
// fabric joins. Where the GPU's own fabric spans several of the nodes given (a GB200 NVL72 rack
// of 4-GPU compute trays), a node is the largest group of them that the domain holds and that
// divides the GPUs (256 GPUs in trays of 4: racks of 64), with their NICs together. Any other
// cluster comes back as given.
Cluster scale_up_nodes(Cluster c);

}  // namespace gpuplan

#endif  // GPUPLAN_COLLECTIVE_H_
