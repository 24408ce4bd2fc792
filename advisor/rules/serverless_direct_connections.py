"""PA112 serverless-direct-connections: AWS Lambda functions connect straight to
PostgreSQL, one connection per concurrent execution environment."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Finding, Fix, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import primary, related


@rule("PA112", "serverless-direct-connections", Severity.warning,
      "AWS Lambda functions connect straight to PostgreSQL: one connection per concurrent "
      "execution environment, unpooled")
def serverless_direct_connections(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Finds AWS Lambda functions (SAM / CloudFormation `AWS::Serverless::Function` and
    `AWS::Lambda::Function`, Serverless Framework `functions:`) whose database URL or
    host resolves to a PostgreSQL server rather than to an RDS Proxy, and shows what
    they bring at peak: their concurrency (`ReservedConcurrentExecutions` /
    `reservedConcurrency`, else the account's default of 1,000 concurrent executions
    per Region) x the connections one execution environment opens (one). The same
    product is a client in the server's budget (PA101).

    ## Why is this bad
    Lambda scales by starting a new execution environment for each concurrent
    invocation, and each environment keeps its own connection. A burst of traffic
    becomes a burst of connections; a pool inside the function does not help, since
    it is per environment. Without reserved concurrency nothing caps the function but
    the account: one function can take a server's every slot, and the next
    invocations fail with `remaining connection slots are reserved`. Provisioned
    concurrency keeps environments warm; it is a floor, not a cap.

    ## Example
    ```yaml
    OrdersFunction:
      Type: AWS::Serverless::Function
      Properties:
        Environment:
          Variables:
            DATABASE_URL: postgresql://app@orders-db.example.internal:5432/orders
    ```

    ## Use instead
    Connect through an RDS Proxy (declare it under `[[tool.pool-advisor.proxies]]`),
    which multiplexes the environments' connections onto a bounded pool, and set
    `ReservedConcurrentExecutions` so the function's peak is a number you chose.

    ## Options
    None.

    ## References
    - AWS Lambda docs: Understanding Lambda function scaling (one execution
      environment per concurrent request); Lambda quotas (1,000 concurrent executions).
    - AWS RDS Proxy docs: "Using Amazon RDS Proxy with AWS Lambda".
    """
    for client in topo.clients:
        if client.kind != "Lambda" or client.target_kind != "server" or not client.target_id:
            continue
        server = topo.server(client.target_id)
        if server is None:
            continue
        per_env = client.pools[0].size if client.pools else None
        terms = [client.replicas] + ([per_env] if per_env else [])
        total = client.replicas.value * (per_env.value if per_env else 1)
        unreserved = client.replicas.source.path is None
        why = (" with no reserved concurrency, so only the account's quota caps it"
               if unreserved else "")
        yield Finding(
            code="PA112", name="serverless-direct-connections", severity=Severity.warning,
            message=(f"{client.name}: Lambda connects straight to {server.name}{why}: "
                     + " x ".join(t.show() for t in terms) + f" = {num(total)} connections "
                     "at peak, one per concurrent execution environment (a pool inside "
                     "the function does not share them)"),
            location=primary(terms, client.location), related=related(terms),
            fix=Fix(description=("connect through an RDS Proxy (declare it under "
                                 "[[tool.pool-advisor.proxies]]) and set "
                                 "ReservedConcurrentExecutions to the peak you budget for")),
            subject=client.id)
