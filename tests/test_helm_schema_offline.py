"""A chart's values.schema.json never makes the engine reach the network (s22 audit D2).

Helm validates values against the chart's schema, and each subchart's, and its validator
loads a `$ref` outside the document over http(s) or from the disk (helm/helm@e9b85e4
pkg/chart/common/util/jsonschema.go). zitadel/zitadel-charts `$ref`s raw.githubusercontent
.com: offline the render failed (PA901, no budget), online the check fetched it. The
charts here are written for the test in that shape; a listening socket on loopback stands
for the remote host, and nothing may connect to it.
"""

from __future__ import annotations

import io
import json
import socket
import tarfile
import time
from pathlib import Path

import pytest

from advisor.read.fs import Root
from advisor.read.render import helm_process
from advisor.read.render.helm import render_chart
from advisor.read.render.helm_schema import offline_archive, offline_schema


def test_remote_references_are_removed_and_local_ones_kept():
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"port": {"type": "integer"}},
        "properties": {
            "resources": {"$ref": "https://example.test/defs.json#/Res", "type": "object"},
            "port": {"$ref": "#/$defs/port"},
            "default": {"$ref": "defs.json"},  # a property named like a keyword; file:
            "mode": {"enum": [{"$ref": "https://example.test/x"}],
                     "default": {"$ref": "https://example.test/y"}},
            "list": {"items": [{"$dynamicRef": "https://example.test/z#meta"}]},
        },
    }
    local, removed, whole = offline_schema(doc)
    assert not whole
    assert removed == ["https://example.test/defs.json#/Res", "defs.json",
                       "https://example.test/z#meta"]
    props = local["properties"]
    assert props["resources"] == {"type": "object"}  # 2020-12: its siblings still apply
    assert props["port"] == {"$ref": "#/$defs/port"}
    assert props["default"] == {}
    assert props["mode"] == doc["properties"]["mode"]  # data, not schemas
    assert props["list"] == {"items": [{}]}


def test_up_to_draft_7_a_ref_hides_its_siblings_and_an_unknown_dialect_the_schema():
    seven = {"$schema": "http://json-schema.org/draft-07/schema#",
             "properties": {"r": {"$ref": "https://example.test/d.json", "type": "string",
                                  "definitions": {"a": {"type": "integer"}}}}}
    local, removed, _ = offline_schema(seven)
    assert local["properties"]["r"] == {"definitions": {"a": {"type": "integer"}}}
    assert removed == ["https://example.test/d.json"]
    # no draft the validator knows: it would load the meta-schema
    assert offline_schema({"$schema": "https://example.test/meta", "type": "object"}) == (
        True, ["https://example.test/meta"], True)
    assert offline_schema({"type": "object", "properties": {"a": {"$ref": "#/x"}}}) == (
        {"type": "object", "properties": {"a": {"$ref": "#/x"}}}, [], False)


def test_a_schema_that_cannot_be_rewritten_is_left_out_only_if_it_references():
    from advisor.read.render.helm_schema import SchemaNote, offline_schema_text

    # Go reads invalid UTF-8 (as U+FFFD); Python does not: with a $ref in it, left out
    bad = b'{"properties": {"a": {"$ref": "https://example.test/\xff"}}}'
    assert offline_schema_text(bad) == (b"true", [], True)
    assert SchemaNote("values.schema.json", (), True).text().startswith(
        "values.schema.json not validated: it holds references and could not be read")
    # no reference: nothing to fetch, and Helm says what is wrong with it, as before
    assert offline_schema_text(b'{"type": "object",}') == (None, [], False)
    deep = b'{"not": ' * 5000 + b'{"$ref": "https://example.test/x"}' + b"}" * 5000
    assert offline_schema_text(deep) == (b"true", [], True)
    plain = b'{"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}}'
    assert offline_schema_text(plain) == (None, [], False)


def _schema(url: str) -> str:
    return json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "replicaCount": {"type": "integer"},
            "resources": {"$ref": f"{url}#/definitions/Resources", "type": "object"},
        },
    })


