#include "web.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <exception>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "command.h"
#include "gpuplan/fields.h"
#include "request.h"

namespace gpuplan::cli {
namespace {

using nlohmann::json;

constexpr size_t kMostBodyBytes = size_t{1} << 20;  // 1 MiB

// What one client may ask the server to simulate or search: well below the CLI's own limits,
// so that no request holds a worker for more than seconds.
constexpr int64_t kMostRequests = 20'000;  // serve --requests
constexpr int64_t kMostUsers = 5'000;      // serve --users (the simulated load)
constexpr int64_t kMostCounts = 16;        // scale --gpus entries
constexpr int64_t kMostSplitGpus = 16;     // serve --disaggregate

// The commands the API answers, in its order.
constexpr std::array<std::string_view, 5> kApi = {"fit", "train", "scale", "serve", "plan"};

// Keys that would read or write the server's files, or change how it runs and what it answers
// (JSON, always).
constexpr std::array<std::string_view, 9> kRefused = {"data", "profile", "json", "help", "lengths",
                                                      "job",  "threads", "html", "csv"};

std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump();
}

WebReply bad_request(const std::string& message) {
  return {400, error_body(message)};
}

// A value as the number the command will read: a JSON number, or a string that is one whole.
std::optional<double> as_number(const json& v) {
  if (v.is_number()) {
    return v.get<double>();
  }
  if (!v.is_string()) {
    return std::nullopt;
  }
  const std::string& text = v.get_ref<const std::string&>();
  double d = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  return ec == std::errc() && end == text.data() + text.size() ? std::optional<double>(d)
                                                               : std::nullopt;
}

// What one request may not ask the server to do, whichever JSON type carries it: simulate more
// requests or users than kMost*, or scale over more counts than kMostCounts.
Result<bool> check_web_limits(const RequestCommand& c, const std::string& key,
                              const std::string& flag, const json& value) {
  if (c.name == "scale" && flag == "gpus") {
    const size_t counts =
        value.is_array() ? value.size()
        : value.is_string()
            ? static_cast<size_t>(std::count(value.get_ref<const std::string&>().begin(),
                                             value.get_ref<const std::string&>().end(), ',') +
                                  1)
            : 1;
    if (counts > static_cast<size_t>(kMostCounts)) {
      return fail(key, fmt::format("at most {} GPU counts per request", kMostCounts),
                  "run gpuplan scale locally for more");
    }
  }
  for (const json& v : value.is_array() ? value : json::array({value})) {
    const std::optional<double> n = as_number(v);
    if (c.name == "serve" && flag == "requests" && n && *n > kMostRequests) {
      return fail(key, fmt::format("at most {} simulated requests over the web", kMostRequests),
                  "run gpuplan serve locally for more");
    }
    if (c.name == "serve" && flag == "disaggregate" && n && *n > kMostSplitGpus) {
      return fail(key, fmt::format("at most {} GPUs split over the web", kMostSplitGpus),
                  "run gpuplan serve --disaggregate locally for more");
    }
    if (c.name == "serve" && flag == "users" && n && *n > kMostUsers) {
      return fail(key, fmt::format("at most {} simulated users over the web", kMostUsers),
                  "simulate fewer users per instance and size the fleet with target_users");
    }
  }
  return true;
}

constexpr RequestPolicy kWebPolicy{.refused = kRefused,
                                   .refused_where = "over the web",
                                   .refused_hint =
                                       "the server reads no files and sets its own output and "
                                       "threads",
                                   .model_paths = false,
                                   .limit = check_web_limits};

WebReply run_captured(const RequestCommand& c, const std::vector<std::string>& args,
                      const RequestFiles& files) {
  const RequestAnswer a = run_request(c, args);
  if (a.status != kExitOk) {
    return bad_request(files.hide(a.error_line));
  }
  return {200, files.hide(a.out)};
}

WebReply catalog_list(const std::string& kind, const WebOptions& o) {
  const std::vector<std::string> kinds = catalog_kinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    return {404,
            error_body(fmt::format("no catalog list '{}'; try {}", kind, fmt::join(kinds, ", ")))};
  }
  std::vector<std::string> args = {"gpuplan catalog", "list", kind, "--json"};
  if (!o.data.empty()) {
    args.insert(args.begin() + 1, {"--data", o.data});
  }
  return run_captured(*request_command("catalog"), args, RequestFiles());
}

std::string openapi() {
  json paths = json::object();
  // A POST of the command's flags as JSON; `answer` is its 200 response.
  auto post = [](const std::string& summary, const std::string& description, json answer) {
    return json{
        {"post",
         {{"summary", summary},
          {"description", description},
          {"requestBody",
           {{"required", true},
            {"content",
             {{"application/json",
               {{"schema", {{"type", "object"}, {"additionalProperties", true}}}}}}}}},
          {"responses",
           {{"200", std::move(answer)},
            {"400", {{"description", "bad input: {\"error\": the CLI's one-line message}"}}},
            {"413", {{"description", "a body over 1 MiB"}}}}}}}};
  };
  for (std::string_view name : kApi) {
    paths[fmt::format("/api/v1/{}", name)] =
        post(fmt::format("gpuplan {} --json", name),
             fmt::format("The body is an object of the flags of 'gpuplan {} --help' without their "
                         "leading dashes (\"_\" may stand for \"-\"), plus \"model\" (a catalog "
                         "id) or \"config\" (a config.json object); a boolean flag is true, a list "
                         "repeats the flag, a number for a flag with a unit is in SI units "
                         "(seconds, bytes). The answer is what the command prints with --json.",
                         name),
             {{"description", "the answer, as the CLI's --json"}});
    paths[fmt::format("/api/v1/{}/report", name)] =
        post(fmt::format("gpuplan {} --html", name),
             "The same body as without /report (\"lang\": \"pt-BR\" or \"en\" for the "
             "language); the answer is the command's self-contained HTML report with its charts.",
             {{"description", "the report"}, {"content", {{"text/html", json::object()}}}});
  }
  paths["/api/v1/catalog/{kind}"] = {
      {"get",
       {{"summary", "gpuplan catalog list KIND --json"},
        {"parameters",
         {{{"name", "kind"},
           {"in", "path"},
           {"required", true},
           {"schema", {{"type", "string"}, {"enum", catalog_kinds()}}}}}},
        {"responses", {{"200", {{"description", "the entries, as a JSON array"}}}}}}}};
  json doc = {{"openapi", "3.0.3"},
              {"info",
               {{"title", "gpuplan"},
                {"version", GPUPLAN_VERSION},
                {"description", "GPU planning answers: the CLI's --json over HTTP"}}},
              {"paths", paths}};
  return doc.dump(2) + "\n";
}

}  // namespace

