"""gpuplan from Python: the CLI's answers as objects, for notebooks and scripts.

Each function runs the gpuplan command of its name in this process, exactly as the CLI runs
it, and answers with what ``gpuplan COMMAND ... --json`` prints::

    import gpuplan
    a = gpuplan.fit(model="llama-3.1-70b", gpu="h200-sxm", task="infer")
    a.verdict.fits, a.memory.total_bytes      # the fields of the CLI's --json
    a.to_json()                               # byte for byte the CLI's --json
    pandas.DataFrame([gpuplan.fit(model="llama-3.1-8b", gpu=g, task="train") for g in gpus])

Keyword arguments are the command's flags without their dashes (``slo_ttft`` for
``--slo-ttft``); a flag that is ``True`` is given, one that is ``False`` left out; a list
repeats the flag. ``model`` is a catalog id, a path to a Hugging Face ``config.json``, or a
``dict`` of one. A quantity is a string with its unit (``"7 d"``, ``"500 GB"``) or a number in
SI units (seconds, bytes). Bad input raises :class:`Error` with the CLI's one-line message;
an answer that says "does not fit" or "cannot serve" is an answer, not an error. The
commands release the GIL: searches on several threads run at once.
"""

import copy
import json
import math
import os
from collections.abc import Mapping

from . import _gpuplan

__all__ = [
    "Answer", "Error", "catalog", "fit", "train", "search", "scale", "serve", "plan",
    "validate", "rows", "data_dir", "__version__",
]

__version__ = _gpuplan.version


class Error(Exception):
    """Bad input: the CLI's one-line message as the text, and its parts.

    ``where`` is the flag, field, file or ``file:line`` at fault (may be empty), ``what`` what
    is wrong with it and ``hint`` what to do (may be empty).
    """

    def __init__(self, line, where="", what="", hint=""):
        super().__init__(line)
        self.where = where
        self.what = what
        self.hint = hint


def _flatten(prefix, value, out):
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    else:
        out[prefix] = value


def _wrap(value):
    if isinstance(value, dict):
        return Answer(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Answer(Mapping):
    """An answer: the fields of the CLI's ``--json``, with their units in their names.

    Fields are attributes (``a.memory.total_bytes``); an object field is an Answer, a list a
    list. ``to_dict()`` gives the JSON as Python values, ``to_json()`` the text the CLI prints.
    As a mapping an answer is one flat row, nested names joined by dots
    (``"memory.total_bytes"``), so ``pandas.DataFrame(list_of_answers)`` makes one row each.
    """

    def __init__(self, data, text=None):
        self._data = data
        self._text = text

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__} has no field '{name}'; it has: "
                f"{', '.join(self._data)}") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._data))

    def to_dict(self):
        """The answer's JSON as Python dicts, lists and values (a copy)."""
        return copy.deepcopy(self._data)

    def to_json(self):
        """The answer as JSON: for a command's answer, exactly the text the CLI prints."""
        if self._text is not None:
            return self._text
        return json.dumps(self._data, indent=2) + "\n"

    def row(self):
        """The answer as one flat dict: nested names joined by dots, lists as they are."""
        out = {}
        _flatten("", self._data, out)
        return out

    def __getitem__(self, key):
        return self.row()[key]

    def __iter__(self):
        return iter(self.row())

    def __len__(self):
        return len(self.row())

    def __eq__(self, other):
        if isinstance(other, Answer):
            return self._data == other._data
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        shown = []
        for k, v in self._data.items():
            if isinstance(v, (dict, list)):
                continue
            shown.append(f"{k}={v!r}")
            if len(shown) == 6:
                shown.append("...")
                break
        return f"{type(self).__name__}({', '.join(shown)})"


class FitAnswer(Answer):
    """``gpuplan fit``: memory per GPU, itemised, the verdict, and where it fits."""


class TrainAnswer(Answer):
    """``gpuplan train``: one layout's step time, its breakdown, MFU, time and cost."""


class SearchAnswer(Answer):
    """``gpuplan train --search``: the ranked layouts (``top``)."""


class ScaleAnswer(Answer):
    """``gpuplan scale``: the scaling curve per fabric."""


class ServeAnswer(Answer):
    """``gpuplan serve``: each instance shape's capacity, the best, the load and the fleet."""


class PlanAnswer(Answer):
    """``gpuplan plan``: the ranked offers, the verdict, and why not the others."""


