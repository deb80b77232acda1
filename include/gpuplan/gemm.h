// The time of one matrix multiply on a GPU, from its shape.
//
// Tensor-core GEMM libraries (cuBLAS, CUTLASS) cut the m x n output into tiles, one per thread
// block, and run the blocks in waves over the streaming multiprocessors (SMs). A GEMM's time is
// therefore quantised twice: a partial tile costs a whole tile, and a partial wave costs a whole
// wave (NVIDIA, "Matrix Multiplication Background", sec. 3). Each tile also pays a fixed cost
// beside its k-loop (loading the first operands, writing the output tile), and each GEMM a
// launch. A GEMM with little work per byte is bound by memory traffic instead. And however well
// a large GEMM tiles, the part cannot run above the rate it sustains under load — the power
// limit holds the clock below the boost clock the datasheet peak assumes — which is what the
// MAMF measurement (best shape, mean of 100 runs) reports as `Efficiency::gemm`.
//
// The library is modelled as picking the fastest of a few tile shapes; the tile model's
// parameters are fitted to a published GEMM sweep by fit_gemm_tiles() (gpuplan calibrate
// --gemm-sweep), and the data files say which sweep. docs/FORMULAS.md#gemm.
#ifndef GPUPLAN_GEMM_H_
#define GPUPLAN_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuplan/hardware.h"
#include "gpuplan/lang.h"
#include "gpuplan/units.h"

namespace gpuplan {

// C (m x n) = A (m x k) x B (k x n), `batch` times over independent matrices (a batched or
// grouped GEMM, one launch).
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  // Bytes per element of B as stored, where the weights are narrower than the GEMM computes
  // (int4 weights dequantised into 16-bit GEMMs, W4A16); 0: the GEMM's input width.
  double b_bytes = 0;

  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
           static_cast<double>(batch);
  }
};

// Time of one GEMM: the fastest tile shape's waves, or its memory traffic at the achieved HBM
// bandwidth, or its FLOPs at the sustained rate, whichever is longest, plus the launch. A GEMM
// with fewer tiles than SMs (a decode step's few rows) splits k among blocks (split-K) as far
// as it pays for its fp32 partial sums. `compute_share` is the share of the microbenchmark's
// compute rate the GPU keeps under load (TrainParams::in_situ_for in a training step,
// InferenceParams::compute_share in a serving iteration); it slows the tiles and the sustained
// rate, not the memory traffic.
// Training and serving time their GEMMs with this one function. docs/FORMULAS.md#gemm.
// REQUIRES: gpu.efficiency and gpu.tiles are set; the GPU has a peak for `precision`'s class;
// 0 < compute_share <= 1.
Seconds gemm_time(const Gpu& gpu, Precision precision, const GemmShape& shape,
                  double compute_share = 1.0);

// The dense peak a GEMM in `precision` runs against, and the sustained share of it
// (Efficiency::gemm or gemm_fp8): fp8 and int8 GEMMs use the 8-bit tensor cores where the part
// has them (W8A8); everything else runs in 16 bits (bf16, else fp16), fp32 and tf32 as such.
// nullopt when the part has no such rate.
struct GemmRate {
  Precision precision = Precision::kBf16;  // the tensor-core format that runs
  FlopsPerSecond peak;
  double sustained = 0;  // fraction of `peak`
};
std::optional<GemmRate> gemm_rate(const Gpu& gpu, Precision precision);

// Which attention kernels a job runs, hence which attention rate it leans on: eager attention
// goes through the GEMM tile model and HBM, fused kernels at Efficiency::attention, and the
// kernels written for the GPU's architecture at Efficiency::attention_native where the part has
// that rate (serving engines run them; training software from its native_attention_since).
enum class AttentionKernels { kEager, kFused, kNative };

// Whether fused `kernels` on `gpu` run at Efficiency::attention_native: they are the kernels
// written for its architecture and the part has their measured rate. Otherwise fused kernels run
// at Efficiency::attention (the FlashAttention-2 class).
bool native_attention_rate(const Gpu& gpu, AttentionKernels kernels);
// The share of the dense 16-bit peak that fused `kernels` run at on `gpu` (forward).
// REQUIRES: kernels != kEager, gpu.efficiency.
double attention_share(const Gpu& gpu, AttentionKernels kernels);

// The rates a job in `precision` with `attention` kernels leans on that `gpu`'s catalog file
// marks estimated (Efficiency::estimated), in words: "fp4 GEMM", "HBM", "attention"; empty when
// all are measured.
std::vector<std::string> estimated_rates(const Gpu& gpu, Precision precision,
                                         AttentionKernels attention);
// The note that says so, in both languages: "b200: the fp4 GEMM, HBM and attention rates are
// estimates, not measurements (data/gpus/b200.toml); ..."; empty when `rates` is.
Text estimated_rates_note(const Gpu& gpu, const std::vector<std::string>& rates);

// One measured GEMM of a sweep.
struct GemmSample {
  GemmShape shape;
  FlopsPerSecond rate;
};

// Fits TileModel's k-loop efficiency, tile overhead, launch time and the two smaller tiles'
// relative efficiencies to a sweep measured in `precision` on `gpu`, by least squares on
// log(time) (Nelder-Mead from a fixed start, so the fit is deterministic). `gpu` supplies the
// SM count, peak, sustained ceiling and HBM rate. With `hold_shapes`, the smaller tiles keep
// its relative efficiencies (a sweep of square sizes cannot tell tile shapes apart).
// REQUIRES: at least min_tile_fit_samples(hold_shapes) samples.
struct TileFit {
  TileModel model;
  double rms_log_error = 0;
  double median_abs_error = 0;  // |predicted / measured time - 1| over the samples
};
TileFit fit_gemm_tiles(const Gpu& gpu, Precision precision, const std::vector<GemmSample>& samples,
                       const TileModel* hold_shapes = nullptr);

// GEMMs a tile fit needs: one per fitted parameter (five, or three with the shapes held).
inline size_t min_tile_fit_samples(bool hold_shapes) {
  return hold_shapes ? 3 : 5;
}

// Predicted over measured time of each sample, for reports and tests.
std::vector<double> gemm_time_ratios(const Gpu& gpu, Precision precision,
                                     const std::vector<GemmSample>& samples);

}  // namespace gpuplan

#endif  // GPUPLAN_GEMM_H_
