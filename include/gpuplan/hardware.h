// The hardware gpuplan reasons about: GPUs, the fabrics that connect them, and the offers
// (products with a node shape, sites and a price) that people rent or buy.
//
// These are plain validated structs; the catalog module builds them from data/ files and is
// the only code that parses. Every quantity is in SI units (see units.h); every entry keeps
// the file it came from and its `source`, so output can say where a number comes from.
#ifndef GPUPLAN_HARDWARE_H_
#define GPUPLAN_HARDWARE_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuplan/result.h"
#include "gpuplan/units.h"

namespace gpuplan {

// Number formats for weights, activations, KV cache and tensor-core compute.
// kFp4 is NVFP4 (Blackwell): 4-bit E2M1 values, one E4M3 scale per block of 16.
enum class Precision { kFp32, kTf32, kFp16, kBf16, kFp8, kInt8, kInt4, kFp4 };
inline constexpr int kPrecisionCount = 8;

// "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4".
std::string_view precision_name(Precision p);
// Parses a precision name; the error suggests the closest name.
Result<Precision> parse_precision(std::string_view name);
// Every name parse_precision takes besides its aliases (nvfp4, w4a16, w8a8), in order.
std::vector<std::string> precision_names();
// Storage bytes per element: 4, 4, 2, 2, 1, 1, 0.5, and fp4 0.5 + 1/16 (its block scales).
double precision_bytes(Precision p);

// What a GPU achieves of its peak in practice: the calibration of the compute model.
// Each value comes from published measurements (MAMF GEMM sweeps, BabelStream) or is marked an
// estimate in the catalog file; a calibration profile replaces them.
struct Efficiency {
  double gemm = 0;      // fraction of dense 16-bit peak a large GEMM sustains (MAMF)
  double gemm_fp8 = 0;  // fraction of dense fp8 peak (0 where the part has no fp8)
  double hbm = 0;       // fraction of peak memory bandwidth a streaming kernel reaches
  // Fused attention forward (FlashAttention-2 class) as a fraction of the dense 16-bit peak,
  // and the kernels written for the part's own architecture (FlashAttention-3 and cuDNN on
  // Hopper, cuDNN on Blackwell); 0 where it has none measured.
  double attention = 0;
  double attention_native = 0;
  double gemm_fp4 = 0;  // fraction of dense fp4 (NVFP4) peak (0 where the part has no fp4)
  // The keys above that the catalog file marks estimated, not measured ("gemm_fp4", "hbm", ...);
  // a calibration profile's value is a measurement and takes its key off.
  std::vector<std::string> estimated = {};
};

// How a GPU's GEMM library tiles a matrix multiply (gemm.h), fitted to a published sweep
// (data/gemm/<fit>.toml, written by gpuplan calibrate --gemm-sweep).
struct TileModel {
  double loop_efficiency = 0;  // share of the per-SM peak the k-loop of a 128 x 256 tile reaches
  Seconds tile_overhead;       // fixed time per tile: first operand loads, output tile written
  Seconds launch;              // fixed time per GEMM
  double square_tile = 0;      // a 128 x 128 tile's k-loop efficiency relative to 128 x 256
  double narrow_tile = 0;      // a 64 x 128 tile's
  std::string fit;             // id of the fit
  std::string source;          // the sweep it was fitted to
};

struct Gpu {
  std::string id;                   // "h200-sxm"
  std::string name;                 // "NVIDIA H200 SXM 141 GB"
  std::string vendor;               // "nvidia", "amd"
  std::string architecture;         // "ampere", "hopper", ...: what shares a fitted in_situ
  Bytes memory;                     // capacity as marketed (141 GB)
  Bytes memory_usable;              // capacity the driver reports to programs (nvidia-smi total)
  BytesPerSecond memory_bandwidth;  // peak HBM/GDDR bandwidth
  // Dense (no 2:4 sparsity) tensor-core peak per precision; nullopt: not supported.
  std::array<std::optional<FlopsPerSecond>, kPrecisionCount> peak;
  Watts tdp;
  int64_t pcie_gen = 0;
  std::string scale_up;         // fabric id of GPU-to-GPU links in its usual node
  int64_t scale_up_domain = 1;  // GPUs one scale-up domain joins (8 on HGX, 1 with PCIe only)
  std::optional<Efficiency> efficiency;  // nullopt: no calibration, so no time estimates
  int64_t sms = 0;                       // streaming multiprocessors (AMD: compute units)
  std::optional<TileModel> tiles;        // the GEMM tile model; with `efficiency`
  std::string source;
  std::string file;

