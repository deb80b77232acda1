#!/usr/bin/env python3
"""A notebook's worth of gpuplan sweeps, as a script (run in CI by tests/CMakeLists.txt).

1. Does a QLoRA fine-tune of Llama 3.1 70B fit on each GPU of the catalog, and with what room?
2. How does an 8B model scale over 1-8 GPUs on NVLink and on PCIe?
3. Where can a 70B LoRA fine-tune run, data kept in Brazil or anywhere, and at what cost?

Each answer is the CLI's --json as an object; a list of them is a pandas DataFrame's rows.
"""

import gpuplan

try:
    import pandas
except ImportError:  # pandas is optional: the same rows print as plain text
    pandas = None


def table(rows, columns):
    if pandas is not None:
        return pandas.DataFrame(rows)[columns].to_string(index=False)
    lines = ["  ".join(columns)]
    lines += ["  ".join(str(r[c]) for c in columns) for r in rows]
    return "\n".join(lines)


# 1. One fit per GPU: the answers are rows.
gpus = [g.id for g in gpuplan.catalog.gpus()]
fits = [gpuplan.fit(model="llama-3.1-70b", gpu=g, task="qlora", seq=4096) for g in gpus]
rows = [{"gpu": a.gpu.id, "fits": a.fits, "needs_GiB": a.memory.total_bytes / 2**30,
         "usable_GiB": a.gpu.usable_bytes / 2**30} for a in fits]
print("QLoRA fine-tune of llama-3.1-70b, one GPU each:")
print(table(rows, ["gpu", "fits", "needs_GiB", "usable_GiB"]))
assert any(r["fits"] for r in rows) and not all(r["fits"] for r in rows)

# 2. A scaling curve per fabric.
curve = gpuplan.scale(model="llama-3.1-8b", gpu="h200-sxm", fabric=["nvlink4", "pcie5"],
                      gpus="1,2,4,8", global_batch=64, seq=8192)
points = [{"fabric": f.fabric, "gpus": p.gpus,
           "efficiency_pct": p.efficiency_pct if p.feasible else None,
           "note": "" if p.feasible else p.reason}
          for f in curve.fabrics for p in f.points]
print("\nScaling of llama-3.1-8b on h200-sxm (same per-GPU setup at every count):")
print(table(points, ["fabric", "gpus", "efficiency_pct", "note"]))
nvlink = [p["efficiency_pct"] for p in points if p["fabric"] == "nvlink4" and p["efficiency_pct"]]
pcie = [p["efficiency_pct"] for p in points if p["fabric"] == "pcie5" and p["efficiency_pct"]]
assert nvlink[-1] > pcie[-1]  # NVLink scales better than PCIe at 8 GPUs

# 3. One plan per residency: where, how long, how much.
plans = []
for residency in ["BR", "US", None]:
    p = gpuplan.plan(model="llama-3.1-70b", task="lora", tokens=2e9, deadline="7 d",
                     residency=residency, price="eveo-hgx-8xh200=320 BRL/h", currency="BRL")
    best = p.ranked[0] if p.ranked else None
    plans.append({"residency": residency or "any", "offer": best.offer if best else "-",
                  "hours": round(best.time_s / 3600, 1) if best else None,
                  "cost": f"{best.cost:,.0f} {best.currency}" if best else "-"})
print("\nLoRA fine-tune of llama-3.1-70b on 2 B tokens within 7 days:")
print(table(plans, ["residency", "offer", "hours", "cost"]))
assert plans[0]["offer"] == "eveo-hgx-8xh200"  # the one offer with a site in Brazil