WebReply answer_api(const std::string& method, const std::string& path, const std::string& body,
                    const WebOptions& options) {
  try {
    constexpr std::string_view kCatalog = "/api/v1/catalog/";
    if (path == "/api/v1/openapi.json") {
      return method == "GET" ? WebReply{200, openapi()}
                             : WebReply{405, error_body("openapi.json is read with GET")};
    }
    if (path.starts_with(kCatalog)) {
      if (method != "GET") {
        return {405, error_body("the catalog is read with GET")};
      }
      return catalog_list(path.substr(kCatalog.size()), options);
    }
    for (std::string_view name : kApi) {
      const RequestCommand& c = *request_command(name);
      const std::string endpoint = fmt::format("/api/v1/{}", c.name);
      const bool report = path == endpoint + "/report";
      if (path != endpoint && !report) {
        continue;
      }
      if (method != "POST") {
        return {405, error_body(fmt::format("{} is asked with POST and a JSON body", c.name))};
      }
      if (body.size() > kMostBodyBytes) {
        return {413, error_body("the body is over 1 MiB")};
      }
      const json request = json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (request.is_discarded() || !request.is_object()) {
        return bad_request("body: not a JSON object; send {\"model\": ..., \"flag\": value}");
      }
      RequestFiles files;
      Result<std::vector<std::string>> args = request_arguments(c, {}, request, files, kWebPolicy);
      if (!args) {
        return bad_request(fmt::format("gpuplan {}: error: {}", c.name, args.error().message()));
      }
      const bool search = request.contains("search") && request["search"].is_boolean() &&
                          request["search"].get<bool>();
      if (search || c.name == "plan") {
        args->insert(args->end() - 1, {"--threads", "1"});  // a worker is one thread
      }
      if (!options.data.empty()) {
        args->insert(args->end() - 1, {"--data", options.data});
      }
      if (!report) {
        return run_captured(c, *args, files);
      }
      // The command's --html report, written in the request's directory and sent back.
      Result<std::string> file = files.report_path();
      if (!file) {
        return {500, error_body(file.error().message())};
      }
      args->insert(args->end() - 1, "--html=" + *file);
      WebReply r = run_captured(c, *args, files);
      if (r.status != 200) {
        return r;
      }
      std::ifstream in(*file, std::ios::binary);
      std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return {200, files.hide(html), "text/html; charset=utf-8"};
    }
    return {404, error_body(fmt::format("no such endpoint: {} {}", method, path))};
  } catch (const std::exception& e) {
    return {500, error_body(fmt::format("internal error: {}", e.what()))};
  }
}

struct WebServer::Impl {
  WebOptions options;
  httplib::Server server;
  int port = 0;
};

WebServer::WebServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebServer::~WebServer() = default;

Result<std::unique_ptr<WebServer>> WebServer::bind(const WebOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  httplib::Server& s = impl->server;
  const int threads = std::max(1, options.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_payload_max_length(kMostBodyBytes);
  s.set_read_timeout(10, 0);
  s.set_write_timeout(10, 0);
  const WebOptions* o = &impl->options;
  auto api = [o](const httplib::Request& req, httplib::Response& res) {
    const WebReply r = answer_api(req.method, req.path, req.body, *o);
    res.status = r.status;
    res.set_content(r.body, r.type);
  };
  s.Get(R"(/api/.*)", api);
  s.Post(R"(/api/.*)", api);
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(web_page(), "text/html; charset=utf-8");
  });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 413) {
      res.set_content(error_body("the body is over 1 MiB"), "application/json");
    } else if (res.body.empty()) {
      res.set_content(error_body(fmt::format("HTTP {}", res.status)), "application/json");
    }
  });
  if (options.port == 0) {
    impl->port = s.bind_to_any_port(options.host);
  } else if (s.bind_to_port(options.host, options.port)) {
    impl->port = options.port;
  } else {
    impl->port = -1;
  }
  if (impl->port <= 0) {
    return fail(fmt::format("{}:{}", options.host, options.port), "cannot listen there",
                "is the port in use? try --port 0 for any free one");
  }
  return std::unique_ptr<WebServer>(new WebServer(std::move(impl)));
}

int WebServer::port() const {
  return impl_->port;
}

void WebServer::serve() {
  impl_->server.listen_after_bind();
}

void WebServer::stop() {
  impl_->server.stop();
}

}  // namespace gpuplan::cli
