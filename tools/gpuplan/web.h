// gpuplan web: the answers over HTTP and a page to ask them from, on loopback by default.
//
// POST /api/v1/{fit,train,scale,serve,plan} take a JSON object whose keys are the command's flag
// names (without "--"; "_" may stand for "-") and "model" (request.h), and answer with exactly
// what the command prints with --json; GET /api/v1/catalog/{gpus,fabrics,models,offers} list the
// catalog; POST /api/v1/{fit,train,scale,serve,plan}/report answer with the command's --html
// report instead (text/html; "lang" picks its language); GET /api/v1/openapi.json describes the
// API; GET / is the page. A request runs the
// same command as the CLI, on one of a fixed number of worker threads, so the answer, the
// field rules and the error text are the CLI's: bad input is 400 with the CLI's one-line
// error, a body over 1 MiB 413, and a request the server will not run for one client (a
// simulation or search over its limits) 400 with the limit.
#ifndef GPUPLAN_TOOLS_WEB_H_
#define GPUPLAN_TOOLS_WEB_H_

#include <memory>
#include <string>

#include "gpuplan/result.h"

namespace gpuplan::cli {

struct WebOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (tests)
  int threads = 4;
  std::string data;  // catalog directory; empty: the default
};

// What one request to the API gets back: a status and a body, JSON unless a report.
struct WebReply {
  int status = 200;
  std::string body;
  std::string type = "application/json";
};

// Answers one API request in-process (the server's handler; tests call it directly too).
// `path` is "/api/v1/...", `method` "GET" or "POST".
WebReply answer_api(const std::string& method, const std::string& path, const std::string& body,
                    const WebOptions& options);

class WebServer {
 public:
  // Binds to the host and port; an Error when it cannot (port in use, bad host).
  static Result<std::unique_ptr<WebServer>> bind(const WebOptions& options);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  int port() const;
  // Serves until stop() (from another thread) or a fatal socket error.
  void serve();
  void stop();

 private:
  struct Impl;
  explicit WebServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The page served at "/": HTML with its CSS and script inline, nothing fetched.
const std::string& web_page();

}  // namespace gpuplan::cli

#endif  // GPUPLAN_TOOLS_WEB_H_
