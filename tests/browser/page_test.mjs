// The page of `gpuplan web` in headless Chromium: pick Llama 3.1 70B, a LoRA fine-tune and the
// HGX 8xH200 offer, get the verdict, the ranked table and the charts, switch to Portuguese and
// check what is shown; the screenshot is kept as the test's artefact.
//
// usage: node page_test.mjs GPUPLAN_BINARY SCREENSHOT.png
import { spawn } from "node:child_process";
import { chromium } from "playwright-core";

const [binary, screenshot] = process.argv.slice(2);
if (!binary || !screenshot) {
  console.error("usage: node page_test.mjs GPUPLAN_BINARY SCREENSHOT.png");
  process.exit(2);
}

function fail(message) {
  console.error(`page_test: ${message}`);
  process.exitCode = 1;
}

// Starts the server on a free port and resolves with its address.
function startServer() {
  const server = spawn(binary, ["web", "--port", "0", "--threads", "2"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let seen = "";
    server.stdout.on("data", (chunk) => {
      seen += chunk;
      const m = seen.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) resolve({ server, base: `http://127.0.0.1:${m[1]}/` });
    });
    server.on("exit", (code) => reject(new Error(`gpuplan web exited with ${code}: ${seen}`)));
  });
}

const { server, base } = await startServer();
// Debian's Chromium as root in a container, with no background networking (the machine has no
// way out, and Chromium would otherwise keep trying).
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ locale: "en-US", viewport: { width: 1000, height: 1200 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(base);
  await page.waitForSelector("#model option[value='llama-3.1-70b']", { state: "attached" });
  await page.selectOption("#model", "llama-3.1-70b");
  await page.selectOption("#task", "lora");
  await page.selectOption("#offers", ["eveo-hgx-8xh200"]);
  await page.click("#go");
  await page.waitForFunction(() => document.getElementById("verdict").textContent.length > 0,
                             null, { timeout: 120000 });
  const verdict = await page.textContent("#verdict");
  // 70B LoRA keeps the frozen bf16 weights (131 GiB) and fits one 8 x H200 server (fit_test).
  if (!verdict.includes("eveo-hgx-8xh200")) fail(`the verdict names no offer: '${verdict}'`);
  if (!verdict.startsWith("You need 8 GPUs in one server")) fail(`verdict: '${verdict}'`);
  const rows = await page.$$eval("#ranked tbody tr", (trs) => trs.length);
  if (rows !== 1) fail(`${rows} ranked offers, expected 1 (only eveo-hgx-8xh200 was allowed)`);
  // The table is the CLI's (plan --json "table"): the layout cell is train_layout_text's.
  const layout = await page.textContent("#ranked tbody tr td:nth-child(5)");
  if (!layout.includes("micro-batch")) fail(`English layout cell: '${layout}'`);
  // The offer has no public price, so the chart is the time to finish; and the memory chart.
  const bars = await page.$$eval("#chart-cost svg rect", (r) => r.length);
  if (bars !== 1) fail(`${bars} bars in the time chart, expected 1`);
  const memory = await page.textContent("#chart-memory svg");
  // LoRA of 70B fits on 2 of the offer's H200 (fit_test.cc); the chart shows that smallest fit.
  if (!memory.includes("Memory per GPU on eveo-hgx-8xh200, its smallest fit (2 GPUs)") ||
      !memory.includes("usable")) {
    fail(`memory chart: '${memory}'`);
  }
  const heading = await page.textContent("h1");
  if (heading !== "gpuplan: one GPU or a cluster?") fail(`English title: '${heading}'`);

  await page.click("#pt");
  const title = await page.textContent("h1");
  if (title !== "gpuplan: uma GPU ou um cluster?") fail(`Portuguese title: '${title}'`);
  const header = await page.$$eval("#ranked thead th", (th) => th.map((e) => e.textContent));
  if (header[1] !== "oferta" || header[2] !== "nós" || header[4] !== "divisão") {
    fail(`Portuguese header: ${header}`);
  }
  // The layout in Portuguese words, as plan --lang pt-BR prints it ("micro-lote 1", tools/gpuplan/train_report.cc).
  const divisao = await page.textContent("#ranked tbody tr td:nth-child(5)");
  if (!divisao.includes("micro-lote")) fail(`Portuguese layout cell: '${divisao}'`);
  const chart = await page.textContent("#chart-memory svg");
  if (!chart.includes("Memória por GPU em eveo-hgx-8xh200") || !chart.includes("pesos")) {
    fail(`Portuguese memory chart: '${chart}'`);
  }
  // The verdict switches language too: the plan's Portuguese headline (plan_headline in
  // src/advisor.cc), "Você precisa de 8 GPUs em um servidor: ..." for the same answer.
  const veredito = await page.textContent("#verdict");
  if (!veredito.startsWith("Você precisa de 8 GPUs em um servidor: eveo-hgx-8xh200")) {
    fail(`Portuguese verdict: '${veredito}'`);
  }
  // The full report: the plan's --html file from /api/v1/plan/report, in Portuguese, with its
  // charts (tools/gpuplan/html.cc; "Ofertas classificadas" is its ranked-offers heading).
  const [report] = await Promise.all([page.waitForEvent("popup"), page.click("#report")]);
  await report.waitForLoadState();
  const reportLang = await report.getAttribute("html", "lang");
  const headings = await report.$$eval("h2", (h) => h.map((e) => e.textContent));
  const charts = await report.$$eval("svg", (s) => s.length);
  if (reportLang !== "pt-BR" || !headings.includes("Ofertas classificadas") || charts < 1) {
    fail(`report: lang '${reportLang}', headings ${headings}, ${charts} charts`);
  }
  await report.close();
  const lang = await page.getAttribute("html", "lang");
  if (lang !== "pt-BR") fail(`html lang '${lang}'`);
  if (errors.length > 0) fail(`script errors: ${errors.join("; ")}`);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`page_test: '${verdict}'; ${process.exitCode ? "FAILED" : "passed"}; ${screenshot}`);
} finally {
  await browser.close();
  server.kill();
}
