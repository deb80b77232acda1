// gpuplan web against the CLI: the API answers with exactly what the command prints with
// --json, errors with the command's one-line message, and the server on an ephemeral port holds
// up to concurrent clients, oversized bodies and wrong methods.
#include "web.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "gpuplan/catalog.h"
#include "shipped_catalog.h"

namespace gpuplan::cli {
namespace {

using nlohmann::json;

WebOptions options() {
  WebOptions o;
  o.data = GPUPLAN_DATA_DIR;
  return o;
}

// What `gpuplan NAME ARGS... --data DATA --json` prints, and its status.
struct Cli {
  int status = 0;
  std::string out;
  std::string err;
};
Cli cli(CommandFn run, const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), "gpuplan " + name);
  args.insert(args.end(), {"--data", GPUPLAN_DATA_DIR, "--json"});
  Capture c;
  Cli r;
  {
    ScopedCapture scope(&c);
    r.status = run(args);
  }
  r.out = c.out;
  r.err = c.err;
  return r;
}

TEST(WebApi, TheCatalogListsEveryEntryInTheCatalogsOrder) {
  const WebReply r = answer_api("GET", "/api/v1/catalog/offers", "", options());
  ASSERT_EQ(r.status, 200) << r.body;
  const json offers = json::parse(r.body);
  const Catalog& c = shipped_catalog();
  ASSERT_EQ(offers.size(), c.offers().size());
  for (size_t i = 0; i < offers.size(); ++i) {
    EXPECT_EQ(offers[i]["id"], c.offers()[i].id);
  }
  // Every kind gpuplan catalog list takes: the serving engines too, in the catalog's order.
  const WebReply e = answer_api("GET", "/api/v1/catalog/engines", "", options());
  ASSERT_EQ(e.status, 200) << e.body;
  const json engines = json::parse(e.body);
  ASSERT_EQ(engines.size(), c.engines().size());
  for (size_t i = 0; i < engines.size(); ++i) {
    EXPECT_EQ(engines[i]["id"], c.engines()[i].id);
  }
  const WebReply planets = answer_api("GET", "/api/v1/catalog/planets", "", options());
  EXPECT_EQ(planets.status, 404);
  EXPECT_NE(planets.body.find("try gpus, fabrics, models, offers, frameworks, datasets, engines"),
            std::string::npos)
      << planets.body;
  EXPECT_EQ(answer_api("POST", "/api/v1/catalog/gpus", "{}", options()).status, 405);
}

TEST(WebApi, AnAnswerIsTheClisJsonByteForByte) {
  // The same job through both front ends: flags, and the flags' names as JSON keys.
  const WebReply fit = answer_api(
      "POST", "/api/v1/fit",
      R"({"model": "llama-3.1-70b", "offer": "eveo-hgx-8xh200", "task": "lora", "lora_rank": 32})",
      options());
  const Cli fit_cli =
      cli(run_fit, "fit",
          {"llama-3.1-70b", "--offer", "eveo-hgx-8xh200", "--task", "lora", "--lora-rank", "32"});
  ASSERT_EQ(fit_cli.status, 0) << fit_cli.err;
  EXPECT_EQ(fit.status, 200);
  EXPECT_EQ(fit.body, fit_cli.out);

  const WebReply serve = answer_api("POST", "/api/v1/serve",
                                    R"({"model": "llama-3.1-8b", "gpu": "l4", "input": 200,
                                        "output": 50, "rate": 0.5, "requests": 200})",
                                    options());
  const Cli serve_cli = cli(run_serve, "serve",
                            {"llama-3.1-8b", "--gpu", "l4", "--input", "200", "--output", "50",
                             "--rate", "0.5", "--requests", "200"});
  ASSERT_EQ(serve_cli.status, 0) << serve_cli.err;
  EXPECT_EQ(serve.body, serve_cli.out);

  // A list repeats the flag; plan takes the model as --model, and the server adds --threads 1.
  const WebReply plan = answer_api("POST", "/api/v1/plan",
                                   R"({"model": "llama-3.1-8b", "task": "lora", "tokens": 1e8,
                                       "offers": ["eveo-l4", "eveo-h200"]})",
                                   options());
  const Cli plan_cli = cli(run_plan, "plan",
                           {"--model", "llama-3.1-8b", "--task", "lora", "--tokens", "1e8",
                            "--offers", "eveo-l4", "--offers", "eveo-h200", "--threads", "1"});
  ASSERT_EQ(plan_cli.status, 0) << plan_cli.err;
  EXPECT_EQ(plan.body, plan_cli.out);
}

