"""Inputs a review of session 21's readers found mishandled: a reader's crash is an
internal error (exit 2) that leaves the container's size unknown, never exit 1 with the
other readers' sum as if complete; a projected volume whose sources are not a list is
no crash; a program whose database is set where the repository does not say is a client
that may connect anywhere, not dropped; a Go import that would leave its module is not
followed."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container
from advisor.read.apps.source import scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container
from tests.cli_helpers import run_cli
from tests.tree_helpers import POSTGRES_DB, write


def test_a_reader_crash_is_an_internal_error_and_leaves_the_size_unknown(monkeypatch):
    import advisor.read.apps.supabase as supabase

    def broken(ctx):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(supabase, "storage_pools", broken)
    import advisor.read.apps.images as images

    monkeypatch.setattr(images, "_IMAGE_READERS", tuple(
        (takes, broken if read.__name__ == "storage_pools" else read)
        for takes, read in images._IMAGE_READERS))
    found = pools_for_container(replace(container({"DATABASE_URL": "postgres://s@db/s"}),
                                        image="supabase/storage-api:v1.60.4"))
    (problem,) = [p for p in found.problems if "internal error" in p.message]
    assert problem.fatal and problem.message.startswith("internal error reading images")
    assert found.pools == [] and found.unknown


def test_projected_sources_of_another_shape_are_no_crash(tmp_path):
    app = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/app:1
          env: [{name: DATABASE_URL, value: "postgres://u@db:5432/x"}]
      volumes:
        - {name: p, projected: {sources: 5}}
"""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": app})
    done = run_cli("check", str(tmp_path), "--no-cache")
    assert done.returncode == 1 and "internal error" not in done.stdout + done.stderr


def test_a_database_set_where_the_repository_does_not_say_is_an_unplaced_client(tmp_path):
    synapse = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: synapse}
spec:
  template:
    spec:
      containers:
        - name: synapse
          image: ghcr.io/element-hq/synapse:v1.120.0
          command: [python, -m, synapse.app.homeserver, -c, /data/homeserver.yaml]
"""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/synapse.yaml": synapse})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unplaced_clients == ["synapse"], result.notices


def test_a_go_import_that_would_leave_its_module_is_not_followed(tmp_path):
    write(tmp_path, {
        "outside/x/x.go": "package x\n\nfunc init() { cfg.MaxConns = 99 }\n",
        "svc/go.mod": "module example.com/svc\n",
        "svc/cmd/web/main.go": ('package main\n\nimport "example.com/svc/../../outside/x"\n\n'
                                "func main() {}\n")})
    app = scan_app_dir(Root.of(tmp_path), "svc/cmd/web")
    assert sorted(f.path for f in app.files) == ["svc/cmd/web/main.go", "svc/go.mod"]
    assert app.problems == ()


def test_a_port_of_other_digits_is_no_port_and_no_crash(tmp_path):
    """`"²".isdigit()` is true and int("²") raises: a host variable's sibling port so
    written is no port, not an internal error."""
    app = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/app:1
          env:
            - {name: POSTGRES_HOST, value: db}
            - {name: POSTGRES_PORT, value: "²"}
"""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": app})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert not [f for f in result.findings if "internal error" in f.message]
    (budget,) = result.budgets
    assert budget.unknown_clients == ["app"]
