// The page `gpuplan web` serves at "/": a form that asks /api/v1/plan (and /api/v1/fit for the
// chosen offer's memory), the verdict, the ranked offers with the reasons for the others, and
// two charts drawn as inline SVG. Everything is in this one string; the page fetches nothing
// but the API. Its own labels are in English and Portuguese; the answers' sentences come from
// the API as the CLI writes them.
#include "web.h"

namespace gpuplan::cli {

const std::string& web_page() {
  static const std::string page = R"PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuplan</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1b1f24; background: #fafafa; }
  header, main { max-width: 60rem; margin: 0 auto; padding: 0.8rem 1rem; }
  header { display: flex; justify-content: space-between; align-items: baseline; }
  h1 { font-size: 1.3rem; margin: 0; }
  fieldset { border: 1px solid #ccd; border-radius: 6px; margin: 0 0 0.8rem; }
  label { display: inline-block; margin: 0.25rem 1rem 0.25rem 0; }
  input, select, button { font: inherit; }
  input[type=text], input[type=number] { width: 8rem; }
  button { padding: 0.35rem 1rem; }
  #verdict { font-size: 1.15rem; font-weight: 600; margin: 0.8rem 0; }
  #error { color: #a00; white-space: pre-wrap; }
  table { border-collapse: collapse; width: 100%; margin: 0.5rem 0; }
  th, td { border-bottom: 1px solid #dde; padding: 0.25rem 0.4rem; text-align: left; }
  td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
  .why { color: #555; font-size: 0.92rem; }
  svg text { font: 12px system-ui, sans-serif; }
  .hidden { display: none; }
  @media print { fieldset, button, #lang { display: none; } }
</style>
</head>
<body>
<header>
  <h1 data-t="title">gpuplan: one GPU or a cluster?</h1>
  <span id="lang"><button id="en" type="button">English</button>
  <button id="pt" type="button">Português</button></span>
</header>
<main>
<form id="job">
  <fieldset>
    <legend data-t="model">Model</legend>
    <label><span data-t="catalog">from the catalog</span> <select id="model"></select></label>
    <label><span data-t="upload">or a config.json</span> <input id="config" type="file" accept=".json,application/json"></label>
  </fieldset>
  <fieldset>
    <legend data-t="task">Task</legend>
    <select id="task">
      <option value="pretrain" data-t="pretrain">pre-train</option>
      <option value="finetune" data-t="finetune">full fine-tune</option>
      <option value="lora" data-t="lora" selected>LoRA fine-tune</option>
      <option value="qlora" data-t="qlora">QLoRA fine-tune</option>
      <option value="serve" data-t="serve">serve</option>
    </select>
    <span id="train-fields">
      <label><span data-t="tokens">training tokens</span> <input id="tokens" type="text" value="2e9"></label>
      <label><span data-t="deadline">deadline</span> <input id="deadline" type="text" value="7 d"></label>
    </span>
    <span id="serve-fields" class="hidden">
      <label><span data-t="users">concurrent users</span> <input id="users" type="number" value="200" min="1"></label>
      <label><span data-t="input">prompt tokens</span> <input id="input" type="number" value="1000" min="1"></label>
      <label><span data-t="output">answer tokens</span> <input id="output" type="number" value="300" min="1"></label>
      <label><span data-t="latency">p99 time per token</span> <input id="latency" type="text" value="50 ms"></label>
    </span>
  </fieldset>
  <fieldset>
    <legend data-t="where">Where</legend>
    <label><span data-t="residency">data stays in (country codes)</span> <input id="residency" type="text" placeholder="BR"></label>
    <label><span data-t="offers">only these offers</span> <select id="offers" multiple size="4"></select></label>
    <label><span data-t="currency">currency</span> <input id="currency" type="text" placeholder="USD"></label>
    <label><span data-t="usdrate">per USD</span> <input id="usd-rate" type="text" placeholder="5.4"></label>
  </fieldset>
  <button id="go" type="submit" data-t="go">Answer</button>
</form>
<p id="error"></p>
<section id="result" class="hidden">
  <p id="verdict"></p>
  <table id="ranked"><thead></thead><tbody></tbody></table>
  <div id="chart-cost"></div>
  <div id="chart-memory"></div>
  <h3 id="whynot" data-t="whynot">Why not the others</h3>
  <ul id="rejected" class="why"></ul>
  <p><button id="report" type="button" data-t="report">Full report (HTML, to keep or print)</button></p>
</section>
</main>
<script>
"use strict";
const T = {
  en: {title: "gpuplan: one GPU or a cluster?", model: "Model", catalog: "from the catalog",
       upload: "or a config.json", task: "Task", pretrain: "pre-train", finetune: "full fine-tune",
       lora: "LoRA fine-tune", qlora: "QLoRA fine-tune", serve: "serve",
       tokens: "training tokens", deadline: "deadline", users: "concurrent users",
       input: "prompt tokens", output: "answer tokens", latency: "p99 time per token",
       where: "Where", residency: "data stays in (country codes)", offers: "only these offers",
       currency: "currency", usdrate: "per USD", go: "Answer", whynot: "Why not the others",
       month: "per month",
       costchart: "Cost of each offer that runs the job", timechart: "Time to finish on each offer",
       memchart: "Memory per GPU on", usable: "usable", working: "asking gpuplan...",
       weights: "weights", gradients: "gradients", optimizer: "optimizer",
       activations: "activations", kv: "KV cache", overhead: "runtime",
       smallest: "its smallest fit", report: "Full report (HTML, to keep or print)"},
  pt: {title: "gpuplan: uma GPU ou um cluster?", model: "Modelo", catalog: "do catálogo",
       upload: "ou um config.json", task: "Tarefa", pretrain: "pré-treino",
       finetune: "ajuste fino completo", lora: "ajuste fino LoRA", qlora: "ajuste fino QLoRA",
       serve: "servir", tokens: "tokens de treino", deadline: "prazo",
       users: "usuários simultâneos", input: "tokens do prompt", output: "tokens da resposta",
       latency: "tempo p99 por token", where: "Onde",
       residency: "os dados ficam em (códigos de país)", offers: "só estas ofertas",
       currency: "moeda", usdrate: "por USD", go: "Responder", whynot: "Por que não as outras",
       month: "por mês",
       costchart: "Custo de cada oferta que roda o trabalho",
       timechart: "Tempo até terminar em cada oferta", memchart: "Memória por GPU em",
       usable: "utilizável", working: "perguntando ao gpuplan...", weights: "pesos",
       gradients: "gradientes", optimizer: "otimizador", activations: "ativações",
       kv: "cache KV", overhead: "runtime", smallest: "o menor arranjo que cabe",
       report: "Relatório completo (HTML, para guardar ou imprimir)"}
};
let lang = (navigator.language || "en").toLowerCase().startsWith("pt") ? "pt" : "en";
let last = null;
const offerGpu = {}, gpuUsable = {};
const $ = (id) => document.getElementById(id);
// The plan asked last, for its report.
let asked = null;
const t = (k) => T[lang][k] || k;
function translate() {
  document.documentElement.lang = lang === "pt" ? "pt-BR" : "en";
  for (const e of document.querySelectorAll("[data-t]")) e.textContent = t(e.dataset.t);
  if (last) show(last.plan, last.fit, last.job);
}
function fmt(n, digits) {
  return Number(n).toLocaleString(lang === "pt" ? "pt-BR" : "en-US",
                                  {maximumFractionDigits: digits === undefined ? 0 : digits});
}
async function api(method, path, body) {
  const r = await fetch(path, {method, headers: {"Content-Type": "application/json"},
                               body: body ? JSON.stringify(body) : undefined});
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || ("HTTP " + r.status));
  return j;
}
function option(select, value, text) {
  const o = document.createElement("option");
  o.value = value; o.textContent = text; select.appendChild(o);
}
async function load() {
  const [models, offers, gpus] = await Promise.all([api("GET", "/api/v1/catalog/models"),
                                                    api("GET", "/api/v1/catalog/offers"),
                                                    api("GET", "/api/v1/catalog/gpus")]);
  for (const g of gpus) gpuUsable[g.id] = g.usable_bytes;
  for (const o of offers) offerGpu[o.id] = o.gpu;
  for (const m of models) option($("model"), m.id, m.id);
  $("model").value = models.some((m) => m.id === "llama-3.1-70b") ? "llama-3.1-70b" : models[0].id;
  for (const o of offers) option($("offers"), o.id, o.id + " (" + o.gpus_per_node + " x " + o.gpu + ")");
}
function svgBars(title, rows, unit) {
  const w = 640, bar = 22, left = 190, h = 30 + rows.length * (bar + 6);
  const max = Math.max(...rows.map((r) => r.value), 1e-12);
  let s = '<svg role="img" viewBox="0 0 ' + w + " " + h + '" width="100%" xmlns="http://www.w3.org/2000/svg">';
  s += '<text x="0" y="14" font-weight="600"></text>';
  rows.forEach((r, i) => {
    const y = 24 + i * (bar + 6), len = (w - left - 110) * r.value / max;
    s += '<text x="' + (left - 6) + '" y="' + (y + 15) + '" text-anchor="end"></text>';
    s += '<rect x="' + left + '" y="' + y + '" width="' + len + '" height="' + bar + '" fill="#4a78b5"></rect>';
    s += '<text x="' + (left + len + 4) + '" y="' + (y + 15) + '"></text>';
  });
  s += "</svg>";
  const div = document.createElement("div");
  div.innerHTML = s;
  const texts = div.querySelectorAll("text");
  texts[0].textContent = title + " (" + unit + ")";
  rows.forEach((r, i) => {
    texts[1 + 2 * i].textContent = r.label;
    texts[2 + 2 * i].textContent = r.text;
  });
  return div;
}
function svgMemory(offer, gpus, memory, usable) {
  const parts = [["weights", "#4a78b5"], ["gradients", "#7aa0d0"], ["optimizer", "#e39b3b"],
                 ["activations", "#6bb36b"], ["kv_cache", "#b06bb3"], ["overhead", "#999"]];
  const w = 640, left = 10, top = 24, height = 28, total = Math.max(memory.total_bytes, usable);
  const scale = (w - 20) / total;
  let s = '<svg role="img" viewBox="0 0 ' + w + ' 124" width="100%" xmlns="http://www.w3.org/2000/svg">';
  s += '<text x="0" y="14" font-weight="600"></text>';
  let x = left;
  const legend = [];
  for (const [k, color] of parts) {
    const b = memory[k + "_bytes"] || 0;
    if (b <= 0) continue;
    s += '<rect x="' + x + '" y="' + top + '" width="' + b * scale + '" height="' + height + '" fill="' + color + '"></rect>';
    x += b * scale;
    legend.push([k, color, b]);
  }
  const ux = left + usable * scale;
  s += '<line x1="' + ux + '" x2="' + ux + '" y1="' + (top - 6) + '" y2="' + (top + height + 6) + '" stroke="#a00" stroke-width="2"></line>';
  s += '<text x="' + ux + '" y="' + (top + height + 20) + '" text-anchor="end" fill="#a00"></text>';
  legend.forEach(([k, color], i) => {
    const lx = left + (i % 3) * 210, ly = 84 + Math.floor(i / 3) * 18;
    s += '<rect x="' + lx + '" y="' + ly + '" width="10" height="10" fill="' + color + '"></rect>';
    s += '<text x="' + (lx + 14) + '" y="' + (ly + 9) + '"></text>';
  });
  s += "</svg>";
  const div = document.createElement("div");
  div.innerHTML = s;
  const texts = div.querySelectorAll("text");
  const gib = (b) => fmt(b / 2 ** 30, 1) + " GiB";
  texts[0].textContent = t("memchart") + " " + offer + ", " + t("smallest") + " (" + gpus +
      " GPUs): " + gib(memory.total_bytes);
  texts[1].textContent = t("usable") + " " + gib(usable);
  legend.forEach(([k, , b], i) => {
    texts[2 + i].textContent = t(k === "kv_cache" ? "kv" : k) + " " + gib(b);
  });
  return div;
}
function show(plan, fit, job) {
  $("result").classList.remove("hidden");
  // The API's sentences are English; their Portuguese is in plan.translations["pt-BR"].
  const pt = lang === "pt" ? (plan.translations || {})["pt-BR"] || {} : {};
  $("verdict").textContent = pt.headline || plan.headline;
  const serving = job.task === "serve";
  // The table is the one the CLI prints, cell by cell in the page's language: numbers, money
  // and times are formatted once, by gpuplan.
  const table = pt.table || plan.table;
  const head = $("ranked").querySelector("thead"), body = $("ranked").querySelector("tbody");
  head.replaceChildren(); body.replaceChildren();
  const hr = document.createElement("tr");
  table.header.forEach((h, k) => {
    const th = document.createElement("th");
    th.textContent = h;
    if (table.right[k]) th.className = "n";
    hr.appendChild(th);
  });
  head.appendChild(hr);
  for (const row of table.rows) {
    const tr = document.createElement("tr");
    row.forEach((v, k) => {
      const td = document.createElement("td");
      td.textContent = v;
      if (table.right[k]) td.className = "n";
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }
  // The bars' labels are the table's own cells: its last column is the cost, and a training
  // table's sixth is the time.
  const cell = (i, k) => table.rows[i][k < 0 ? table.rows[i].length + k : k];
  const amount = (p) => p.cost_per_month ?? p.cost;
  const priced = plan.ranked.map((p, i) => [p, i]).filter(([p]) => amount(p) != null);
  $("chart-cost").replaceChildren();
  if (priced.length > 0 && priced.every(([p]) => p.currency === priced[0][0].currency)) {
    $("chart-cost").appendChild(svgBars(t("costchart"), priced.map(([p, i]) => (
      {label: p.offer, value: amount(p), text: cell(i, -1)})),
      priced[0][0].currency + (serving ? " " + t("month") : "")));
  } else if (!serving && plan.ranked.length > 0) {
    $("chart-cost").appendChild(svgBars(t("timechart"), plan.ranked.map((p, i) => (
      {label: p.offer, value: p.time_s / 3600, text: cell(i, 5)})), "h"));
  }
  $("chart-memory").replaceChildren();
  if (fit && fit.offer && fit.offer.fits) {
    const usable = gpuUsable[offerGpu[fit.offer.id]] || 0;
    $("chart-memory").appendChild(svgMemory(fit.offer.id, fit.offer.gpus_needed, fit.offer.memory, usable));
  }
  $("whynot").classList.toggle("hidden", plan.rejected.length === 0);
  $("rejected").replaceChildren();
  for (const r of plan.rejected) {
    const li = document.createElement("li");
    li.textContent = r.offer + ": " + ((pt.why_not || {})[r.offer] || r.why_not);
    $("rejected").appendChild(li);
  }
}
async function answer(ev) {
  ev.preventDefault();
  $("error").textContent = t("working");
  const task = $("task").value, job = {task};
  const file = $("config").files[0];
  const req = {task};
  try {
    if (file) req.config = JSON.parse(await file.text()); else req.model = $("model").value;
  } catch (e) { $("error").textContent = "config.json: " + e.message; return; }
  if (task === "serve") {
    req.users = Number($("users").value);
    req.input_tokens = Number($("input").value);
    req.output_tokens = Number($("output").value);
    if ($("latency").value) req.latency_target = $("latency").value;
  } else {
    req.tokens = Number($("tokens").value);
    if ($("deadline").value) req.deadline = $("deadline").value;
  }
  const residency = $("residency").value.trim();
  if (residency) req.residency = residency.split(/[ ,]+/).filter(Boolean);
  const offers = [...$("offers").selectedOptions].map((o) => o.value);
  if (offers.length) req.offers = offers;
  if ($("currency").value.trim()) req.currency = $("currency").value.trim();
  if ($("usd-rate").value.trim()) req.usd_rate = Number($("usd-rate").value.trim());
  try {
    const plan = await api("POST", "/api/v1/plan", req);
    asked = req;
    let fit = null;
    if (plan.ranked.length > 0) {
      const f = {task: task === "serve" ? "infer" : task === "pretrain" ? "train" : task,
                 offer: plan.ranked[0].offer};
      if (req.config) f.config = req.config; else f.model = req.model;
      try { fit = await api("POST", "/api/v1/fit", f); } catch (e) { fit = null; }
    }
    $("error").textContent = "";
    last = {plan, fit, job};
    show(plan, fit, job);
  } catch (e) {
    $("error").textContent = e.message;
  }
}
$("task").addEventListener("change", () => {
  const serve = $("task").value === "serve";
  $("serve-fields").classList.toggle("hidden", !serve);
  $("train-fields").classList.toggle("hidden", serve);
});
$("en").addEventListener("click", () => { lang = "en"; translate(); });
$("pt").addEventListener("click", () => { lang = "pt"; translate(); });
$("job").addEventListener("submit", answer);
// The same plan as gpuplan plan --html writes it, in the page's language, opened in a new tab.
$("report").addEventListener("click", async () => {
  if (!asked) return;
  const r = await fetch("/api/v1/plan/report", {method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify(Object.assign({}, asked, {lang: lang === "pt" ? "pt-BR" : "en"}))});
  if (!r.ok) { $("error").textContent = (await r.json()).error; return; }
  const url = URL.createObjectURL(new Blob([await r.text()], {type: "text/html"}));
  window.open(url, "_blank");
});
translate();
load().catch((e) => { $("error").textContent = e.message; });
</script>
</body>
</html>
)PAGE";
  return page;
}

}  // namespace gpuplan::cli
