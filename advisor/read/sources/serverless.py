"""AWS Lambda functions that may connect to PostgreSQL: SAM / CloudFormation templates
(`AWS::Serverless::Function`, `AWS::Lambda::Function`, SAM `Globals.Function`) and the
Serverless Framework's serverless.yml (`functions:`, `provider.environment`).

What enters the budget (PA112): a Lambda function runs one invocation at a time per
execution environment, and AWS starts a new environment for every concurrent
invocation, so the connections it may hold are its concurrency x the connections one
invocation opens. The concurrency is capped only by reserved concurrency
(`ReservedConcurrentExecutions`, `reservedConcurrency`); provisioned concurrency is
kept warm, it is a floor, not a cap. Without a reservation the function may scale to
the account's unreserved concurrency: 1,000 per Region by default (AWS Lambda quotas;
new accounts may start lower). A pool inside the function does not help: each
environment has its own.
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import Struct

from advisor.model import EnvVar, Location, Source, Term

ACCOUNT_CONCURRENCY = 1000
ACCOUNT_DEFAULT = ("AWS Lambda default concurrent executions per Region (account quota; "
                   "newer accounts may start lower)")
PER_ENVIRONMENT_DEFAULT = ("assumed: an execution environment serves one invocation at a "
                           "time, one connection each")
_CFN_TYPES = ("AWS::Serverless::Function", "AWS::Lambda::Function")


class LambdaFunction(Struct, frozen=True, kw_only=True):
    name: str
    concurrency: Term
    per_environment: Term
    env: tuple[EnvVar, ...] = ()
    location: Location
    provisioned: Term | None = None  # a floor kept warm, reported, not a cap


def looks_like_serverless(text: str) -> bool:
    if any(t in text for t in _CFN_TYPES):
        return True
    return bool(re.search(r"^functions:", text, re.M) and re.search(r"^provider:", text, re.M))


def _line(node: Any, key: str) -> int | None:
    lc = getattr(node, "lc", None)
    try:
        return lc.key(key)[0] + 1 if lc is not None else None
    except (KeyError, TypeError, AttributeError):
        return None


def _count(node: Any, key: str, label: str, path: str) -> Term | None:
    if not isinstance(node, dict):
        return None
    value = node.get(key)
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(str(value))
    except ValueError:
        return None
    if number < 0:
        return None
    return Term(label=label, value=number, source=Source(path=path, line=_line(node, key),
                                                          key=key))


def _env(variables: Any, path: str) -> list[EnvVar]:
    if not isinstance(variables, dict):
        return []
    out = []
    for name, value in variables.items():
        if isinstance(value, bool | int | float):
            value = str(value)
        text = value if isinstance(value, str) else None
        out.append(EnvVar(name=str(name), value=text,
                          source=Source(path=path, line=_line(variables, name), key=str(name))))
    return out


def _function(name: str, props: dict, env: list[EnvVar], path: str, line: int | None,
              reserved_key: str, provisioned: Term | None) -> LambdaFunction:
    reserved = _count(props, reserved_key, reserved_key, path)
    concurrency = reserved or Term(
        label="concurrent executions", value=ACCOUNT_CONCURRENCY,
        source=Source.default_of(ACCOUNT_DEFAULT, key=reserved_key))
    return LambdaFunction(
        name=name, concurrency=concurrency,
        per_environment=Term(label="connections per execution environment", value=1,
                             source=Source.default_of(PER_ENVIRONMENT_DEFAULT)),
        env=tuple(env), location=Location(path=path, line=line), provisioned=provisioned)


def _merged_env(*layers: list[EnvVar]) -> list[EnvVar]:
    merged: dict[str, EnvVar] = {}
    for layer in layers:
        for var in layer:
            merged[var.name] = var
    return list(merged.values())


def _cloudformation(doc: dict, path: str) -> list[LambdaFunction]:
    resources = doc.get("Resources")
    if not isinstance(resources, dict):
        return []
    globals_fn = doc.get("Globals", {}).get("Function", {}) if isinstance(
        doc.get("Globals"), dict) else {}
    globals_fn = globals_fn if isinstance(globals_fn, dict) else {}
    global_env = _env((globals_fn.get("Environment") or {}).get("Variables")
                      if isinstance(globals_fn.get("Environment"), dict) else None, path)
    out = []
    for name, res in resources.items():
        if not isinstance(res, dict) or res.get("Type") not in _CFN_TYPES:
            continue
        props = res.get("Properties") if isinstance(res.get("Properties"), dict) else {}
        sam = res.get("Type") == "AWS::Serverless::Function"
        # SAM copies Globals.Function into each function that does not set the key
        reserved_src = globals_fn if sam and "ReservedConcurrentExecutions" not in props \
            else props
        environment = props.get("Environment")
        env = _env(environment.get("Variables") if isinstance(environment, dict) else None,
                   path)
        provisioned = None
        config = props.get("ProvisionedConcurrencyConfig")
        if isinstance(config, dict):
            provisioned = _count(config, "ProvisionedConcurrentExecutions",
                                 "ProvisionedConcurrentExecutions", path)
        fn = _function(str(name), reserved_src, _merged_env(global_env if sam else [], env),
                       path, _line(resources, name), "ReservedConcurrentExecutions", provisioned)
        out.append(fn)
    return out


def _serverless_framework(doc: dict, path: str) -> list[LambdaFunction]:
    provider = doc.get("provider") if isinstance(doc.get("provider"), dict) else {}
    if str(provider.get("name", "aws")) != "aws":
        return []
    functions = doc.get("functions")
    if not isinstance(functions, dict):
        return []
    provider_env = _env(provider.get("environment"), path)
    out = []
    for name, fn in functions.items():
        fn = fn if isinstance(fn, dict) else {}
        provisioned = _count(fn, "provisionedConcurrency", "provisionedConcurrency", path)
        env = _merged_env(provider_env, _env(fn.get("environment"), path))
        out.append(_function(str(name), fn, env, path, _line(functions, name),
                             "reservedConcurrency", provisioned))
    return out


def lambda_functions(text: str, path: str) -> list[LambdaFunction]:
    """The Lambda functions a SAM/CloudFormation template or serverless.yml defines;
    [] for anything else. YAML errors are the caller's (they are reported as for any
    manifest)."""
    from advisor.read import yamlpos

    out: list[LambdaFunction] = []
    for doc in yamlpos.load_all(text):
        if not isinstance(doc, dict):
            continue
        if "Resources" in doc:
            out.extend(_cloudformation(doc, path))
        elif "functions" in doc and "provider" in doc:
            out.extend(_serverless_framework(doc, path))
    return out
