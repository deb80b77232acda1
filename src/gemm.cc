#include "gpuplan/gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpuplan/result.h"
#include "minimize.h"

namespace gpuplan {
namespace {

// The tile shapes the model lets the library choose from (m x n of the output tile), and which
// of TileModel's relative efficiencies each runs at: cuBLAS's large Hopper and Ampere kernels use
// 128 x 256 or 256 x 128 tiles, falling back to smaller ones when the output is small
// ("Matrix Multiplication Background", sec. 2.3, "Typical Tile Dimensions In cuBLAS").
enum class TileKind { kLarge, kSquare, kNarrow };
struct Tile {
  int64_t m, n;
  TileKind kind;
};
constexpr Tile kTiles[] = {{128, 256, TileKind::kLarge},
                           {256, 128, TileKind::kLarge},
                           {128, 128, TileKind::kSquare},
                           {64, 128, TileKind::kNarrow},
                           {128, 64, TileKind::kNarrow}};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Bytes per element a GEMM in `p` reads; the output is written in 16 bits (fp32 and tf32: 32).
double input_bytes(Precision p) {
  switch (p) {
    case Precision::kFp8:
    case Precision::kInt8:
      return 1.0;
    case Precision::kFp4:
      return precision_bytes(p);  // values and block scales
    case Precision::kFp32:
    case Precision::kTf32:
      return 4.0;
    default:
      return 2.0;
  }
}

double output_bytes(Precision p) {
  return p == Precision::kFp32 || p == Precision::kTf32 ? 4.0 : 2.0;
}

// The least k one share of a split-K GEMM keeps: four k-steps of 64, the depth a 16-bit
// Ampere or Hopper tensor-core kernel loads per pipeline stage, so that its pipeline fills.
constexpr int64_t kLeastSplitK = 256;

// gemm_time with the tile model given explicitly (the fit varies it).
double time_with(const Gpu& gpu, const GemmRate& rate, const TileModel& t, const GemmShape& s,
                 double compute_share = 1.0) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) {
    return 0.0;
  }
  const double b = static_cast<double>(s.batch);
  const double m = static_cast<double>(s.m);
  const double n = static_cast<double>(s.n);
  const double k = static_cast<double>(s.k);
  const double in = input_bytes(rate.precision);
  const double bandwidth = gpu.memory_bandwidth.si() * gpu.efficiency->hbm;
  // Operands read and the output written once, at the achieved HBM rate.
  const double memory = b *
                        (in * m * k + (s.b_bytes > 0 ? s.b_bytes : in) * k * n +
                         output_bytes(rate.precision) * m * n) /
                        bandwidth;
  // A split-K GEMM's partial sums, fp32, each share's written and read back once to be added:
  // time per share, at the achieved HBM rate, beside the operands' traffic.
  const double partials = 2.0 * 4.0 * b * m * n / bandwidth;
  const double per_sm = rate.peak.si() / static_cast<double>(gpu.sms);
  const double overhead = t.tile_overhead.si() / compute_share;
  double best = 1e300;
  for (const Tile& tile : kTiles) {
    const double rel = tile.kind == TileKind::kLarge    ? 1.0
                       : tile.kind == TileKind::kSquare ? t.square_tile
                                                        : t.narrow_tile;
    const int64_t tiles = s.batch * ceil_div(s.m, tile.m) * ceil_div(s.n, tile.n);
    // One tile's whole k-loop.
    const double loop = 2.0 * static_cast<double>(tile.m * tile.n) * k /
                        (per_sm * t.loop_efficiency * rel * compute_share);
    if (tiles >= gpu.sms) {
      const double waves = static_cast<double>(ceil_div(tiles, gpu.sms));
      best = std::min(best, std::max(waves * (loop + overhead), memory));
      continue;
    }
    // Fewer tiles than SMs: the library may cut k into `split` shares run by separate blocks
    // (split-K), up to one wave of them: each share's loop is 1/split as long, and the partial
    // sums add split x `partials` of traffic. The best split evens the two sides:
    // loop / split + overhead = memory + split x partials.
    const int64_t most = std::max<int64_t>(1, std::min(gpu.sms / tiles, s.k / kLeastSplitK));
    auto time_at = [&](int64_t split) {
      const double x = static_cast<double>(split);
      return std::max(loop / x + overhead, memory + (split > 1 ? x * partials : 0.0));
    };
    const double d = memory - overhead;
    const double even = (std::sqrt(d * d + 4.0 * partials * loop) - d) / (2.0 * partials);
    for (double c : {1.0, static_cast<double>(most), std::floor(even), std::ceil(even)}) {
      const int64_t split = std::clamp<int64_t>(
          static_cast<int64_t>(std::min(c, static_cast<double>(most))), 1, most);
      best = std::min(best, time_at(split));
    }
  }
  const double sustained = s.flops() / (rate.peak.si() * rate.sustained);
  return t.launch.si() + std::max(best, sustained / compute_share);
}

}  // namespace

