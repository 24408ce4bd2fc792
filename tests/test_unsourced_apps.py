"""A workload whose program was not read is no "fits, peak 0" (audit 42 D2b). In the
shape of AtomiCloud/sulfone.zinc and PeterKneale/k8s-dotnet-microservices-monorepo-saas
(written here in our own words): a .NET API reads its database from a settings file in
its image, so its env names no database; its source folder is not found (a bare image
name `shop-zinc-api`, taken for an official image; a monorepo's per-service image). It
was silently no client, and the only PostgreSQL server "fit" with peak 0. Now such a
workload may connect to a server no client is linked to: that server cannot tell. A
front end, a published program, or a server with a client read are left as they were."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import role_named_image, unfilled_image
from tests.tree_helpers import POSTGRES_DB, write

CSPROJ = """<Project Sdk="Microsoft.NET.Sdk.Web">
  <ItemGroup>
    <PackageReference Include="Npgsql.EntityFrameworkCore.PostgreSQL" Version="8.0.2" />
  </ItemGroup>
</Project>
"""
DOCKERFILE = """FROM mcr.microsoft.com/dotnet/sdk:8.0 AS build
WORKDIR /src
COPY . .
RUN dotnet publish App/App.csproj -o /out
FROM mcr.microsoft.com/dotnet/aspnet:8.0
COPY --from=build /out /app
ENTRYPOINT ["dotnet", "/app/App.dll"]
"""


def _workload(name: str, image: str, env: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  template:
    spec:
      containers:
        - name: {name}
          image: "{image}"
          ports: [{{containerPort: 8080}}]{env}
"""


def _tree(tmp_path, *workloads: str) -> None:
    files = {"App/App.csproj": CSPROJ, "Domain/Domain.csproj": CSPROJ,
             "App/Program.cs": "var app = WebApplication.Create(args);\napp.Run();\n",
             "infra/Dockerfile": DOCKERFILE, "k8s/db.yaml": POSTGRES_DB}
    files.update({f"k8s/w{i}.yaml": w for i, w in enumerate(workloads)})
    write(tmp_path, files)


@pytest.mark.parametrize("image", [
    "shop-zinc-api:1.16.0",  # a bare name for a part of a project (sulfone.zinc)
    # a monorepo's one chart, its image left for the deploy to fill (N4: `.../_:`)
    "ghcr.io/acme/shop-monorepo/_:",
    "your-registry/shop:1.0",  # a placeholder owner
])
def test_an_app_whose_source_was_not_read_makes_a_clientless_server_cannot_tell(
        tmp_path, image):
    _tree(tmp_path, _workload("api", image))
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.contributions == [] and budget.peak == 0
    assert not budget.fits and budget.peak_is_floor, budget
    assert budget.unplaced_clients == ["api"]
    assert any(n.startswith("Deployment/api: runs ") and "no application source" in n
               for n in result.notices), result.notices


@pytest.mark.parametrize("name,image", [
    ("shop-react-ui", "acme/shop-react-ui:1.0"),  # a front end, by its name
    # a front end, by its name, of an image the deploy names (BranfordTGbieor/
    # k8s-link-shortener)
    ("web", "${{ secrets.DOCKERHUB_USERNAME }}/k8s-url-shortener-frontend:latest"),
    ("cache", "redis:7.2"),  # an official program
    ("queue", "bitnami/rabbitmq:3.13"),  # a publisher's program
    # a program with an owner no list knows (DimaJoyti/HackAI's jaeger, trivy CronJob;
    # RuslanKarabalin/cu-faculty-backend's garage): a publisher's, not the project's
    ("jaeger", "jaegertracing/all-in-one:1.47"),
    ("scan", "aquasec/trivy:latest"),
])
def test_a_front_end_or_a_published_program_leaves_the_fit(tmp_path, name, image):
    _tree(tmp_path, _workload(name, image))
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    assert budget.fits and budget.peak == 0 and budget.unplaced_clients == [], budget


def test_a_server_with_a_client_read_keeps_its_verdict(tmp_path):
    """The rule is for a server nothing is linked to: where a client was read, an
    unsourced workload beside it does not turn its fit into a floor."""
    web = _workload("web", "acme/web:1", """
          env:
            - {name: DATABASE_URL, value: "postgresql://u@db:5432/app?pool_max_conns=7"}""")
    _tree(tmp_path, _workload("api", "shop-zinc-api:1.0"), web)
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    assert budget.contributions and budget.unplaced_clients == [], budget


def test_unfilled_image():
    assert unfilled_image("ghcr.io/acme/shop-monorepo/_:")
    assert unfilled_image("acme/app:")
    assert unfilled_image("registry.example.com//app:1")
    assert not unfilled_image("jaegertracing/all-in-one:1.47")
    assert not unfilled_image("localhost:5000/app")  # a registry's port is no tag
    assert not unfilled_image("redis")


def test_role_named_image():
    assert role_named_image("sulfone-zinc-api:1.16.0")
    assert role_named_image("shop-backend")
    assert not role_named_image("redis:7")  # an official image
    assert not role_named_image("eclipse-mosquitto:2")  # official, not a project's part
    assert not role_named_image("acme/shop-api:1")  # has an owner: maybe_built_here's
    assert not role_named_image("-api")