def _tgz(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: app
          image: registry.example.test/app:1.0
"""


def _charts(tmp_path: Path, url: str) -> Path:
    """A chart, a subchart folder and a packed subchart, each schema naming `url`."""
    app = tmp_path / "app"
    for folder, name in ((app, "app"), (app / "charts" / "cache", "cache")):
        (folder / "templates").mkdir(parents=True)
        (folder / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
        (folder / "values.yaml").write_text("replicaCount: 2\nresources: {}\n")
        (folder / "values.schema.json").write_text(_schema(url))
    (app / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    (app / "charts" / "db-0.1.0.tgz").write_bytes(_tgz({
        "db/Chart.yaml": "apiVersion: v2\nname: db\nversion: 0.1.0\n",
        "db/values.yaml": "replicaCount: 1\nresources: {}\n",
        "db/values.schema.json": _schema(url),
        "db/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\n"}))
    return app


def test_packed_subchart_schemas_are_rewritten_in_the_archive(tmp_path: Path):
    app = _charts(tmp_path, "https://example.test/defs.json")
    notes: list = []
    packed = offline_archive((app / "charts" / "db-0.1.0.tgz").read_bytes(), "charts/db.tgz",
                             notes)
    assert packed is not None
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        names = tar.getnames()
        schema = json.loads(tar.extractfile("db/values.schema.json").read())  # type: ignore[union-attr]
    assert names == ["db/Chart.yaml", "db/values.yaml", "db/values.schema.json",
                     "db/templates/cm.yaml"]
    assert schema["properties"]["resources"] == {"type": "object"}
    assert [(n.where, n.refs) for n in notes] == [
        ("charts/db.tgz#db/values.schema.json",
         ("https://example.test/defs.json#/definitions/Resources",))]


@pytest.fixture
def listener():
    """A loopback port that accepts connections (the kernel completes them in the
    backlog) and is never answered: a fetch would hang there until Helm's 15 s timeout."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    yield sock
    sock.close()


def _connections(sock: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def test_a_schema_naming_a_url_renders_without_a_connection(tmp_path: Path, listener):
    pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/defs.json"
    _charts(tmp_path, url)
    started = time.monotonic()
    rendered = render_chart(Root.of(tmp_path), "app")
    elapsed = time.monotonic() - started
    assert _connections(listener) == 0
    assert [p.message for p in rendered.problems] == []
    assert sorted(o.name for o in rendered.objects) == ["db", "release-app"]
    said = ("not fully validated: 1 reference outside the file ({url}) not followed (Helm "
            "would fetch it; pool-advisor reaches no network and reads nothing outside the "
            "repository), so the values were checked against the rest of the schema only")
    assert [n for n in rendered.notices if "validated" in n] == [
        f"helm: app: {where} {said.format(url=url)}"
        for where in ("values.schema.json", "charts/cache/values.schema.json",
                      "charts/db-0.1.0.tgz#db/values.schema.json")]
    assert elapsed < 10


def test_the_rest_of_the_schema_still_refuses_bad_values(tmp_path: Path, listener):
    """Helm refuses values the schema forbids; so does the check, as before."""
    pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")
    _charts(tmp_path, f"http://127.0.0.1:{listener.getsockname()[1]}/defs.json")
    (tmp_path / "prod.yaml").write_text("replicaCount: many\n")
    rendered = render_chart(Root.of(tmp_path), "app", values_files=[str(tmp_path / "prod.yaml")])
    assert _connections(listener) == 0
    (problem,) = rendered.problems
    assert problem.fatal and problem.location.path == "app/Chart.yaml"
    assert "values don't meet the specifications of the schema" in problem.message
    assert "/replicaCount" in problem.message and "got string, want integer" in problem.message


def test_a_remote_reference_that_reached_the_engine_goes_nowhere(tmp_path: Path):
    """Defence in depth: the engine's HTTP client is sent to a proxy on port 0, which
    refuses at once (192.0.2.1, TEST-NET-1, would otherwise be tried until a timeout)."""
    pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")
    app = _charts(tmp_path, "http://192.0.2.1/defs.json")
    started = time.monotonic()
    with helm_process.EngineChart.load(app) as chart, \
            pytest.raises(helm_process.EngineError) as raised:
        chart.render({}, name="r", namespace=None)
    assert time.monotonic() - started < 10
    assert "proxyconnect tcp: dial tcp 127.0.0.1:0" in str(raised.value)