std::optional<GemmRate> gemm_rate(const Gpu& gpu, Precision p) {
  if (!gpu.efficiency) {
    return std::nullopt;
  }
  const Efficiency& e = *gpu.efficiency;
  switch (p) {
    case Precision::kFp8:
    case Precision::kInt8:
      if (!gpu.peak_for(p) || e.gemm_fp8 <= 0) {
        return std::nullopt;
      }
      return GemmRate{p, *gpu.peak_for(p), e.gemm_fp8};
    case Precision::kFp4:
      // NVFP4 weights and activations (W4A4) on the 4-bit peak; no dequantising fallback.
      if (!gpu.peak_for(p) || e.gemm_fp4 <= 0) {
        return std::nullopt;
      }
      return GemmRate{p, *gpu.peak_for(p), e.gemm_fp4};
    case Precision::kFp32:
    case Precision::kTf32:
      if (!gpu.peak_for(p)) {
        return std::nullopt;
      }
      return GemmRate{p, *gpu.peak_for(p), e.gemm};
    default: {
      // bf16 and fp16 run at one tensor-core rate; int4 weights are dequantised into 16 bits.
      const Precision sixteen =
          gpu.peak_for(Precision::kBf16) ? Precision::kBf16 : Precision::kFp16;
      if (!gpu.peak_for(sixteen)) {
        return std::nullopt;
      }
      return GemmRate{sixteen, *gpu.peak_for(sixteen), e.gemm};
    }
  }
}

bool native_attention_rate(const Gpu& gpu, AttentionKernels kernels) {
  return kernels == AttentionKernels::kNative && gpu.efficiency.has_value() &&
         gpu.efficiency->attention_native > 0;
}

double attention_share(const Gpu& gpu, AttentionKernels kernels) {
  GPUPLAN_CHECK(kernels != AttentionKernels::kEager && gpu.efficiency.has_value(),
                "attention share of eager attention or of an uncalibrated GPU");
  return native_attention_rate(gpu, kernels) ? gpu.efficiency->attention_native
                                             : gpu.efficiency->attention;
}

std::vector<std::string> estimated_rates(const Gpu& gpu, Precision precision,
                                         AttentionKernels attention) {
  std::vector<std::string> out;
  if (!gpu.efficiency) {
    return out;
  }
  const std::vector<std::string>& marked = gpu.efficiency->estimated;
  auto is_estimated = [&](std::string_view key) {
    return std::find(marked.begin(), marked.end(), key) != marked.end();
  };
  if (const std::optional<GemmRate> rate = gemm_rate(gpu, precision)) {
    const std::string_view key =
        rate->precision == Precision::kFp8 || rate->precision == Precision::kInt8 ? "gemm_fp8"
        : rate->precision == Precision::kFp4                                      ? "gemm_fp4"
                                                                                  : "gemm";
    if (is_estimated(key)) {
      out.push_back(fmt::format("{} GEMM", precision_name(rate->precision)));
    }
  }
  if (is_estimated("hbm")) {
    out.emplace_back("HBM");
  }
  if (attention != AttentionKernels::kEager &&
      is_estimated(native_attention_rate(gpu, attention) ? "attention_native" : "attention")) {
    out.emplace_back("attention");
  }
  return out;
}