TEST(WebApi, AReportIsTheClisHtmlFileByteForByte) {
  // /report: the HTML the command writes with --html FILE, in the language asked for.
  const std::string file = testing::TempDir() + "/web-report.html";
  const Cli plan_cli =
      cli(run_plan, "plan",
          {"--model", "llama-3.1-8b", "--task", "lora", "--tokens", "1e8", "--offers", "eveo-l4",
           "--lang", "pt-BR", "--threads", "1", "--html", file});
  ASSERT_EQ(plan_cli.status, 0) << plan_cli.err;
  std::ifstream in(file);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const WebReply r = answer_api("POST", "/api/v1/plan/report",
                                R"({"model": "llama-3.1-8b", "task": "lora", "tokens": 1e8,
                                    "offers": "eveo-l4", "lang": "pt-BR"})",
                                options());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.type, "text/html; charset=utf-8");
  EXPECT_TRUE(r.body.starts_with("<!doctype html>\n<html lang=\"pt-BR\">")) << r.body.substr(0, 80);
  EXPECT_EQ(r.body, html);
  // Bad input is the same 400 with JSON as without /report.
  const WebReply bad =
      answer_api("POST", "/api/v1/fit/report",
                 R"({"model": "llama-3.1-8b", "gpu": "l44", "task": "infer"})", options());
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.type, "application/json");
  EXPECT_EQ(answer_api("POST", "/api/v1/planet/report", "{}", options()).status, 404);
}

TEST(WebApi, BadInputIsA400WithTheClisMessage) {
  const WebReply r =
      answer_api("POST", "/api/v1/fit",
                 R"({"model": "llama-3.1-8b", "gpu": "l44", "task": "infer"})", options());
  const Cli c = cli(run_fit, "fit", {"llama-3.1-8b", "--gpu", "l44", "--task", "infer"});
  EXPECT_EQ(c.status, 1);
  EXPECT_EQ(r.status, 400);
  std::string line = c.err;
  line.pop_back();  // the newline
  EXPECT_EQ(json::parse(r.body)["error"], line);

  // nan through JSON is a string, and the flag rules refuse it as they do on the command line.
  const WebReply nan = answer_api(
      "POST", "/api/v1/serve",
      R"({"model": "llama-3.1-8b", "gpu": "l4", "input": 1, "output": 1, "rate": "nan"})",
      options());
  EXPECT_EQ(nan.status, 400);
  EXPECT_NE(json::parse(nan.body)["error"].get<std::string>().find("--rate: nan is not a finite"),
            std::string::npos);
}

TEST(WebApi, TheServerReadsNoFilesAndRunsNothingOverItsLimits) {
  struct Case {
    const char* path;
    const char* body;
    const char* says;
  };
  const Case cases[] = {
      {"/api/v1/fit", R"({"model": "llama-3.1-8b", "data": "/etc"})", "data: is not accepted"},
      {"/api/v1/fit", R"({"model": "/etc/passwd.json", "task": "infer"})", "reads no files"},
      {"/api/v1/serve", R"({"model": "llama-3.1-8b", "lengths": "/etc/passwd"})",
       "lengths: is not accepted"},
      {"/api/v1/serve", R"({"model": "llama-3.1-8b", "gpu": "l4", "requests": 1000000})",
       "at most 20000 simulated requests"},
      // The limits hold whatever JSON type carries the number or the list.
      {"/api/v1/serve", R"({"model": "llama-3.1-8b", "gpu": "l4", "requests": "1000000"})",
       "at most 20000 simulated requests"},
      {"/api/v1/serve", R"({"model": "llama-3.1-8b", "gpu": "l4", "users": ["10", 6000]})",
       "at most 5000 simulated users"},
      {"/api/v1/serve",
       R"({"model": "llama-3.1-8b", "gpu": "h100-sxm", "input": 100, "output": 10,
           "disaggregate": 64})",
       "at most 16 GPUs split over the web"},
      {"/api/v1/scale", R"({"model": "llama-3.1-8b", "gpu": "h100-sxm", "fabric": "nvlink4",
                            "gpus": "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"})",
       "at most 16 GPU counts"},
      {"/api/v1/fit", "not json", "not a JSON object"},
      {"/api/v1/fit", "[1, 2]", "not a JSON object"},
      {"/api/v1/fit", R"({"model": "llama-3.1-8b", "task": {"a": 1}})", "task: must be"},
      // A value that looks like an option stays the value of its flag, and is refused as one.
      {"/api/v1/fit", R"({"model": "llama-3.1-8b", "task": "infer", "gpu": "--data=/etc"})",
       "unknown gpu '--data=/etc'"},
      {"/api/v1/fit", R"({"model": "--data=etc", "task": "infer"})", "reads no files"},
      {"/api/v1/fit", R"({"model": "llama-3.1-8b", "gpu=x": "l4"})", "is not a flag name"},
      // A report file on the server, or an answer that is not JSON.
      {"/api/v1/fit", R"({"model": "llama-3.1-8b", "task": "infer", "html": "/tmp/x.html"})",
       "html: is not accepted"},
      {"/api/v1/plan", R"({"model": "llama-3.1-8b", "task": "lora", "csv": true})",
       "csv: is not accepted"},
  };
  for (const Case& c : cases) {
    const WebReply r = answer_api("POST", c.path, c.body, options());
    EXPECT_EQ(r.status, 400) << c.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.body << " -> " << r.body;
  }
  EXPECT_EQ(answer_api("GET", "/api/v1/fit", "", options()).status, 405);
  EXPECT_EQ(answer_api("POST", "/api/v1/bogus", "{}", options()).status, 404);
}

