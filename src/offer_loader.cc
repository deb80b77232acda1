#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "gpuplan/fields.h"
#include "loaders.h"

namespace gpuplan {

Result<std::string> parse_currency(std::string_view text) {
  const bool ok = text.size() == 3 && std::all_of(text.begin(), text.end(),
                                                  [](char c) { return c >= 'A' && c <= 'Z'; });
  if (!ok) {
    return fail("", fmt::format("'{}' is not a currency code", text),
                "write its three-letter ISO 4217 code, e.g. USD, BRL, EUR");
  }
  return std::string(text);
}

Result<Money> parse_money(std::string_view text, std::string_view per, std::string_view per_words) {
  double amount = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), amount);
  std::string_view rest(end, text.data() + text.size() - end);
  while (!rest.empty() && rest.front() == ' ') {
    rest.remove_prefix(1);
  }
  const std::string example = per == "h"    ? "'55.04 USD/h'"
                              : per.empty() ? "'50000 BRL'"
                                            : "'0.09 USD/GB'";
  // No price is nan, inf, negative or beyond a quadrillion (an hour of every GPU ever made).
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && std::isfinite(amount) && amount > 1e15)) {
    return fail("", fmt::format("'{}' is out of range: expected 0 to 1e15", text),
                "write it as e.g. " + example);
  }
  if (ec == std::errc() && amount < 0) {
    return fail("", fmt::format("'{}' is negative: expected 0 to 1e15", text),
                "write it as e.g. " + example);
  }
  if (ec != std::errc() || !std::isfinite(amount)) {
    return fail("", fmt::format("'{}' is not a price", text), "write it as e.g. " + example);
  }
  const size_t slash = rest.find('/');
  const std::string_view currency = rest.substr(0, slash);
  const bool per_ok = per.empty()
                          ? slash == std::string_view::npos
                          : slash != std::string_view::npos && rest.substr(slash + 1) == per;
  if (!parse_currency(currency) || !per_ok) {
    return fail("",
                per.empty() ? fmt::format("'{}' is not an amount of money", text)
                            : fmt::format("'{}' is not a price per {}", text,
                                          per_words.empty() ? per : per_words),
                "write a currency code" + std::string(per.empty() ? "" : " and the unit") +
                    ", e.g. " + example);
  }
  return Money{amount, std::string(currency)};
}

