// The source document's four-step loop, for real: every worker takes its own batch, computes the
// forward and backward pass of a stack of transformer-shaped MLP blocks (x + gelu(x W1) W2, the
// shape and FLOPs of a transformer's MLP), all-reduces the gradients in buckets while the
// backward pass goes on, updates the weights (SGD), repeats.
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "measure/harness.h"
#include "measure/network_math.h"

namespace gpuplan::measure {
namespace {

// C[m x n] = alpha op(A) op(B) + beta C, row-major.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c, float beta) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(ta ? m : k), b, static_cast<int>(tb ? k : n), beta, c,
              static_cast<int>(n));
}

// One model replica: weights, gradients and the activations of one batch of `tokens` rows.
class Mlp {
 public:
  Mlp(const TrainOptions& o, int64_t tokens)
      : h_(o.hidden),
        f_(4 * o.hidden),
        layers_(o.layers),
        tokens_(tokens),
        per_layer_(2 * h_ * f_),
        w_(static_cast<size_t>(per_layer_ * layers_)),
        g_(w_.size()),
        x_(static_cast<size_t>((layers_ + 1) * tokens_ * h_)),
        pre_(static_cast<size_t>(layers_ * tokens_ * f_)),
        act_(pre_.size()),
        dx_(static_cast<size_t>(tokens_ * h_)),
        dx_next_(dx_.size()),
        target_(dx_.size()),
        da_(static_cast<size_t>(tokens_ * f_)) {
    const float scale1 = 1.0f / std::sqrt(static_cast<float>(h_));
    const float scale2 = 1.0f / std::sqrt(static_cast<float>(f_));
    for (int64_t l = 0; l < layers_; ++l) {
      for (int64_t i = 0; i < per_layer_; ++i) {
        const float s = i < h_ * f_ ? scale1 : scale2;
        w_[static_cast<size_t>(l * per_layer_ + i)] =
            s * uniform(o.seed, 1, static_cast<uint64_t>(l * per_layer_ + i));
      }
    }
  }

  int64_t parameters() const { return per_layer_ * layers_; }
  int64_t per_layer() const { return per_layer_; }
  std::vector<float>& weights() { return w_; }
  std::vector<float>& grads() { return g_; }

  // Fills the inputs with global rows [first, first + tokens) of step `step`'s batch.
  void load(uint64_t seed, int step, int64_t first) {
    for (int64_t t = 0; t < tokens_; ++t) {
      for (int64_t c = 0; c < h_; ++c) {
        const uint64_t idx = batch_index(step, first + t, h_, c);
        x_[static_cast<size_t>(t * h_ + c)] = uniform(seed, 2, idx);
        target_[static_cast<size_t>(t * h_ + c)] = uniform(seed, 3, idx);
      }
    }
  }

  void forward() {
    for (int64_t l = 0; l < layers_; ++l) {
      const float* x = &x_[static_cast<size_t>(l * tokens_ * h_)];
      float* pre = &pre_[static_cast<size_t>(l * tokens_ * f_)];
      float* act = &act_[static_cast<size_t>(l * tokens_ * f_)];
      float* y = &x_[static_cast<size_t>((l + 1) * tokens_ * h_)];
      const float* w1 = &w_[static_cast<size_t>(l * per_layer_)];
      const float* w2 = w1 + h_ * f_;
      gemm(false, false, tokens_, f_, h_, x, w1, pre, 0.0f);
      for (int64_t i = 0; i < tokens_ * f_; ++i)
        act[i] = gelu(pre[i]);
      std::copy(x, x + tokens_ * h_, y);
      gemm(false, false, tokens_, h_, f_, act, w2, y, 1.0f);  // residual: y = x + act W2
    }
  }

  // Loss 0.5 sum (x_L - target)^2 / `normaliser`; its gradient seeds the backward pass.
  void seed_gradient(double normaliser) {
    const float* out = &x_[static_cast<size_t>(layers_ * tokens_ * h_)];
    for (int64_t i = 0; i < tokens_ * h_; ++i) {
      dx_[static_cast<size_t>(i)] =
          static_cast<float>((out[i] - target_[static_cast<size_t>(i)]) / normaliser);
    }
  }