TEST(WebApi, AnUploadedConfigIsNamedAsTheUploadNotAServerPath) {
  // A config.json object in the body instead of a catalog id: a tiny dense model.
  const char* body = R"({"task": "infer", "gpu": "l4", "config": {
      "model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
      "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
      "vocab_size": 32000, "max_position_embeddings": 2048}})";
  const WebReply r = answer_api("POST", "/api/v1/fit", body, options());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"]["id"], "uploaded");
  const WebReply bad = answer_api(
      "POST", "/api/v1/fit",
      R"({"task": "infer", "config": {"model_type": "llama", "hidden_size": -1}})", options());
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body.find("gpuplan-web-"), std::string::npos) << bad.body;
}

TEST(WebServer, AnswersConcurrentClientsOnAnEphemeralPort) {
  WebOptions o = options();
  o.port = 0;
  o.threads = 3;
  Result<std::unique_ptr<WebServer>> server = WebServer::bind(o);
  ASSERT_TRUE(server.has_value()) << server.error().message();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  std::thread serving([&] { (*server)->serve(); });

  httplib::Client page("127.0.0.1", port);
  const httplib::Result home = page.Get("/");
  ASSERT_TRUE(home);
  EXPECT_EQ(home->status, 200);
  EXPECT_NE(home->body.find("gpuplan"), std::string::npos);
  EXPECT_EQ(home->get_header_value("Content-Type"), "text/html; charset=utf-8");

  // A body over 1 MiB is refused before it is read.
  const httplib::Result big =
      page.Post("/api/v1/fit", std::string((1 << 20) + 1, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);

  // More clients than workers, each kind of request: all answered, each as it is alone.
  const std::vector<std::pair<std::string, std::string>> asks = {
      {"/api/v1/fit", R"({"model": "llama-3.1-8b", "gpu": "h100-sxm", "task": "train"})"},
      {"/api/v1/serve",
       R"({"model": "llama-3.1-8b", "gpu": "l4", "input": 100, "output": 20, "requests": 100})"},
      {"/api/v1/plan", R"({"model": "llama-3.1-8b", "task": "lora", "tokens": 1e8,
                           "offers": ["eveo-l4"]})"},
      {"/api/v1/catalog/models", ""},
  };
  std::vector<std::string> alone;
  for (const auto& [path, body] : asks) {
    alone.push_back(answer_api(body.empty() ? "GET" : "POST", path, body, o).body);
  }
  std::vector<std::thread> clients;
  std::vector<std::string> got(asks.size() * 2);
  std::vector<int> status(got.size(), 0);
  for (size_t i = 0; i < got.size(); ++i) {
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(120, 0);
      const auto& [path, body] = asks[i % asks.size()];
      httplib::Result r = body.empty() ? c.Get(path) : c.Post(path, body, "application/json");
      if (r) {
        status[i] = r->status;
        got[i] = r->body;
      }
    });
  }
  for (std::thread& t : clients) {
    t.join();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(status[i], 200) << asks[i % asks.size()].first << ": " << got[i];
    EXPECT_EQ(got[i], alone[i % asks.size()]) << asks[i % asks.size()].first;
  }
  (*server)->stop();
  serving.join();
}

}  // namespace
}  // namespace gpuplan::cli
