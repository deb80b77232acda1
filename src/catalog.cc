#include "gpuplan/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "gpuplan/model_loader.h"
#include "gpuplan/suggest.h"
#include "loaders.h"

namespace gpuplan {
namespace {

namespace fs = std::filesystem;

// Files with `extension` directly inside `dir`, sorted by name so loading is deterministic.
Result<std::vector<std::string>> list_files(const fs::path& dir, const std::string& extension) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return fail(dir.string(), "not a directory",
                "point --data (or GPUPLAN_DATA) at gpuplan's data/ folder");
  }
  std::vector<std::string> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == extension) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <class T>
Result<const T*> find_by_id(const std::vector<T>& items, std::string_view id,
                            std::string_view kind) {
  std::vector<std::string> ids;
  for (const T& item : items) {
    if (item.id == id) {
      return &item;
    }
    ids.push_back(item.id);
  }
  return fail("", fmt::format("unknown {} '{}'", kind, id),
              suggestion_hint(id, ids) + fmt::format(" (gpuplan catalog list {}s)", kind));
}

template <class T>
Result<bool> check_unique(const std::vector<T>& items) {
  for (size_t i = 1; i < items.size(); ++i) {
    if (items[i].id == items[i - 1].id) {
      return fail(items[i].file,
                  fmt::format("id '{}' is also used by {}", items[i].id, items[i - 1].file),
                  "ids must be unique");
    }
  }
  return true;
}

template <class T>
void sort_by_id(std::vector<T>& items) {
  std::sort(items.begin(), items.end(), [](const T& a, const T& b) { return a.id < b.id; });
}

// References between entries must resolve: a GPU's and an offer's fabrics, an offer's GPU.
Result<bool> check_references(const Catalog& c) {
  for (const Gpu& g : c.gpus()) {
    Result<const Fabric*> f = c.fabric(g.scale_up);
    if (!f) {
      return fail(g.file, fmt::format("scale_up: {}", f.error().what), f.error().hint);
    }
  }
  for (const Offer& o : c.offers()) {
    for (const std::string* ref : {&o.scale_up, &o.scale_out}) {
      if (ref->empty()) {
        continue;
      }
      Result<const Fabric*> f = c.fabric(*ref);
      if (!f) {
        return fail(o.file, f.error().what, f.error().hint);
      }
    }
    Result<const Gpu*> g = c.gpu(o.gpu);
    if (!g) {
      return fail(o.file, g.error().what, g.error().hint);
    }
  }
  // A tier or budget rule that names a GPU the catalog lacks would silently never apply.
  for (const EngineProfile& e : c.engines()) {
    auto known = [&](const std::vector<std::string>& ids, const char* key) -> Result<bool> {
      for (const std::string& id : ids) {
        Result<const Gpu*> g = c.gpu(id);
        if (!g) {
          return fail(e.file, fmt::format("{}: {}", key, g.error().what), g.error().hint);
        }
      }
      return true;
    };
    GPUPLAN_RETURN_IF_ERROR(known(e.peak_second_gpus, "prefill_budget_peak_second_gpus"));
    for (const EngineTier& t : e.tiers) {
      GPUPLAN_RETURN_IF_ERROR(known(t.gpus, "tier"));
      GPUPLAN_RETURN_IF_ERROR(known(t.except_gpus, "tier"));
    }
  }
  // Likewise an architecture no GPU has: its attention kernels would never run.
  std::vector<std::string> architectures;
  for (const Gpu& g : c.gpus()) {
    if (std::find(architectures.begin(), architectures.end(), g.architecture) ==
        architectures.end()) {
      architectures.push_back(g.architecture);
    }
  }
  for (const Framework& f : c.frameworks()) {
    for (const auto& [arch, year] : f.native_attention_since) {
      if (std::find(architectures.begin(), architectures.end(), arch) == architectures.end()) {
        return fail(f.file,
                    fmt::format("native_attention_since: no GPU of the catalog has architecture "
                                "'{}'",
                                arch),
                    suggestion_hint(arch, architectures));
      }
    }
  }
  return true;
}

