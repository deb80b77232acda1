#include <fmt/format.h>

#include "loaders.h"

namespace gpuplan::detail {

Result<Fabric> load_fabric(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");  // checked by open_catalog_file
  Fabric f;
  f.file = path;
  GPUPLAN_ASSIGN_OR_RETURN(f.id, checked_id(r));
  GPUPLAN_ASSIGN_OR_RETURN(f.name, r.text("name"));
  std::string kind;
  GPUPLAN_ASSIGN_OR_RETURN(kind, r.text("kind"));
  Result<FabricKind> k = parse_fabric_kind(kind);
  if (!k) {
    return fail(r.where("kind"), k.error().what, k.error().hint);
  }
  f.kind = *k;
  double v = 0;
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("bandwidth", Dimension::kBytesPerSecond));
  if (v <= 0) {
    return fail(r.where("bandwidth"), "key 'bandwidth' must be positive", "");
  }
  f.bandwidth = BytesPerSecond(v);
  GPUPLAN_ASSIGN_OR_RETURN(v, r.quantity("latency", Dimension::kSeconds));
  f.latency = Seconds(v);
  std::optional<double> busbw;
  GPUPLAN_ASSIGN_OR_RETURN(busbw,
                           r.optional_quantity("measured_busbw", Dimension::kBytesPerSecond));
  std::optional<std::string> note;
  GPUPLAN_ASSIGN_OR_RETURN(note, r.optional_text("measured_note"));
  if (busbw) {
    if (!note) {
      return fail(r.where("measured_busbw"), "key 'measured_busbw' needs a 'measured_note'",
                  "say what system and message size it was measured on");
    }
    f.measured_busbw = BytesPerSecond(*busbw);
    f.measured_note = *note;
  }
  GPUPLAN_ASSIGN_OR_RETURN(f.source, r.text("source"));
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return f;
}

}  // namespace gpuplan::detail