namespace detail {

namespace {

Result<std::optional<Money>> optional_money(TomlReader& r, const std::string& key,
                                            std::string_view per) {
  std::optional<std::string> text;
  GPUPLAN_ASSIGN_OR_RETURN(text, r.optional_text(key));
  if (!text) {
    return std::optional<Money>();
  }
  Result<Money> m = parse_money(*text, per);
  if (!m) {
    return fail(r.where(key), fmt::format("key '{}': {}", key, m.error().what), m.error().hint);
  }
  return std::optional<Money>(*m);
}

}  // namespace

Result<Offer> load_offer(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");  // checked by open_catalog_file
  Offer o;
  o.file = path;
  GPUPLAN_ASSIGN_OR_RETURN(o.id, checked_id(r));
  GPUPLAN_ASSIGN_OR_RETURN(o.name, r.text("name"));
  GPUPLAN_ASSIGN_OR_RETURN(o.provider, r.text("provider"));
  GPUPLAN_ASSIGN_OR_RETURN(o.gpu, r.text("gpu"));
  GPUPLAN_ASSIGN_OR_RETURN(o.gpus_per_node, r.integer("gpus_per_node", 1, 72));
  GPUPLAN_ASSIGN_OR_RETURN(o.max_nodes, r.integer("max_nodes", 1, 100000));
  GPUPLAN_ASSIGN_OR_RETURN(o.scale_up, r.text("scale_up"));
  std::optional<std::string> scale_out;
  GPUPLAN_ASSIGN_OR_RETURN(scale_out, r.optional_text("scale_out"));
  std::optional<int64_t> nics;
  GPUPLAN_ASSIGN_OR_RETURN(nics, r.optional_integer("nics_per_node", 1, 64));
  if (o.max_nodes > 1 && (!scale_out || !nics)) {
    return fail(r.where("max_nodes"),
                "an offer of several nodes needs 'scale_out' and 'nics_per_node'",
                "name the network fabric between nodes and how many NICs each node has");
  }
  o.scale_out = scale_out.value_or("");
  o.nics_per_node = nics.value_or(0);
  std::vector<TomlReader> sites;
  GPUPLAN_ASSIGN_OR_RETURN(sites, r.table_list("sites"));
  if (sites.empty()) {
    return fail(r.where("sites"), "an offer needs at least one site",
                "[[sites]] id = ... country = ...");
  }
  for (TomlReader& s : sites) {
    Site site;
    GPUPLAN_ASSIGN_OR_RETURN(site.id, s.text("id"));
    GPUPLAN_ASSIGN_OR_RETURN(site.country, s.text("country"));
    GPUPLAN_ASSIGN_OR_RETURN(site.location, s.text("location"));
    if (site.country.size() != 2 || !std::isupper(static_cast<unsigned char>(site.country[0])) ||
        !std::isupper(static_cast<unsigned char>(site.country[1]))) {
      return fail(s.where("country"),
                  fmt::format("country '{}' is not a country code", site.country),
                  "use the ISO 3166 two-letter code, e.g. 'BR' or 'US'");
    }
    GPUPLAN_RETURN_IF_ERROR(s.finish());
    o.sites.push_back(std::move(site));
  }
  GPUPLAN_ASSIGN_OR_RETURN(o.price_per_node_hour, optional_money(r, "price", "h"));
  GPUPLAN_ASSIGN_OR_RETURN(o.egress_per_gb, optional_money(r, "egress", "GB"));
  std::optional<std::string> date;
  GPUPLAN_ASSIGN_OR_RETURN(date, r.optional_text("price_date"));
  if (o.price_per_node_hour && !date) {
    return fail(r.where("price"), "a price needs a 'price_date'", "say when the price was read");
  }
  o.price_date = date.value_or("");
  GPUPLAN_ASSIGN_OR_RETURN(o.source, r.text("source"));
  std::optional<std::string> notes;
  GPUPLAN_ASSIGN_OR_RETURN(notes, r.optional_text("notes"));
  o.notes = notes.value_or("");
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  return o;
}

Result<std::vector<ExchangeRate>> load_exchange_rates(const std::string& path) {
  toml::table table;
  GPUPLAN_ASSIGN_OR_RETURN(table, open_catalog_file(path));
  TomlReader r(table, path);
  r.accept("schema");  // checked by open_catalog_file
  std::vector<TomlReader> rates;
  GPUPLAN_ASSIGN_OR_RETURN(rates, r.table_list("rate"));
  std::vector<ExchangeRate> out;
  for (TomlReader& t : rates) {
    ExchangeRate x;
    GPUPLAN_ASSIGN_OR_RETURN(x.currency, t.text("currency"));
    if (Result<std::string> c = parse_currency(x.currency); !c) {
      return fail(t.where("currency"), c.error().what, c.error().hint);
    }
    if (x.currency == "USD") {
      return fail(t.where("currency"), "USD is what the rates are per", "name another currency");
    }
    for (const ExchangeRate& seen : out) {
      if (seen.currency == x.currency) {
        return fail(t.where("currency"), fmt::format("a second rate for {}", x.currency),
                    "keep one rate per currency");
      }
    }
    std::optional<double> per_usd;
    GPUPLAN_ASSIGN_OR_RETURN(per_usd, t.optional_field("per_usd", fields::kUsdRate));
    if (!per_usd) {
      return fail(t.where("per_usd"), "a rate needs 'per_usd'",
                  "units of the currency per US dollar, e.g. per_usd = 5.2359");
    }
    x.per_usd = *per_usd;
    GPUPLAN_ASSIGN_OR_RETURN(x.date, t.text("date"));
    GPUPLAN_ASSIGN_OR_RETURN(x.publisher, t.text("publisher"));
    GPUPLAN_ASSIGN_OR_RETURN(x.source, t.text("source"));
    GPUPLAN_RETURN_IF_ERROR(t.finish());
    out.push_back(std::move(x));
  }
  GPUPLAN_RETURN_IF_ERROR(r.finish());
  std::sort(out.begin(), out.end(),
            [](const ExchangeRate& a, const ExchangeRate& b) { return a.currency < b.currency; });
  return out;
}

}  // namespace detail
}  // namespace gpuplan