// Resolves each GPU's [gemm] tiles id against the fitted models in `dir` (data/gemm/*.toml).
Result<bool> attach_tile_models(const fs::path& dir, std::vector<Gpu>& gpus) {
  std::vector<std::string> files;
  GPUPLAN_ASSIGN_OR_RETURN(files, list_files(dir, ".toml"));
  std::vector<TileModel> models;
  std::vector<std::string> ids;
  for (const std::string& f : files) {
    TileModel t;
    GPUPLAN_ASSIGN_OR_RETURN(t, detail::load_tile_model(f));
    if (std::find(ids.begin(), ids.end(), t.fit) != ids.end()) {
      return fail(f, fmt::format("tile model '{}' is defined twice", t.fit), "ids must be unique");
    }
    ids.push_back(t.fit);
    models.push_back(std::move(t));
  }
  for (Gpu& g : gpus) {
    if (!g.tiles) {
      continue;
    }
    auto it = std::find_if(models.begin(), models.end(),
                           [&](const TileModel& t) { return t.fit == g.tiles->fit; });
    if (it == models.end()) {
      return fail(g.file, fmt::format("gemm.tiles: unknown tile model '{}'", g.tiles->fit),
                  suggestion_hint(g.tiles->fit, ids) + " (files in data/gemm/)");
    }
    g.tiles = *it;
  }
  return true;
}

template <class T, class Loader>
Result<std::vector<T>> load_all(const fs::path& dir, const std::string& extension, Loader load) {
  std::vector<std::string> files;
  GPUPLAN_ASSIGN_OR_RETURN(files, list_files(dir, extension));
  std::vector<T> out;
  for (const std::string& f : files) {
    T item;
    GPUPLAN_ASSIGN_OR_RETURN(item, load(f));
    out.push_back(std::move(item));
  }
  sort_by_id(out);
  GPUPLAN_RETURN_IF_ERROR(check_unique(out));
  return out;
}

}  // namespace

Result<Catalog> Catalog::load(const std::string& data_dir) {
  const fs::path root(data_dir);
  Catalog c;
  c.data_dir_ = data_dir;
  GPUPLAN_ASSIGN_OR_RETURN(c.gpus_, load_all<Gpu>(root / "gpus", ".toml", detail::load_gpu));
  GPUPLAN_RETURN_IF_ERROR(attach_tile_models(root / "gemm", c.gpus_));
  GPUPLAN_ASSIGN_OR_RETURN(c.fabrics_,
                           load_all<Fabric>(root / "fabrics", ".toml", detail::load_fabric));
  GPUPLAN_ASSIGN_OR_RETURN(c.offers_,
                           load_all<Offer>(root / "offers", ".toml", detail::load_offer));
  GPUPLAN_ASSIGN_OR_RETURN(
      c.frameworks_, load_all<Framework>(root / "frameworks", ".toml", detail::load_framework));
  GPUPLAN_ASSIGN_OR_RETURN(c.models_, load_all<Model>(root / "models", ".json", load_model_config));
  if (std::error_code ec; fs::is_directory(root / "datasets", ec)) {
    GPUPLAN_ASSIGN_OR_RETURN(c.datasets_,
                             load_all<Dataset>(root / "datasets", ".toml", detail::load_dataset));
  }
  GPUPLAN_ASSIGN_OR_RETURN(c.memory_params_,
                           detail::load_memory_params((root / "params" / "memory.toml").string()));
  GPUPLAN_ASSIGN_OR_RETURN(
      c.train_params_, detail::load_train_params((root / "params" / "training.toml").string(),
                                                 (root / "params" / "training-fit.toml").string()));
  GPUPLAN_ASSIGN_OR_RETURN(
      c.inference_params_,
      detail::load_inference_params((root / "params" / "inference.toml").string(),
                                    (root / "params" / "serving-fit.toml").string()));
  GPUPLAN_ASSIGN_OR_RETURN(
      c.usd_rates_, detail::load_exchange_rates((root / "params" / "exchange.toml").string()));
  GPUPLAN_ASSIGN_OR_RETURN(c.engines_,
                           load_all<EngineProfile>(root / "engines", ".toml", detail::load_engine));
  // The shared serving parameters start from the default engine's values.
  Result<const EngineProfile*> e = c.engine(c.inference_params_.engine);
  if (!e) {
    return fail((root / "params" / "inference.toml").string(),
                fmt::format("engine: {}", e.error().what), e.error().hint);
  }
  c.default_engine_ = static_cast<size_t>(*e - c.engines_.data());
  const EngineSettings d = engine_defaults(**e, c.inference_params_, c.memory_params_);
  c.inference_params_ = d.inference;
  c.memory_params_ = d.memory;
  GPUPLAN_RETURN_IF_ERROR(check_references(c));
  return c;
}

Result<const Gpu*> Catalog::gpu(std::string_view id) const {
  return find_by_id(gpus_, id, "gpu");
}

