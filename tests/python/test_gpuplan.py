"""The Python module against the CLI it wraps (issue 14).

Run by ctest (tests/CMakeLists.txt) with the built package on PYTHONPATH, GPUPLAN_BIN the CLI
and GPUPLAN_SOURCE_DIR the repository. The CLI is the reference: every answer must be its
--json byte for byte, every refusal its error line.
"""

import json
import os
import shlex
import subprocess
import sys
import threading

import pytest

import gpuplan

SOURCE = os.environ["GPUPLAN_SOURCE_DIR"]
BIN = os.environ["GPUPLAN_BIN"]
EXAMPLES = os.path.join(SOURCE, "examples")
BAD = os.path.join(SOURCE, "tests", "data", "bad")

# The commands the module answers, and the function that asks each.
CALLS = {"fit": gpuplan.fit, "train": gpuplan.train, "scale": gpuplan.scale,
         "serve": gpuplan.serve, "plan": gpuplan.plan, "validate": gpuplan.validate}


def cli(args, cwd=SOURCE):
    """The CLI's stdout, stderr and exit status for `args`."""
    r = subprocess.run([BIN] + args, cwd=cwd, capture_output=True, text=True, timeout=120)
    return r.stdout, r.stderr, r.returncode


def as_call(args):
    """A command line as the module's call: (function, positional, keyword arguments).

    "--flag value" and "--flag=value" become flag=value (a repeated flag, a list), a flag with
    no value True; the first other argument is the model (train, fit, scale, serve), the job
    file (plan) or the file (validate).
    """
    command, rest = args[0], args[1:]
    positional, flags = [], {}
    i = 0
    while i < len(rest):
        token = rest[i]
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if not eq:
                if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                    value = rest[i + 1]
                    i += 1
                else:
                    value = True
            key = name.replace("-", "_")
            if key in flags:
                flags[key] = (flags[key] if isinstance(flags[key], list) else [flags[key]]) + [value]
            else:
                flags[key] = value
        else:
            positional.append(token)
        i += 1
    return command, positional, flags


def call(command, positional, flags):
    f = CALLS[command]
    if command == "validate":
        return f(*positional, **flags)
    if command == "plan":
        return f(positional[0] if positional else None, **flags)
    return f(positional[0] if positional else None, **flags)


def examples():
    for name in sorted(os.listdir(EXAMPLES)):
        if name.endswith(".args"):
            with open(os.path.join(EXAMPLES, name)) as f:
                yield name[:-5], [line.rstrip("\n") for line in f if line.strip()]


@pytest.mark.parametrize("name,args", list(examples()))
def test_every_golden_example_answers_the_clis_json(name, args, monkeypatch):
    # The example's command with --json, through the CLI and through the module: the same
    # bytes. Examples that print JSON already are also their golden output. Their paths are
    # relative to the repository, as the golden tests run them.
    monkeypatch.chdir(SOURCE)
    command, positional, flags = as_call(args)
    flags.pop("json", None)
    answer = call(command, positional, flags)
    out, err, status = cli(args if "--json" in args else args + ["--json"])
    assert status == 0, err
    assert answer.to_json() == out
    if "--json" in args:
        with open(os.path.join(EXAMPLES, name + ".out")) as f:
            assert answer.to_json() == f.read()


def bad_inputs():
    with open(os.path.join(SOURCE, "tests", "bad_inputs.txt")) as f:
        for line in f:
            if not line[:1].isalpha():
                continue
            name, _, args = (part.strip() for part in line.split("|", 2))
            words = shlex.split(args)
            # The module's calls take the model as their first parameter, named `model`: the
            # CLI's '--model' on train has no Python spelling to test.
            if words[0] in CALLS and not (words[0] != "plan" and "--model" in words):
                yield name, words


@pytest.mark.parametrize("name,args", list(bad_inputs()))
def test_every_bad_input_raises_the_clis_error(name, args, monkeypatch):
    # Each row of tests/bad_inputs.txt the module can ask (its files are relative to
    # tests/data/bad): gpuplan.Error, whose text is the CLI's error line and whose parts make it.
    monkeypatch.chdir(BAD)
    _, err, status = cli(args, cwd=BAD)
    assert status in (1, 2)
    command, positional, flags = as_call(args)
    with pytest.raises(gpuplan.Error) as raised:
        call(command, positional, flags)
    e = raised.value
    refused = [k for k in ("json", "csv", "help") if k in flags]
    if refused:
        # An output format: the module answers in JSON only, and says so first.
        assert e.where in refused and e.what == "is not accepted from Python"
    else:
        assert str(e) == err.rstrip("\n")
    message = f"{e.where}: {e.what}" if e.where else e.what
    if e.hint:
        message += f"; {e.hint}"
    assert str(e) == f"gpuplan {command}: error: {message}"


def test_a_model_is_an_id_a_path_or_a_dict():
    by_id = gpuplan.fit(model="llama-3.1-8b", gpu="h100-sxm", task="infer", context=4096)
    path = os.path.join(SOURCE, "data", "models", "llama-3.1-8b.json")
    by_path = gpuplan.fit(model=path, gpu="h100-sxm", task="infer", context=4096)
    with open(path) as f:
        by_dict = gpuplan.fit(model=json.load(f), gpu="h100-sxm", task="infer", context=4096)
    assert by_id.memory.total_bytes == by_path.memory.total_bytes == by_dict.memory.total_bytes
    assert by_dict.model.id == "uploaded"  # a dict is written to uploaded.json for the loader