Text estimated_rates_note(const Gpu& gpu, const std::vector<std::string>& rates) {
  if (rates.empty()) {
    return {};
  }
  auto list = [&](const char* last) { return word_list(rates, last); };
  const bool one = rates.size() == 1;
  return {
      fmt::format("{}: the {} rate{} {}, not {} (data/gpus/{}.toml); gpuplan measure and "
                  "gpuplan calibrate give yours, measured (--profile)",
                  gpu.id, list(" and "), one ? "" : "s", one ? "is an estimate" : "are estimates",
                  one ? "a measurement" : "measurements", gpu.id),
      fmt::format("{}: {} de {} {}, não {} (data/gpus/{}.toml); gpuplan measure e gpuplan "
                  "calibrate dão os seus valores medidos (--profile)",
                  gpu.id, one ? "a taxa" : "as taxas", list(" e "),
                  one ? "é uma estimativa" : "são estimativas", one ? "uma medição" : "medições",
                  gpu.id)};
}

Seconds gemm_time(const Gpu& gpu, Precision precision, const GemmShape& shape,
                  double compute_share) {
  GPUPLAN_CHECK(gpu.tiles.has_value() && gpu.sms > 0, "GPU without a GEMM tile model");
  GPUPLAN_CHECK(compute_share > 0 && compute_share <= 1, "a compute share outside (0, 1]");
  const std::optional<GemmRate> rate = gemm_rate(gpu, precision);
  GPUPLAN_CHECK(rate.has_value(), "GEMM in a precision the GPU has no rate for");
  return Seconds(time_with(gpu, *rate, *gpu.tiles, shape, compute_share));
}

TileFit fit_gemm_tiles(const Gpu& gpu, Precision precision, const std::vector<GemmSample>& samples,
                       const TileModel* hold_shapes) {
  GPUPLAN_CHECK(samples.size() >= min_tile_fit_samples(hold_shapes != nullptr) && gpu.sms > 0,
                "a tile fit needs enough samples and an SM count");
  const std::optional<GemmRate> rate = gemm_rate(gpu, precision);
  GPUPLAN_CHECK(rate.has_value(), "tile fit in a precision the GPU has no rate for");
  auto model_of = [&](const std::vector<double>& x) {
    TileModel t;
    t.loop_efficiency = x[0];
    t.tile_overhead = Seconds(x[1] * 1e-6);
    t.launch = Seconds(x[2] * 1e-6);
    // Smaller tiles reuse each operand less, so they are never more efficient than larger
    // ones: the narrow tile is a share of the square one.
    t.square_tile = hold_shapes ? hold_shapes->square_tile : x[3];
    t.narrow_tile = hold_shapes ? hold_shapes->narrow_tile : x[3] * x[4];
    return t;
  };
  auto loss = [&](const std::vector<double>& x) {
    const TileModel t = model_of(x);
    double sum = 0;
    for (const GemmSample& p : samples) {
      const double measured = p.shape.flops() / p.rate.si();
      const double e = std::log(time_with(gpu, *rate, t, p.shape) / measured);
      sum += e * e;
    }
    return sum / static_cast<double>(samples.size());
  };
  // Parameters: k-loop efficiency, tile overhead (us), launch (us), the square tile's relative
  // efficiency and the narrow tile's relative to the square one.
  std::vector<detail::Bounds> bounds = {
      {0.3, 1.0}, {0.0, 20.0}, {0.0, 50.0}, {0.3, 1.0}, {0.3, 1.0}};
  std::vector<double> start = {0.85, 1.0, 3.0, 0.8, 0.8};
  if (hold_shapes) {
    bounds.resize(3);
    start.resize(3);
  }
  const detail::Minimum best = detail::minimize(loss, start, bounds, 8000);
  TileFit out;
  out.model = model_of(best.x);
  out.rms_log_error = std::sqrt(best.value);
  std::vector<double> errors;
  for (const GemmSample& p : samples) {
    const double measured = p.shape.flops() / p.rate.si();
    errors.push_back(std::fabs(time_with(gpu, *rate, out.model, p.shape) / measured - 1.0));
  }
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  out.median_abs_error = n % 2 == 1 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
  return out;
}

std::vector<double> gemm_time_ratios(const Gpu& gpu, Precision precision,
                                     const std::vector<GemmSample>& samples) {
  std::vector<double> out;
  for (const GemmSample& p : samples) {
    const double measured = p.shape.flops() / p.rate.si();
    out.push_back(gemm_time(gpu, precision, p.shape).si() / measured);
  }
  return out;
}

}  // namespace gpuplan