Result<const Fabric*> Catalog::fabric(std::string_view id) const {
  return find_by_id(fabrics_, id, "fabric");
}

Result<const Offer*> Catalog::offer(std::string_view id) const {
  return find_by_id(offers_, id, "offer");
}

Result<const Framework*> Catalog::framework(std::string_view id) const {
  return find_by_id(frameworks_, id, "framework");
}

Result<const Dataset*> Catalog::dataset(std::string_view id) const {
  return find_by_id(datasets_, id, "dataset");
}

Result<const EngineProfile*> Catalog::engine(std::string_view id) const {
  Result<const EngineProfile*> e = find_by_id(engines_, id, "engine");
  if (e || id.empty()) {
    return e;
  }
  // A name people use for an engine ("trt", "TRT-LLM", "lmdeploy 0.6") suggests that engine
  // before an id that is merely spelled alike.
  for (const EngineProfile& p : engines_) {
    // Three letters at least before an alias's beginning says which engine ("t" would not).
    const bool named =
        p.names(id) || (id.size() >= 3 &&
                        std::any_of(p.aliases.begin(), p.aliases.end(), [&](const std::string& a) {
                          return starts_with_any_case(a, id);
                        }));
    if (named) {
      e.error().hint = fmt::format("did you mean '{}'? (gpuplan catalog list engines)", p.id);
      return e;
    }
  }
  return e;
}

Result<EngineChoice> Catalog::engine_choice(std::string_view spec) const {
  if (spec.empty()) {
    return EngineChoice{&default_engine(), ""};
  }
  const size_t at = spec.find('@');
  const std::string_view id = spec.substr(0, at);
  EngineChoice choice;
  GPUPLAN_ASSIGN_OR_RETURN(choice.profile, engine(id));
  if (at != std::string_view::npos) {
    Result<std::string> release = parse_release(spec.substr(at + 1));
    if (!release) {
      return fail("", release.error().what,
                  fmt::format("write the engine as ID or ID@RELEASE, e.g. '{}@0.10.0'", id));
    }
    choice.release = *release;
  }
  return choice;
}

const EngineProfile* Catalog::engine_named(std::string_view published) const {
  // The engine the name mentions first: the one it starts with ("TensorRT-LLM 0.14 + Triton"),
  // else the first one it names ("Triton + vLLM backend"); on a tie, the first profile.
  const EngineProfile* first = nullptr;
  size_t first_start = std::string_view::npos;
  for (const EngineProfile& e : engines_) {
    if (const auto name = e.find_name(published); name && name->start < first_start) {
      first = &e;
      first_start = name->start;
    }
  }
  return first;
}

Result<Software> Catalog::software(std::string_view spec) const {
  const size_t at = spec.find('@');
  const std::string_view id = spec.substr(0, at);
  Software s;
  Result<const Framework*> f = framework(id);
  if (!f) {
    // As publications write it: "Megatron-LM", "NeMo", "LLM Foundry" name megatron-lm, nemo and
    // llm-foundry.
    std::string normal = lowercase(id);
    std::replace_if(
        normal.begin(), normal.end(), [](char c) { return c == ' ' || c == '_'; }, '-');
    if (Result<const Framework*> g = framework(normal)) {
      f = g;
    }
  }
  GPUPLAN_ASSIGN_OR_RETURN(s.framework, f);
  s.year = kCurrentYear;
  if (at != std::string_view::npos) {
    const std::string_view year = spec.substr(at + 1);
    int64_t y = 0;
    const auto [end, ec] = std::from_chars(year.data(), year.data() + year.size(), y);
    if (ec != std::errc() || end != year.data() + year.size() || y < 2015 || y > kCurrentYear) {
      return fail("", fmt::format("'{}' is not a year from 2015 to {}", year, kCurrentYear),
                  fmt::format("write the framework as ID or ID@YEAR, e.g. '{}@2022'", id));
    }
    s.year = y;
  }
  return s;
}

bool Catalog::is_model_path(std::string_view text) {
  return text.find('/') != std::string_view::npos || (text.size() > 5 && text.ends_with(".json"));
}

Result<Model> Catalog::model(std::string_view id_or_path) const {
  if (is_model_path(id_or_path)) {
    return load_model_config(std::string(id_or_path));
  }
  const Model* m = nullptr;
  GPUPLAN_ASSIGN_OR_RETURN(m, find_by_id(models_, id_or_path, "model"));
  return *m;
}

