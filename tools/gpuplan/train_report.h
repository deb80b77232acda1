// Text and JSON writers for a training estimate, shared by `train` and `scale`.
#ifndef GPUPLAN_TOOLS_TRAIN_REPORT_H_
#define GPUPLAN_TOOLS_TRAIN_REPORT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/catalog.h"
#include "gpuplan/json_writer.h"
#include "gpuplan/machines.h"
#include "gpuplan/training.h"
#include "html.h"

namespace gpuplan::cli {

// "megatron-lm as of 2024: fused attention, overlapped gradient reduction, ..."; "(Hopper
// kernels)" after the attention where the estimate ran the kernels written for its GPU's
// architecture (TrainEstimate::native_attention; empty: it did not).
std::string software_text(const TrainJob& job, std::string_view native_kernels,
                          Lang lang = Lang::kEn);

// "tp 8 pp 16 dp 64 cp 1, mb 1, v 4, ZeRO 1, SP, selective recompute".
std::string train_layout_text(const TrainJob& job, Lang lang = Lang::kEn);

// Writes the estimate's fields (layout, memory, step breakdown, throughput, MFU, totals).
void write_train_json(JsonWriter& w, const TrainEstimate& e);

// The human report: verdict, step-time breakdown table, throughput, MFU, totals.
void print_train_text(const TrainEstimate& e, Lang lang);

// Where a step goes, item by item (the step is their sum), named for people.
std::vector<std::pair<std::string, Seconds>> step_items(const StepTime& s, Lang lang);

// One GPU's memory as a stacked bar against `usable`, in GiB.
StackedRow memory_row(const MemoryBreakdown& m, Bytes usable, const std::string& label, Lang lang);

// The estimate in an HTML report: the step-time breakdown and the memory charts, the totals.
void add_train_html(HtmlReport& h, const TrainEstimate& e);

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_TRAIN_REPORT_H_