def test_quantities_take_units_or_si_numbers():
    # 7 days as text or as 604,800 seconds: the same plan.
    job = dict(model="llama-3.1-70b", task="lora", tokens=2e9, residency="BR",
               price="eveo-hgx-8xh200=320 BRL/h")
    assert gpuplan.plan(deadline="7 d", **job) == gpuplan.plan(deadline=7 * 86400, **job)
    with pytest.raises(gpuplan.Error) as e:
        gpuplan.plan(deadline=-1.0, **job)
    assert e.value.where == "--deadline"


def test_an_infeasible_job_is_an_answer_not_an_error():
    a = gpuplan.fit(model="llama-3.1-405b", gpu="l4", task="train")
    assert a.fits is False
    assert "does not fit" in a.reason


def test_answers_are_rows_for_a_data_frame():
    pandas = pytest.importorskip("pandas")
    gpus = ["h100-sxm", "h200-sxm", "l4"]
    answers = [gpuplan.fit(model="llama-3.1-8b", gpu=g, task="lora") for g in gpus]
    frame = pandas.DataFrame(answers)
    assert list(frame["gpu.id"]) == gpus
    assert list(frame["memory.total_bytes"]) == [a.memory.total_bytes for a in answers]
    assert gpuplan.rows(answers)[1]["gpu.id"] == "h200-sxm"
    assert answers[0].to_dict()["gpu"]["id"] == "h100-sxm"


def test_the_catalog_lists_and_shows():
    out, _, status = cli(["catalog", "list", "gpus", "--json"])
    assert status == 0
    assert [g.to_dict() for g in gpuplan.catalog.gpus()] == json.loads(out)
    # The serving engines too (data/engines/): tensorrt-llm reserves whole contexts.
    engines = {e.id: e for e in gpuplan.catalog.engines()}
    assert sorted(engines) == ["lmdeploy", "sglang", "tensorrt-llm", "tgi", "vllm"]
    assert engines["lmdeploy"].kv_block_tokens == 64
    assert engines["tensorrt-llm"].kv_policy == "reserve"
    assert engines["vllm"].kv_block_tokens == 16
    assert gpuplan.catalog.show("h200-sxm").to_json() == cli(["catalog", "show", "h200-sxm",
                                                               "--json"])[0]
    with pytest.raises(gpuplan.Error, match="h999"):
        gpuplan.catalog.show("h999")
    # With a kind, the id is looked up in that kind only: h200-sxm is a GPU, not an engine.
    assert gpuplan.catalog.show("h200-sxm", kind="gpu").to_json() == \
        gpuplan.catalog.show("h200-sxm").to_json()
    with pytest.raises(gpuplan.Error, match="unknown engine 'h200-sxm'"):
        gpuplan.catalog.show("h200-sxm", kind="engine")


def test_two_searches_run_at_once_and_give_what_they_give_alone():
    jobs = [dict(model="llama-3.1-70b", gpu="h100-sxm", gpus=256, global_batch=512, seq=4096,
                 scale_out="ib-ndr-400g", top=3, threads=1),
            dict(model="llama-3.1-8b", gpu="h200-sxm", gpus=64, global_batch=256, seq=8192,
                 scale_out="ib-ndr-400g", top=3, threads=1)]
    alone = [gpuplan.search(**j).to_json() for j in jobs]
    together = [None, None]

    def run(i):
        together[i] = gpuplan.search(**jobs[i]).to_json()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone


def test_a_search_holds_no_gil_while_it_runs():
    # Mixtral 8x22B on 256 H100: a search of about 50 ms in a release build, a second in a debug
    # one. With the switch interval raised far beyond that, CPython never takes the GIL from a
    # running thread: this thread, woken by `started`, runs again only once the search thread
    # releases the GIL, blocks or ends. It finds no answer stored yet only if the search released
    # the GIL; one that held it would let this thread in after it returned and stored its answer.
    # (The old form, a sleep and a fit racing the search, failed where the search was quicker.)
    job = dict(model="mixtral-8x22b", gpu="h100-sxm", gpus=256, global_batch=1024, seq=4096,
               scale_out="ib-ndr-400g", top=3, threads=1)
    started = threading.Event()
    answer = {}

    def run():
        started.set()
        answer["json"] = gpuplan.search(**job).to_json()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        t = threading.Thread(target=run)
        t.start()
        started.wait()
        searching = "json" not in answer
        fit = gpuplan.fit(model="llama-3.1-8b", gpu="h100-sxm", task="infer", context=4096)
    finally:
        sys.setswitchinterval(interval)
    t.join()
    assert searching
    assert fit.fits
    assert answer["json"] == gpuplan.search(**job).to_json()


def test_bad_keyword_values_are_refused_before_the_command():
    with pytest.raises(TypeError, match="gpu"):
        gpuplan.fit(model="llama-3.1-8b", gpu={"id": "h100-sxm"}, task="infer")
    with pytest.raises(gpuplan.Error) as e:
        gpuplan.fit(model="llama-3.1-8b", task="infer", json=True)
    assert e.value.where == "json"
    assert str(e.value) == ("gpuplan fit: error: json: is not accepted from Python; the module "
                            "always answers with the command's JSON")