Result<std::vector<std::string>> Catalog::apply_profile(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, detail::open_catalog_file(path));
  detail::TomlReader r(table, path);
  r.accept("schema");
  GPUPLAN_RETURN_IF_ERROR(r.text("source"));
  std::vector<std::string> changed;
  if (table.contains("fabric")) {
    std::vector<detail::TomlReader> fabrics;
    GPUPLAN_ASSIGN_OR_RETURN(fabrics, r.table_list("fabric"));
    for (detail::TomlReader& f : fabrics) {
      std::string id;
      GPUPLAN_ASSIGN_OR_RETURN(id, f.text("id"));
      auto it = std::find_if(fabrics_.begin(), fabrics_.end(),
                             [&](const Fabric& x) { return x.id == id; });
      if (it == fabrics_.end()) {
        Result<const Fabric*> miss = fabric(id);
        return fail(f.where("id"), miss.error().what, miss.error().hint);
      }
      double v = 0;
      GPUPLAN_ASSIGN_OR_RETURN(v, f.quantity("measured_busbw", Dimension::kBytesPerSecond));
      it->measured_busbw = BytesPerSecond(v);
      GPUPLAN_ASSIGN_OR_RETURN(it->measured_note, f.text("measured_note"));
      GPUPLAN_ASSIGN_OR_RETURN(v, f.quantity("latency", Dimension::kSeconds));
      it->latency = Seconds(v);
      GPUPLAN_RETURN_IF_ERROR(f.finish());
      changed.push_back(fmt::format("fabric {}: bus bandwidth {:.1f} GB/s, latency {:.1f} us", id,
                                    it->measured_busbw->si() / 1e9, it->latency.si() * 1e6));
    }
  } else {
    r.accept("fabric");
  }
  if (table.contains("gpu")) {
    std::vector<detail::TomlReader> gpus;
    GPUPLAN_ASSIGN_OR_RETURN(gpus, r.table_list("gpu"));
    for (detail::TomlReader& g : gpus) {
      std::string id;
      GPUPLAN_ASSIGN_OR_RETURN(id, g.text("id"));
      auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& x) { return x.id == id; });
      if (it == gpus_.end()) {
        Result<const Gpu*> miss = gpu(id);
        return fail(g.where("id"), miss.error().what, miss.error().hint);
      }
      if (!it->efficiency || !it->tiles) {
        return fail(g.where("id"), fmt::format("gpu '{}' has no time model to calibrate", id),
                    "give the catalog entry [efficiency] and [gemm] tables first");
      }
      Efficiency& e = *it->efficiency;
      TileModel& t = *it->tiles;
      std::optional<double> v;
      GPUPLAN_ASSIGN_OR_RETURN(v, g.optional_number("gemm", 0.01, 1.0));
      if (v)
        std::erase(e.estimated, "gemm");  // measured now
      e.gemm = v.value_or(e.gemm);
      GPUPLAN_ASSIGN_OR_RETURN(v, g.optional_number("hbm", 0.01, 1.0));
      if (v)
        std::erase(e.estimated, "hbm");
      e.hbm = v.value_or(e.hbm);
      // The tile model's k-loop, tile and launch times, from a GEMM sweep on this part.
      GPUPLAN_ASSIGN_OR_RETURN(v, g.optional_number("loop_efficiency", 0.05, 1.0));
      t.loop_efficiency = v.value_or(t.loop_efficiency);
      GPUPLAN_ASSIGN_OR_RETURN(v, g.optional_quantity("tile_overhead", Dimension::kSeconds));
      t.tile_overhead = v ? Seconds(*v) : t.tile_overhead;
      GPUPLAN_ASSIGN_OR_RETURN(v, g.optional_quantity("launch", Dimension::kSeconds));
      t.launch = v ? Seconds(*v) : t.launch;
      GPUPLAN_RETURN_IF_ERROR(g.finish());
      changed.push_back(fmt::format(
          "gpu {}: sustained GEMM {:.3f} of peak, GEMM tiles {:.3f} in the k-loop, {:.2f} us per "
          "tile, {:.2f} us per launch, HBM efficiency {:.3f}",
          id, e.gemm, t.loop_efficiency, t.tile_overhead.si() * 1e6, t.launch.si() * 1e6, e.hbm));
    }
  } else {
    r.accept("gpu");
  }
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return changed;
}

const ExchangeRate* Catalog::usd_rate(std::string_view currency) const {
  for (const ExchangeRate& r : usd_rates_) {
    if (r.currency == currency) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace gpuplan
