// gpuplan web [--host 127.0.0.1] [--port 8080] [--threads 4] : the answers over HTTP and a page
// to ask them from (web.h).
#include <CLI/CLI.hpp>

#include "command.h"
#include "flags.h"
#include "web.h"

namespace gpuplan::cli {

int run_web(const std::vector<std::string>& args) {
  constexpr const char* kName = "web";
  CLI::App app(
      "Serve the answers over HTTP (POST /api/v1/fit, train, scale, serve, plan; GET "
      "/api/v1/catalog/...) and a page to ask them from.",
      args.front());
  WebOptions o;
  app.add_option("--host", o.host, "address to listen on (default 127.0.0.1: this machine only)");
  int64_t port = o.port;
  app.add_option("--port", port, "TCP port (default 8080; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  int64_t threads = o.threads;
  app.add_option("--threads", threads, "worker threads: requests answered at once (default 4)")
      ->check(rule(fields::kThreads));
  app.add_option("--data", o.data, "catalog directory");
  if (std::optional<int> done = parse_flags(app, args, kName)) {
    return *done;
  }
  o.port = static_cast<int>(port);
  o.threads = static_cast<int>(threads);
  Result<std::unique_ptr<WebServer>> server = WebServer::bind(o);
  if (!server) {
    return report_error(kName, server.error());
  }
  emit("gpuplan web: http://{}:{}/ with {} worker thread(s){}; Ctrl-C stops it\n", o.host,
       (*server)->port(), o.threads,
       o.host == "127.0.0.1" || o.host == "localhost" || o.host == "::1"
           ? ""
           : " (reachable from other machines: it has no authentication)");
  std::fflush(stdout);
  (*server)->serve();
  return kExitOk;
}

}  // namespace gpuplan::cli
