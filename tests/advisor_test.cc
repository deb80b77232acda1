#include "gpuplan/advisor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpuplan/format.h"
#include "shipped_catalog.h"

namespace gpuplan {
namespace {

std::string fixture(const char* name) {
  return std::string(GPUPLAN_TEST_DATA_DIR) + "/plan/" + name;
}

class AdvisorTest : public ::testing::Test {
 protected:
  void SetUp() override { catalog_ = &shipped_catalog(); }
  // A serving job on one offer: `users` concurrent users (or, with users 0, a request rate set
  // by the caller), prompts of `input` tokens, answers of `output`, at most `tpot` per token.
  static PlanJob serve_job(const char* model, const char* offer, int64_t users, int64_t input,
                           int64_t output, double tpot) {
    PlanJob j;
    j.kind = JobKind::kServe;
    j.model = model;
    j.users = users;
    j.input_tokens = input;
    j.output_tokens = output;
    j.latency_target = Seconds(tpot);
    j.offers = {offer};
    return j;
  }
  Plan plan(const PlanJob& job) {
    return make_plan(job, *catalog_->model(job.model), *catalog_, 2);
  }
  static PlanJob lora_70b() {
    PlanJob j;
    j.kind = JobKind::kLora;
    j.model = "llama-3.1-70b";
    j.tokens = 2e9;
    j.deadline = Seconds(7 * 86400.0);
    return j;
  }
  const Catalog* catalog_ = nullptr;
};

TEST_F(AdvisorTest, ResidencyKeepsOnlyOffersWithASiteInTheCountry) {
  PlanJob j = lora_70b();
  j.residency = {"BR"};
  const Plan p = plan(j);
  ASSERT_EQ(p.ranked.size(), 1U);
  EXPECT_EQ(p.ranked[0].offer->id, "eveo-hgx-8xh200");
  for (const PlanCandidate& r : p.rejected) {
    const bool brazilian = r.offer->id.starts_with("eveo-");
    EXPECT_EQ(r.why_not.en.starts_with("outside residency BR"), !brazilian) << r.offer->id;
    EXPECT_EQ(r.why == Why::kResidency, !brazilian) << r.offer->id;
  }
}

TEST_F(AdvisorTest, FullFineTuneOf70bDoesNotFitOneHgx) {
  // 18 bytes per parameter x 70.55 B = 1.27 TB > 8 x 140.4 GiB (see FitTest).
  PlanJob j = lora_70b();
  j.kind = JobKind::kFinetune;
  j.offers = {"eveo-hgx-8xh200"};
  const Plan p = plan(j);
  EXPECT_TRUE(p.ranked.empty());
  ASSERT_EQ(p.rejected.size(), 1U);
  EXPECT_TRUE(p.rejected[0].why_not.en.starts_with("does not fit")) << p.rejected[0].why_not.en;
  EXPECT_EQ(p.rejected[0].why, Why::kMemory);
  EXPECT_EQ(p.headline, "No offer can run this job; the reasons are below.");
}

TEST_F(AdvisorTest, PointsToLoraWhenAFullFineTuneCannotRun) {
  PlanJob j = lora_70b();
  j.kind = JobKind::kFinetune;
  j.residency = {"BR"};
  const Plan p = plan(j);
  EXPECT_TRUE(p.ranked.empty());
  ASSERT_EQ(p.lora_alternative.size(), 1U);
  EXPECT_TRUE(p.lora_alternative[0].en.starts_with("eveo-hgx-8xh200 (1 node, "))
      << p.lora_alternative[0].en;
  EXPECT_TRUE(p.lora_alternative[0].pt.starts_with("eveo-hgx-8xh200 (1 nó, "))
      << p.lora_alternative[0].pt;
}

TEST_F(AdvisorTest, ARequestRateIsServedAsPoissonArrivalsSharedByTheReplicas) {
  // 20 requests/s over the replicas: each replica's share, simulated, meets the p99 target.
  PlanJob j = serve_job("llama-3.1-8b", "aws-p5.48xlarge", 0, 500, 200, 0.04);
  j.rate_per_s = 20;
  const Plan p = plan(j);
  ASSERT_EQ(p.ranked.size(), 1U) << (p.rejected.empty() ? "" : p.rejected[0].why_not.en);
  const PlanCandidate& c = p.ranked[0];
  EXPECT_EQ(c.batch_per_replica, 0);  // no users: a rate
  EXPECT_LE(c.tpot.si(), 0.04);
  EXPECT_NE(c.layout.en.find(" requests/s each"), std::string::npos) << c.layout.en;
  EXPECT_NE(c.layout.pt.find(" requisições/s cada"), std::string::npos) << c.layout.pt;
  EXPECT_EQ(p.headline.rfind("Serving 20 requests/s needs ", 0), 0U) << p.headline;
  // At most the arrivals come out: 20 requests/s x 200 output tokens = 4,000 tokens/s, less the
  // requests still in flight when the simulation ends.
  EXPECT_LE(c.tokens_per_s, 20.0 * 200 * 1.05);
  EXPECT_GT(c.tokens_per_s, 20.0 * 200 * 0.8);
  // The winner's fleet on engines 10 % slower (speed_uncertainty): at least as many replicas
  // of the same shape, said in a note.
  EXPECT_GE(c.replicas_if_slower, c.replicas);
  EXPECT_EQ(c.gpus_per_replica * c.replicas, c.gpus);
  const auto note = std::find_if(p.notes.begin(), p.notes.end(), [](const Text& t) {
    return t.en.rfind("sensitivity: were every iteration 10 % slower", 0) == 0;
  });
  ASSERT_NE(note, p.notes.end());
  EXPECT_NE(
      note->en.find(fmt::format("aws-p5.48xlarge would need {} replicas", c.replicas_if_slower)),
      std::string::npos)
      << note->en;
}

TEST_F(AdvisorTest, AServingPlanSaysWhereTheServingFitSawNoneOfTheGpusArchitecture) {
  // The serving fit saw ampere and hopper results only (data/params/serving-fit.toml): a plan
  // on aws-g6.48xlarge (8 L4, ada) says so, once, and one on aws-p5.48xlarge (H100) does not.
  auto fit_notes = [&](const char* offer) {
    PlanJob j = serve_job("llama-3.1-8b", offer, 0, 500, 200, 0.1);
    j.rate_per_s = 1;
    const Plan p = plan(j);
    EXPECT_EQ(p.ranked.size(), 1U) << offer;
    return std::count_if(p.notes.begin(), p.notes.end(), [](const Text& t) {
      return t.en.find("were fitted to published results on ampere and hopper GPUs only") !=
             std::string::npos;
    });
  };
  EXPECT_EQ(fit_notes("aws-g6.48xlarge"), 1);
  EXPECT_EQ(fit_notes("aws-p5.48xlarge"), 0);
}

TEST_F(AdvisorTest, ConvertsPricesWithTheExchangeRate) {
  PlanJob j = lora_70b();
  j.offers = {"aws-p5en.48xlarge"};
  const Plan usd = plan(j);
  j.currency = "BRL";
  j.usd_rate = 5.0;
  const Plan brl = plan(j);
  ASSERT_EQ(usd.ranked.size(), 1U);
  ASSERT_EQ(brl.ranked.size(), 1U);
  ASSERT_TRUE(usd.ranked[0].cost && brl.ranked[0].cost);
  EXPECT_EQ(usd.ranked[0].cost->currency, "USD");
  EXPECT_EQ(brl.ranked[0].cost->currency, "BRL");
  EXPECT_NEAR(brl.ranked[0].cost->amount, 5.0 * usd.ranked[0].cost->amount, 1e-6);
}

TEST_F(AdvisorTest, CostsInReaisUseTheCatalogsDatedRateAndSaySo) {
  // data/params/exchange.toml: 5.2359 BRL per USD, Banco Central do Brasil PTAX of 2026-02-04.
  PlanJob j = lora_70b();
  j.offers = {"aws-p5en.48xlarge"};
  const Plan usd = plan(j);
  j.currency = "BRL";
  ASSERT_TRUE(check_plan_job(j, *catalog_).has_value());
  const Plan brl = plan(j);
  ASSERT_EQ(brl.ranked.size(), 1U);
  ASSERT_TRUE(usd.ranked[0].cost && brl.ranked[0].cost);
  EXPECT_EQ(brl.ranked[0].cost->currency, "BRL");
  EXPECT_NEAR(brl.ranked[0].cost->amount, 5.2359 * usd.ranked[0].cost->amount, 1e-6);
  bool said = false, dito = false;
  for (const Text& n : brl.notes) {
    // The same note for a Brazilian reader: the rate with a decimal comma.
    dito = dito || n.pt.starts_with("preços em USD aparecem em BRL a 5,2359 BRL por USD (Banco");
    said = said || n.en.starts_with(
                       "prices in USD are shown in BRL at 5.2359 BRL per USD (Banco "
                       "Central do Brasil, PTAX, 2026-02-04");
  }
  EXPECT_TRUE(said);
  EXPECT_TRUE(dito);
  // A currency the catalog has no rate for still needs one.
  j.currency = "EUR";
  ASSERT_FALSE(check_plan_job(j, *catalog_).has_value());
  EXPECT_NE(check_plan_job(j, *catalog_).error().hint.find("--usd-rate"), std::string::npos);
}

TEST_F(AdvisorTest, TheHeadlineIsWrittenInEitherLanguageFromTheSameAnswer) {
  // One offer in reais: the verdict's kind decides the sentence, the numbers are the same.
  PlanJob j = lora_70b();
  j.offers = {"aws-p5en.48xlarge"};
  j.currency = "BRL";
  const Plan p = plan(j);
  ASSERT_EQ(p.ranked.size(), 1U);
  const PlanCandidate& b = p.ranked[0];
  ASSERT_EQ(p.verdict, PlanVerdict::kOneServer);  // 8 GPUs, one node (the LoRA fits one HGX)
  EXPECT_EQ(p.headline, plan_headline(p, j, Lang::kEn));
  // The cost in the reader's notation: "R$ 12.345,68" from 12345.678 BRL.
  const std::string reais = "R$ " + number(b.cost->amount, 2, Lang::kPt);
  EXPECT_EQ(plan_headline(p, j, Lang::kPt),
            "Você precisa de 8 GPUs em um servidor: aws-p5en.48xlarge (8 x h200-sxm) termina "
            "em " +
                duration_text(b.time, Lang::kPt) + ", " + reais + ".");
  EXPECT_EQ(p.headline,
            "You need 8 GPUs in one server: aws-p5en.48xlarge (8 x h200-sxm) "
            "finishes in " +
                duration_text(b.time) + ", " + grouped(std::llround(b.cost->amount)) + " BRL.");
  // Nothing runs: a kind without numbers.
  j.kind = JobKind::kFinetune;
  j.offers = {"eveo-hgx-8xh200"};
  const Plan none = plan(j);
  EXPECT_EQ(none.verdict, PlanVerdict::kNothingRuns);
  EXPECT_EQ(plan_headline(none, j, Lang::kPt),
            "Nenhuma oferta consegue rodar este trabalho; os motivos estão abaixo.");
}

TEST_F(AdvisorTest, AMissingPriceIsNamedWithTheFlagToGiveIt) {
  PlanJob j = lora_70b();
  j.offers = {"eveo-hgx-8xh200"};
  const Plan p = plan(j);
  ASSERT_EQ(p.ranked.size(), 1U);
  EXPECT_FALSE(p.ranked[0].cost.has_value());
  EXPECT_EQ(p.ranked[0].price_note.en,
            "eveo-hgx-8xh200 has no public price: give it with --price eveo-hgx-8xh200=VALUE/h");
  j.prices["eveo-hgx-8xh200"] = Money{320, "BRL"};
  const Plan priced = plan(j);
  ASSERT_TRUE(priced.ranked[0].cost.has_value());
  // 8 GPUs x (320 / 8) BRL per GPU-hour x the hours, plus no egress fee (none published).
  EXPECT_NEAR(priced.ranked[0].cost->amount, 320.0 * priced.ranked[0].time.si() / 3600.0, 1e-6);
}

TEST_F(AdvisorTest, ATighterDeadlineNeedsMoreNodes) {
  PlanJob j;
  j.kind = JobKind::kPretrain;
  j.model = "llama-2-7b";
  j.tokens = 1e12;
  j.offers = {"aws-p5.48xlarge"};
  j.deadline = Seconds(60 * 86400.0);
  const Plan relaxed = plan(j);
  j.deadline = Seconds(15 * 86400.0);
  const Plan tight = plan(j);
  ASSERT_EQ(relaxed.ranked.size(), 1U);
  ASSERT_EQ(tight.ranked.size(), 1U);
  EXPECT_LT(relaxed.ranked[0].nodes, tight.ranked[0].nodes);
  EXPECT_LE(tight.ranked[0].time.si(), 15 * 86400.0);
}

TEST_F(AdvisorTest, ServingCountsThePromptsAsWellAsTheOutput) {
  const Plan p = plan(serve_job("llama-3.1-70b", "aws-p5en.48xlarge", 2000, 1000, 300, 0.05));
  ASSERT_EQ(p.ranked.size(), 1U);
  const PlanCandidate& c = p.ranked[0];
  EXPECT_LE(c.tpot.si(), 0.05);
  EXPECT_GE(c.replicas * c.batch_per_replica, 2000);
  // Every output token brings 1000 / 300 prompt tokens, and each token costs 2 FLOPs per
  // parameter (70.6 B): the fleet must do (1 + 1000/300) x 2 x 70.6e9 FLOPs per output token,
  // which cannot exceed its GPUs' dense bf16 peak (989.5 TFLOP/s each on the H200).
  const double flops = c.tokens_per_s * (1.0 + 1000.0 / 300.0) * 2.0 * 70.6e9;
  EXPECT_LT(flops, static_cast<double>(c.gpus) * 989.5e12);
  // Nodes are rented whole: the fleet pays for nodes x 8 GPUs, of which fewer than one node's
  // worth may sit idle (replicas of tp 4 fill a node two at a time), and the headline says
  // how many where some do.
  EXPECT_EQ(c.gpus_rented, c.nodes * c.offer->gpus_per_node);
  EXPECT_GE(c.gpus_rented, c.gpus);
  EXPECT_LT(c.gpus_rented - c.gpus, c.offer->gpus_per_node);
  const std::string idle =
      fmt::format("{} GPUs rented, {} idle", c.gpus_rented, c.gpus_rented - c.gpus);
  EXPECT_EQ(p.headline.find(idle) != std::string::npos, c.gpus_rented > c.gpus) << p.headline;
}

TEST_F(AdvisorTest, ServingTakesTheWeightsTheCheckpointPublishesAndSaysSo) {
  // gpt-oss-120b publishes MXFP4 experts: 60.7 GiB of weights (memory_test.cc), which one or two
  // H100s of an HGX node hold, and the plan says which weights it sized. In bf16 (217.6 GiB)
  // a replica needs at least 4: 3 x 79.6 GiB would leave no KV room, and tp 3 does not divide
  // the 64 heads.
  PlanJob job = serve_job("gpt-oss-120b", "aws-p5.48xlarge", 8, 1000, 300, 0.05);
  const Plan published = plan(job);
  ASSERT_EQ(published.ranked.size(), 1U);
  EXPECT_LE(published.ranked[0].gpus, 2);
  EXPECT_TRUE(std::any_of(published.notes.begin(), published.notes.end(), [](const Text& n) {
    return n.en.starts_with("weights: published mxfp4 experts, bf16 attention");
  }));
  job.precision = Precision::kBf16;
  const Plan wide = plan(job);
  ASSERT_EQ(wide.ranked.size(), 1U);
  EXPECT_GE(wide.ranked[0].gpus, 4);
  EXPECT_TRUE(std::none_of(wide.notes.begin(), wide.notes.end(),
                           [](const Text& n) { return n.en.starts_with("weights:"); }));
}

TEST_F(AdvisorTest, APrefixCacheHitNeedsNoMoreGpusAndReachesTheServingJob) {
  // 2,000 users of long prompts (4,000 tokens, 200 out) with 80 % of each prompt cached (a
  // shared system prompt and documents): the prefill work per request falls to a fifth and
  // each request holds 800 + 200 of its own KV tokens instead of 4,200, so the fleet is
  // smaller. plan passes the hit to the serving job: the same job with prefix_hit 0 is larger.
  PlanJob cold = serve_job("llama-3.1-8b", "aws-p5en.48xlarge", 2000, 4000, 200, 0.05);
  PlanJob warm = cold;
  warm.prefix_hit = 0.8;
  const Plan a = plan(cold);
  const Plan b = plan(warm);
  ASSERT_EQ(a.ranked.size(), 1U);
  ASSERT_EQ(b.ranked.size(), 1U);
  EXPECT_LT(b.ranked[0].gpus, a.ranked[0].gpus);
}

TEST_F(AdvisorTest, ServingRefusalsSayTheirKind) {
  // 70B in bf16 is 131.4 GiB of weights: 8 L4s (8 x 22.5 GiB usable) hold it at tp 8, where
  // every decode step reads 16.4 GiB = 17.6 GB per GPU at 300 GB/s: 59 ms > the 50 ms target.
  const Plan slow = plan(serve_job("llama-3.1-70b", "aws-g6.48xlarge", 10, 1000, 300, 0.05));
  ASSERT_EQ(slow.rejected.size(), 1U);
  EXPECT_EQ(slow.rejected[0].why, Why::kObjective) << slow.rejected[0].why_not.en;
  // One 15 GiB T4 cannot hold the weights at all.
  const Plan small = plan(serve_job("llama-3.1-70b", "aws-g4dn.xlarge", 10, 1000, 300, 0.05));
  ASSERT_EQ(small.rejected.size(), 1U);
  EXPECT_EQ(small.rejected[0].why, Why::kMemory) << small.rejected[0].why_not.en;
  // eveo-h200 is one H200 NVL: 131.4 GiB of weights leave 4.7 GiB of KV cache, 11 contexts
  // of 1,300 tokens (serve's table), so 2,000 users need far more than 100 servers of it
  // (2,000 / 11 = 182 at the very least).
  PlanJob few_job = serve_job("llama-3.1-70b", "eveo-h200", 2000, 1000, 300, 0.05);
  few_job.max_nodes = 100;
  const Plan few = plan(few_job);
  ASSERT_EQ(few.rejected.size(), 1U);
  EXPECT_EQ(few.rejected[0].why, Why::kNodes) << few.rejected[0].why_not.en;
  EXPECT_NE(few.rejected[0].why_not.en.find("more than the 100 allowed (--max-nodes)"),
            std::string::npos)
      << few.rejected[0].why_not.en;
}

TEST_F(AdvisorTest, AServingFleetTakesManyServersOfAOneServerOfferAtTheAllowedSites) {
  // eveo-hgx-8xh200 rents one HGX board as a cluster (max_nodes 1), at SP1, SP2, PR1, CE1 (BR)
  // and FL1 (US). Replicas of Llama 3.1 70B need no link between them, so 2,000 users are
  // served by as many boards as the replicas fill, kept in Brazil.
  PlanJob j = serve_job("llama-3.1-70b", "eveo-hgx-8xh200", 2000, 1000, 300, 0.05);
  j.residency = {"BR"};
  j.prices["eveo-hgx-8xh200"] = Money{250, "BRL"};
  const Plan p = plan(j);
  ASSERT_EQ(p.ranked.size(), 1U) << (p.rejected.empty() ? "" : p.rejected[0].why_not.en);
  const PlanCandidate& c = p.ranked[0];
  EXPECT_GT(c.nodes, 1);
  // Every replica fits on a board (tp <= 8): the boards are the replicas over the replicas
  // one board holds, rounded up.
  const int64_t tp = c.gpus / c.replicas;
  ASSERT_LE(tp, 8);
  EXPECT_EQ(c.nodes, (c.replicas + 8 / tp - 1) / (8 / tp));
  // Spread over the four BR sites in catalog order, never FL1; shares differ by at most one.
  ASSERT_EQ(c.sites.size(), 4U);
  int64_t total = 0;
  for (size_t i = 0; i < c.sites.size(); ++i) {
    EXPECT_EQ(c.sites[i].site, std::vector<std::string>({"SP1", "SP2", "PR1", "CE1"})[i]);
    EXPECT_LE(c.sites.front().nodes - c.sites[i].nodes, 1);
    total += c.sites[i].nodes;
  }
  EXPECT_EQ(total, c.nodes);
  // The cost is every board for a month of 730 h at the given 250 BRL/h.
  ASSERT_TRUE(c.cost.has_value());
  EXPECT_DOUBLE_EQ(c.cost->amount, 250.0 * static_cast<double>(c.nodes) * 730.0);
  EXPECT_NE(p.headline.find("SP1: "), std::string::npos) << p.headline;
}

TEST_F(AdvisorTest, AModelTooBigForOneNodeIsServedByPipelineStagesAcrossNodes) {
  // Llama 3.1 405B in bf16 is ~810 GB: more than one p4de node (8 x 80 GB A100). Two nodes as
  // two pipeline stages of tp 8 hold it, over the offer's EFA network.
  const Plan p = plan(serve_job("llama-3.1-405b", "aws-p4de.24xlarge", 100, 1000, 300, 0.2));
  ASSERT_EQ(p.ranked.size(), 1U) << (p.rejected.empty() ? "" : p.rejected[0].why_not.en);
  const PlanCandidate& c = p.ranked[0];
  EXPECT_NE(c.layout.en.find("tp 8 pp 2"), std::string::npos) << c.layout.en;
  EXPECT_EQ(c.gpus, c.replicas * 16);
  EXPECT_EQ(c.nodes, c.replicas * 2);
  // A replica's two stages are one cluster: never split between sites.
  for (const SiteNodes& s : c.sites)
    EXPECT_EQ(s.nodes % 2, 0) << s.site;
  EXPECT_LE(c.tpot.si(), 0.2);
}

TEST_F(AdvisorTest, BadJobsAreErrors) {
  PlanJob j = lora_70b();
  j.tokens = 0;
  EXPECT_EQ(check_plan_job(j, *catalog_).error().what, "a training job needs tokens > 0, got 0");
  // A job built by a program, not read from flags or a file, meets the same field rules
  // (fields.h: seq 1 to 16,777,216 tokens, usd_rate 1e-09 to 1e+09).
  j = lora_70b();
  j.seq = 0;
  EXPECT_EQ(check_plan_job(j, *catalog_).error().message(),
            "seq: 0 is out of range; expected 1 to 16,777,216 tokens");
  j = lora_70b();
  j.usd_rate = std::nan("");
  EXPECT_EQ(check_plan_job(j, *catalog_).error().where, "usd_rate");
  j = lora_70b();
  j.offers = {"eveo-hgx"};
  EXPECT_EQ(check_plan_job(j, *catalog_).error().hint,
            "did you mean 'eveo-hgx-8xh200'? (gpuplan catalog list offers)");
  j = lora_70b();
  j.deadline = Seconds(-1);
  EXPECT_EQ(check_plan_job(j, *catalog_).error().what, "the deadline has already passed");
}

TEST_F(AdvisorTest, AFieldOfTheOtherKindOfJobIsAnErrorNotIgnored) {
  // A LoRA job given a serving field, a serving job given a training one: either would be
  // dropped without a word, so each is refused by name.
  PlanJob j = lora_70b();
  j.users = 50;
  EXPECT_EQ(check_plan_job(j, *catalog_).error().message(),
            "users: is for serving jobs (kind serve); this one trains; drop it, or make the job "
            "kind serve");
  j = lora_70b();
  j.latency_target = Seconds(0.05);
  EXPECT_EQ(check_plan_job(j, *catalog_).error().where, "latency_target");
  j = lora_70b();
  j.kind = JobKind::kFinetune;
  j.lora_rank = 8;
  EXPECT_EQ(check_plan_job(j, *catalog_).error().where, "lora_rank");
  PlanJob s;
  s.kind = JobKind::kServe;
  s.model = "llama-3.1-8b";
  s.users = 50;
  s.input_tokens = 100;
  s.output_tokens = 100;
  ASSERT_TRUE(check_plan_job(s, *catalog_).has_value());
  s.tokens = 1e9;
  EXPECT_EQ(check_plan_job(s, *catalog_).error().where, "tokens");
  EXPECT_EQ(check_plan_job(s, *catalog_).error().what, "is for training jobs; this one serves");
  s.tokens = 0;
  s.global_batch = 64;
  EXPECT_EQ(check_plan_job(s, *catalog_).error().where, "global_batch");
}

TEST(PlanLoader, ReadsAJobFile) {
  Result<PlanJob> j = load_plan_job(fixture("epochs.toml"));
  ASSERT_TRUE(j.has_value()) << j.error().message();
  EXPECT_EQ(j->kind, JobKind::kQlora);
  EXPECT_DOUBLE_EQ(j->tokens, 3 * 5e8);  // epochs x dataset_tokens
  EXPECT_DOUBLE_EQ(j->deadline->si(), 36 * 3600.0);
  EXPECT_EQ(j->residency, (std::vector<std::string>{"BR"}));
  EXPECT_DOUBLE_EQ(j->prices.at("eveo-h200").amount, 45.0);
  EXPECT_DOUBLE_EQ(j->egress.si(), 200e9);
}

TEST(PlanLoader, ErrorsNameTheLineAndKey) {
  Result<PlanJob> a = load_plan_job(fixture("typo.toml"));
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().message(),
            fixture("typo.toml") + ":5:1: unknown key 'job.dedline'; did you mean 'deadline'?");
  Result<PlanJob> b = load_plan_job(fixture("half-epochs.toml"));
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().what, "'epochs' and 'dataset_tokens' go together");
}

}  // namespace
}  // namespace gpuplan
