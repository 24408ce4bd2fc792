"""AWS Lambda functions as clients (issue 18 item 4): SAM/CloudFormation templates and
serverless.yml, concurrency x one connection per execution environment in the budget."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.sources.serverless import ACCOUNT_CONCURRENCY, lambda_functions

SAM = """\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    ReservedConcurrentExecutions: 30
    Environment:
      Variables:
        PGHOST: orders-db.internal
Resources:
  Api:
    Type: AWS::Serverless::Function
    Properties:
      Handler: api.handler
      Environment:
        Variables:
          PGDATABASE: orders
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      ReservedConcurrentExecutions: 5
      ProvisionedConcurrencyConfig:
        ProvisionedConcurrentExecutions: 2
  Plain:
    Type: AWS::Lambda::Function
    Properties:
      Environment:
        Variables:
          DATABASE_URL: !Sub "postgresql://app@${Endpoint}/orders"
  Bucket:
    Type: AWS::S3::Bucket
"""

SERVERLESS = """\
service: orders
provider:
  name: aws
  environment:
    DATABASE_URL: postgresql://app@orders-db.internal:5432/orders
functions:
  checkout:
    handler: handler.checkout
    reservedConcurrency: 50
  report:
    handler: handler.report
    provisionedConcurrency: 3
"""

CONFIG = """\
[[servers]]
name = "orders-db"
hosts = ["orders-db.internal"]
max_connections = 100
"""


def test_sam_globals_reserved_concurrency_and_environment():
    fns = {f.name: f for f in lambda_functions(SAM, "template.yaml")}
    assert set(fns) == {"Api", "Worker", "Plain"}
    api = fns["Api"]
    assert api.concurrency.value == 30
    assert (api.concurrency.source.path, api.concurrency.source.line) == ("template.yaml", 5)
    assert {v.name: v.value for v in api.env} == {"PGHOST": "orders-db.internal",
                                                  "PGDATABASE": "orders"}
    assert fns["Worker"].concurrency.value == 5
    assert fns["Worker"].provisioned.value == 2
    # AWS::Lambda::Function has no SAM Globals: no reservation, the account default
    plain = fns["Plain"]
    assert plain.concurrency.value == ACCOUNT_CONCURRENCY
    assert plain.concurrency.source.path is None
    assert "AWS Lambda" in plain.concurrency.source.default
    assert all(v.name != "PGHOST" for v in plain.env)


def test_serverless_framework_provisioned_is_not_a_cap():
    fns = {f.name: f for f in lambda_functions(SERVERLESS, "serverless.yml")}
    assert fns["checkout"].concurrency.value == 50
    assert fns["checkout"].concurrency.source.line == 9
    report = fns["report"]
    assert report.provisioned.value == 3
    assert report.concurrency.value == ACCOUNT_CONCURRENCY  # a floor is no ceiling
    assert {v.name for v in report.env} == {"DATABASE_URL"}


def test_not_a_template():
    assert lambda_functions("kind: ConfigMap\nmetadata: {name: x}\n", "x.yaml") == []


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_budget_counts_concurrency_times_one_connection(tmp_path):
    root = _repo(tmp_path, {"serverless.yml": SERVERLESS, ".pool-advisor.toml": CONFIG})
    result = run_check([str(root)])
    budget = next(b for b in result.budgets if b.server == "orders-db")
    totals = {c.who: c.total for c in budget.contributions}
    # checkout: 50 reserved x 1; report: 1000 (account default) x 1
    assert totals == {"checkout": 50.0, "report": float(ACCOUNT_CONCURRENCY)}
    assert budget.peak == 1050
    codes = sorted((f.code, f.subject.rsplit("#", 1)[-1]) for f in result.findings
                   if f.code in ("PA112", "PA101"))
    assert ("PA112", "checkout") in codes and ("PA112", "report") in codes
    assert any(c == "PA101" for c, _ in codes)
    report = next(f for f in result.findings if f.code == "PA112" and "report" in f.subject)
    assert "no reserved concurrency" in report.message


def test_through_an_rds_proxy_is_not_direct(tmp_path):
    config = CONFIG + """
[[proxies]]
name = "orders-proxy"
kind = "rds-proxy"
hosts = ["orders-proxy.internal"]
target = "orders-db"
max_connections_percent = 50
"""
    root = _repo(tmp_path, {
        "serverless.yml": SERVERLESS.replace("orders-db.internal", "orders-proxy.internal"),
        ".pool-advisor.toml": config})
    result = run_check([str(root)], CheckOptions(select=["PA112", "PA101"]))
    assert [f.code for f in result.findings] == []
    budget = next(b for b in result.budgets if b.server == "orders-db")
    # the proxy caps what the functions bring: floor(100 x 50 / 100) = 50
    assert budget.peak == 50


def test_unresolved_database_setting_is_pa107(tmp_path):
    """A URL built by an intrinsic function links nowhere: PA107 names the function and
    the variable, never a silent 0."""
    root = _repo(tmp_path, {"template.yaml": SAM, ".pool-advisor.toml": CONFIG})
    result = run_check([str(root)])
    unlinked = [f for f in result.findings if f.code == "PA107"]
    assert [f.message.split(":")[0] for f in unlinked] == ["Plain"]
    assert unlinked[0].location.line == 28  # the DATABASE_URL line


def test_cloudformation_parameter_reference_can_be_declared(tmp_path):
    """`rds_endpoint: !Ref RdsEndpoint` (a template parameter) arrives as the parameter's
    name: a [[servers]] entry whose hosts name it links the function."""
    template = """\
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      ReservedConcurrentExecutions: 40
      Environment:
        Variables:
          region: !Ref AWS::Region
          rds_endpoint: !Ref RdsEndpoint
"""
    config = '[[servers]]\nname = "aurora"\nhosts = ["RdsEndpoint"]\nmax_connections = 100\n'
    root = _repo(tmp_path, {"template.yaml": template, ".pool-advisor.toml": config})
    result = run_check([str(root)])
    (budget,) = result.budgets
    assert budget.peak == 40  # 40 reserved x 1
    assert [f.code for f in result.findings] == ["PA112"]


def test_a_hostname_variable_is_the_function_s_host(tmp_path):
    """DB_HOSTNAME is a host (the NAME is HOSTNAME's, not DB_NAME's: audit 10a D1), and
    the RDS in RECORDS_TABLE is no word of a database's."""
    template = """\
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      ReservedConcurrentExecutions: 40
      Environment:
        Variables:
          RECORDS_TABLE: records
          DB_NAME: orders
          DB_HOSTNAME: orders-db.internal
"""
    root = _repo(tmp_path, {"template.yaml": template, ".pool-advisor.toml": CONFIG})
    result = run_check([str(root)])
    (budget,) = result.budgets
    assert budget.peak == 40  # 40 reserved x 1, linked by DB_HOSTNAME
    assert not [f for f in result.findings if f.code == "PA107"]
