"""The Helm engine in a child process, so that a render can be stopped.

helm-python-sdk renders in-process through a C ABI with no way to interrupt a template
that loops (`range until .Values.n`) or prints without end. advisor.read.render.helm runs
the engine here instead, in `python -P .../helm_worker.py CHART` (helm_process's
worker_command: a script, so no package above it is imported), and kills it when a
render passes its time, memory or output limit.

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
  {"op": "load", "chart": dir} -> {"ok": {"metadata": {...}, "dependencies": [names]}}
    (the chart the next requests are about; one process serves a run's charts in turn)
  {"op": "merge", "values": {...}} -> {"ok": {...effective values}}
  {"op": "values", "text": "..."} -> {"ok": {...}} (a values file as Helm reads it),
  {"op": "set", "expr": "a=1"} -> {"ok": {...}}, {"op": "release_name", "name": "r"} ->
  {"ok": null} and {"op": "version"} -> {"ok": "3.x"}: the library's calls about no
  chart, asked here so that the parent never loads the Go library
  {"op": "render", "values": {...}, "name": "r", "namespace": "ns"} -> {"ok": {path: text}}
    with "merge": true, the values merged too, after a render that succeeded (one
    request for the baseline render and its effective values): -> {"ok": {path: text},
    "merged": {...}} or {"ok": {path: text}, "merge_error": "message"}
A Helm error is {"error": "message", "type": "HelmRenderError"}. Whatever the Go side
prints (Helm's own warnings) goes to stderr, which the parent turns into notices.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def serve(chart_dir: str) -> int:
    import logging

    import helm_python as helm

    # Helm's warnings (a value that cannot overwrite a table, a skipped symlink) to
    # stderr, one per line, where the parent collects them for notices.
    logger = logging.getLogger("pool-advisor.helm")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    helm.enable_logging(logging.WARNING, logger)
    chart: Any = None
    out = sys.stdout.buffer
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if request.get("op") == "load":
                # One process serves the charts of a run in turn: the next replaces this.
                if chart is not None:
                    chart.close()
                    chart = None
                chart = helm.Chart.load(request.get("chart") or chart_dir)
            answer: dict[str, Any] = {"ok": _answer(helm, chart, request)}
            if request.get("op") == "render" and request.get("merge"):
                answer.update(_merged(helm, chart, request))
        except helm.HelmError as exc:
            answer = {"error": str(exc), "type": type(exc).__name__}
        except Exception as exc:  # a request the engine could not take; the parent reports it
            answer = {"error": f"{type(exc).__name__}: {exc}", "type": "WorkerError"}
        # One write per answer: the parent reads it whole instead of a piece per buffer.
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()
    return 0


def _answer(helm: Any, chart: Any, request: dict[str, Any]) -> Any:
    op = request.get("op")
    if op == "values":
        return helm.values_from_yaml(request.get("text") or "")
    if op == "set":
        return helm.parse_set_string(request.get("expr") or "")
    if op == "release_name":
        helm.validate_release_name(request.get("name") or "")
        return None
    if op == "version":
        return str(helm.helm_sdk_version())
    if op == "load":
        return {"metadata": chart.metadata,
                "dependencies": [d.get("name") for d in chart.dependencies]}
    if op == "merge":
        return chart.merge_values(request.get("values") or {})
    if op == "render":
        return chart.render(values=request.get("values") or {}, name=request.get("name"),
                            namespace=request.get("namespace"), is_install=True)
    raise ValueError(f"unknown op {op!r}")


def _merged(helm: Any, chart: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The "merged" (or "merge_error") part of a render's answer, as a merge request
    would have answered."""
    try:
        return {"merged": chart.merge_values(request.get("values") or {})}
    except helm.HelmError as exc:
        return {"merge_error": str(exc), "merge_type": type(exc).__name__}
    except Exception as exc:
        return {"merge_error": f"{type(exc).__name__}: {exc}", "merge_type": "WorkerError"}


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1] if len(sys.argv) > 1 else ""))