  std::optional<FlopsPerSecond> peak_for(Precision p) const { return peak[static_cast<size_t>(p)]; }
};

enum class FabricKind { kNvlink, kPcie, kInfiniband, kRoce, kOmniPath, kEthernet, kXgmi };

std::string_view fabric_kind_name(FabricKind k);
Result<FabricKind> parse_fabric_kind(std::string_view name);

struct Fabric {
  std::string id;  // "nvlink4", "ib-ndr-400g"
  std::string name;
  FabricKind kind = FabricKind::kNvlink;
  // Per direction: per GPU for scale-up links (NVLink, PCIe x16), per NIC for networks.
  BytesPerSecond bandwidth;
  Seconds latency;
  // All-reduce bus bandwidth measured with nccl-tests where published (per GPU for scale-up,
  // per NIC for networks), and what it was measured on.
  std::optional<BytesPerSecond> measured_busbw;
  std::string measured_note;
  std::string source;
  std::string file;

  bool is_scale_up() const {
    return kind == FabricKind::kNvlink || kind == FabricKind::kPcie || kind == FabricKind::kXgmi;
  }
};

// Where an offer runs: a data-centre site or cloud region and its country (ISO 3166 alpha-2).
struct Site {
  std::string id;        // "SP1", "us-east-1"
  std::string country;   // "BR", "US"
  std::string location;  // city or region
};

// A sum of money in one currency (ISO 4217 code).
struct Money {
  double amount = 0;
  std::string currency;  // "USD", "BRL"
};

// Parses "<amount> <CUR>/<per>" ("55.04 USD/h", "0.09 USD/GB"), or "<amount> <CUR>" when `per`
// is empty ("50000 BRL"): the one money parser of every front end. The amount is finite and
// >= 0 and at most 1e15; the currency is a three-letter ISO 4217 code. `per_words` names the
// unit in the error ("GPU-hour" for --price); empty: `per` as written.
Result<Money> parse_money(std::string_view text, std::string_view per,
                          std::string_view per_words = {});

// A currency code as given ("BRL"); anything but three capital letters is an error.
Result<std::string> parse_currency(std::string_view text);

// Hours in an average month (365 x 24 / 12), for monthly costs of hourly prices.
inline constexpr double kHoursPerMonth = 730.0;

// Units of a currency per US dollar on a date (data/params/exchange.toml).
struct ExchangeRate {
  std::string currency;  // ISO 4217 code
  double per_usd = 0;
  std::string date;       // when the rate was published
  std::string publisher;  // who published it, in a few words
  std::string source;
};

struct Offer {
  std::string id;  // "aws-p5.48xlarge"
  std::string name;
  std::string provider;
  std::string gpu;  // catalog GPU id
  int64_t gpus_per_node = 1;
  int64_t max_nodes = 1;  // how many nodes can be rented together as one cluster
  std::string scale_up;   // fabric id inside the node
  std::string scale_out;  // fabric id between nodes; empty for a single node
  int64_t nics_per_node = 0;
  std::vector<Site> sites;
  std::optional<Money> price_per_node_hour;  // nullopt: not public, the user supplies it
  std::optional<Money> egress_per_gb;
  std::string price_date;  // when the price was read
  std::string source;
  std::string notes;
  std::string file;
};

}  // namespace gpuplan

#endif  // GPUPLAN_HARDWARE_H_
