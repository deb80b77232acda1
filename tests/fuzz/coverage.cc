// Edge coverage for libFuzzer from GCC's -fsanitize-coverage=trace-pc.
//
// libFuzzer reads coverage from 8-bit counters that clang's instrumentation registers; GCC emits
// only a call to __sanitizer_cov_trace_pc() at every basic block. This file (compiled without
// that instrumentation, or it would call itself) turns each call into a counter bump: the caller's
// address, hashed, picks one of 64 Ki counters, registered with libFuzzer once at start-up. Two
// blocks sharing a counter make the fuzzer blind to one of them, which costs search time, never
// correctness: a crash is a crash either way.
#include <cstddef>
#include <cstdint>

extern "C" void __sanitizer_cov_8bit_counters_init(uint8_t* begin, uint8_t* end);

namespace {

constexpr size_t kCounters = size_t{1} << 16;
uint8_t counters[kCounters];

struct Register {
  Register() { __sanitizer_cov_8bit_counters_init(counters, counters + kCounters); }
} register_counters;

}  // namespace

extern "C" void __sanitizer_cov_trace_pc() {
  const auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  // Fibonacci hashing spreads nearby return addresses over the table.
  const size_t slot = static_cast<size_t>((pc * 0x9E3779B97F4A7C15ULL) >> 48);
  ++counters[slot];
}