  // Backward through layer l: fills its gradients and leaves dL/dx_l in dx_.
  void backward_layer(int64_t l) {
    const float* x = &x_[static_cast<size_t>(l * tokens_ * h_)];
    const float* pre = &pre_[static_cast<size_t>(l * tokens_ * f_)];
    const float* act = &act_[static_cast<size_t>(l * tokens_ * f_)];
    const float* w1 = &w_[static_cast<size_t>(l * per_layer_)];
    const float* w2 = w1 + h_ * f_;
    float* g1 = &g_[static_cast<size_t>(l * per_layer_)];
    float* g2 = g1 + h_ * f_;
    gemm(true, false, f_, h_, tokens_, act, dx_.data(), g2, 0.0f);         // dW2 = act^T dy
    gemm(false, true, tokens_, f_, h_, dx_.data(), w2, da_.data(), 0.0f);  // da = dy W2^T
    for (int64_t i = 0; i < tokens_ * f_; ++i) {
      da_[static_cast<size_t>(i)] *= gelu_grad(pre[i]);
    }
    gemm(true, false, h_, f_, tokens_, x, da_.data(), g1, 0.0f);  // dW1 = x^T dpre
    std::copy(dx_.begin(), dx_.end(), dx_next_.begin());          // residual path
    gemm(false, true, tokens_, h_, f_, da_.data(), w1, dx_next_.data(), 1.0f);
    std::swap(dx_, dx_next_);
  }

  void sgd(float lr) {
    for (size_t i = 0; i < w_.size(); ++i)
      w_[i] -= lr * g_[i];
  }

  int64_t layers() const { return layers_; }

 private:
  int64_t h_, f_, layers_, tokens_, per_layer_;
  std::vector<float> w_, g_, x_, pre_, act_, dx_, dx_next_, target_, da_;
};

}  // namespace

TrainResult train_loop(Communicator& comm, Watchdog& dog, const TrainOptions& o) {
  const int n = comm.size();
  const int64_t local_tokens = o.per_worker_batch * o.seq;
  const int64_t global_tokens = local_tokens * n;
  Mlp model(o, local_tokens);
  TrainResult r;
  r.ranks = n;
  r.parameters = model.parameters();
  r.tokens_per_step = static_cast<double>(global_tokens);
  r.flops_per_step = 6.0 * static_cast<double>(model.parameters() * local_tokens);
  r.gradient_bytes = static_cast<double>(model.parameters()) * sizeof(float);
  const double normaliser = static_cast<double>(global_tokens * o.hidden);
  // Buckets cover whole layers, filled from the last layer (whose gradients come first).
  const int64_t layers_per_bucket = std::max<int64_t>(
      1, static_cast<int64_t>(o.bucket_bytes / (static_cast<double>(model.per_layer()) * 4)));
  r.buckets = static_cast<int>((o.layers + layers_per_bucket - 1) / layers_per_bucket);

  for (int step = 0; step < o.warmup + o.steps; ++step) {
    comm.barrier();
    dog.begin(fmt::format("training step {}", step));
    const double t0 = seconds_now();
    model.load(o.seed, step, comm.rank() * local_tokens);
    model.forward();
    model.seed_gradient(normaliser);
    std::vector<std::unique_ptr<Request>> pending;
    double waited = 0;
    int64_t bucket_end = model.layers();  // exclusive
    for (int64_t l = model.layers() - 1; l >= 0; --l) {
      model.backward_layer(l);
      const bool full = bucket_end - l >= layers_per_bucket || l == 0;
      if (full && n > 1) {
        float* start = &model.grads()[static_cast<size_t>(l * model.per_layer())];
        const size_t count = static_cast<size_t>((bucket_end - l) * model.per_layer());
        if (o.overlap) {
          pending.push_back(comm.start_all_reduce(start, count));
        }
        bucket_end = l;
      }
    }
    const double t_backward = seconds_now();
    if (n > 1 && !o.overlap) {
      comm.run(Op::kAllReduce, model.grads().data(), model.grads().data(), model.grads().size());
    }
    for (auto& p : pending) {
      p->wait();
    }
    const double t_reduced = seconds_now();
    waited = t_reduced - t_backward;
    model.sgd(o.learning_rate);
    const double t_end = seconds_now();
    dog.end();
    const double step_s = comm.max(t_end - t0);
    const double compute = comm.max(t_backward - t0);
    const double exposed = comm.max(waited);
    const double update = comm.max(t_end - t_reduced);
    if (step >= o.warmup) {
      r.step_s.push_back(step_s);
      r.compute_s.push_back(compute);
      r.exposed_s.push_back(exposed);
      r.update_s.push_back(update);
    }
  }
  if (o.verify && comm.rank() == 0) {
    // The same steps on one worker with the whole global batch, no communication.
    TrainOptions single = o;
    single.per_worker_batch = o.per_worker_batch * n;
    Mlp ref(single, global_tokens);
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      ref.load(o.seed, step, 0);
      ref.forward();
      ref.seed_gradient(normaliser);
      for (int64_t l = ref.layers() - 1; l >= 0; --l)
        ref.backward_layer(l);
      ref.sgd(o.learning_rate);
    }
    double worst = 0;
    for (size_t i = 0; i < ref.weights().size(); ++i) {
      const double a = model.weights()[i];
      const double b = ref.weights()[i];
      worst = std::max(worst, std::fabs(a - b) / std::max(1.0, std::fabs(b)));
    }
    r.verify_max_rel_diff = worst;
  }
  return r;
}

}  // namespace gpuplan::measure