class Validation(Answer):
    """``gpuplan validate``: predicted against published, row by row, and the summary."""


def _value(key, v):
    if isinstance(v, bool) or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        # NaN and infinities go as the CLI reads them, so its own error names them.
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    raise TypeError(f"{key}: a flag takes a string, a number or a boolean, not "
                    f"{type(v).__name__}")


def _fields(model, flags):
    fields = {}
    if model is not None:
        if isinstance(model, Mapping):
            fields["config"] = dict(model)
        elif isinstance(model, (str, os.PathLike)):
            fields["model"] = os.fspath(model)
        else:
            raise TypeError("model: a catalog id, a path to a config.json or a dict of one, not "
                            f"{type(model).__name__}")
    for key, v in flags.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            fields[key] = [_value(key, x) for x in v]
        else:
            fields[key] = _value(key, v)
    return fields


def _run(command, positional, fields):
    r = _gpuplan.run(command, list(positional), json.dumps(fields))
    if r["status"] != 0:
        raise Error(r["line"], r["where"], r["what"], r["hint"])
    return r["out"]


def _answer(cls, text):
    return cls(json.loads(text), text)


def fit(model=None, **flags):
    """Memory per GPU for training, fine-tuning or inference (``gpuplan fit``)."""
    return _answer(FitAnswer, _run("fit", [], _fields(model, flags)))


def train(model=None, **flags):
    """One layout's training step (``gpuplan train``); with ``search=True``, as search()."""
    cls = SearchAnswer if flags.get("search") else TrainAnswer
    return _answer(cls, _run("train", [], _fields(model, flags)))


def search(model=None, **flags):
    """The fastest layouts (``gpuplan train --search``); ``top`` sets how many."""
    flags["search"] = True
    return _answer(SearchAnswer, _run("train", [], _fields(model, flags)))


def scale(model=None, **flags):
    """Scaling efficiency over GPU counts and fabrics (``gpuplan scale``)."""
    return _answer(ScaleAnswer, _run("scale", [], _fields(model, flags)))


def serve(model=None, **flags):
    """Serving capacity, latency and fleet size (``gpuplan serve``)."""
    return _answer(ServeAnswer, _run("serve", [], _fields(model, flags)))


def plan(job=None, model=None, **flags):
    """The advisor (``gpuplan plan``): a job file's path as ``job``, or the job as flags."""
    fields = _fields(model, flags)
    return _answer(PlanAnswer, _run("plan", [os.fspath(job)] if job is not None else [], fields))


def validate(path, **flags):
    """Predicted against published for a validation file (``gpuplan validate``)."""
    return _answer(Validation, _run("validate", [os.fspath(path)], _fields(None, flags)))


def rows(answers):
    """Answers as a list of flat dicts, one each (what pandas.DataFrame(answers) makes too)."""
    return [a.row() for a in answers]


def data_dir():
    """The catalog directory the commands read ($GPUPLAN_DATA, else the built-in one)."""
    return _gpuplan.data_dir()


class _Catalog:
    """The catalog: ``gpus()``, ``fabrics()``, ``models()``, ``offers()``, ``frameworks()``,
    ``datasets()``, ``engines()`` list its entries as answers; ``show(id)`` shows one, and
    ``show(id, kind="gpu")`` looks in one kind only. ``data`` is another catalog directory.
    """

    def _list(self, kind, data):
        positional = ([f"--data={os.fspath(data)}"] if data is not None else []) + ["list", kind]
        return [Answer(e) for e in json.loads(_run("catalog", positional, {}))]

    def gpus(self, data=None):
        return self._list("gpus", data)

    def fabrics(self, data=None):
        return self._list("fabrics", data)

    def models(self, data=None):
        return self._list("models", data)

    def offers(self, data=None):
        return self._list("offers", data)

    def frameworks(self, data=None):
        return self._list("frameworks", data)

    def datasets(self, data=None):
        return self._list("datasets", data)

    def engines(self, data=None):
        return self._list("engines", data)

    def show(self, id, kind=None, data=None):
        positional = (([f"--data={os.fspath(data)}"] if data is not None else []) + ["show"] +
                      ([kind] if kind is not None else []) + [id])
        return _answer(Answer, _run("catalog", positional, {}))

    def __repr__(self):
        return ("gpuplan.catalog (gpus(), fabrics(), models(), offers(), frameworks(), "
                "datasets(), engines(), show(id))")


catalog = _Catalog()
