"""The pools of a container read from its own settings alone (env, args, image: no
application source, no mounted file) are one pure function of the container, kept in
the run's parse cache (advisor.read.cache) by the container's content: a warm run reads
no Spring, pgx or Keycloak setting again for a workload whose container did not change.

Exact: the key is the whole container as linking built it (every env value with the
line it came from, command, args, image, limits) and the nodes' CPUs (NodeCpus); the readers'
code is in the cache's own key (code_fingerprint). A value is kept only when it decodes
back equal to what the readers gave.
"""

from __future__ import annotations

from typing import Any

import msgspec

from advisor.model import Container, NodeCpus
from advisor.read.apps import AppPools, pools_for_container
from advisor.read.cache import FileCache

KIND = "pools"


def container_pools(container: Container, cache: Any, *,
                    node_cpus: int | NodeCpus | None = None
                    ) -> AppPools:
    """pools_for_container(container, None, node_cpus=...), through `cache` (a
    FileCache, or None: read as it is)."""
    if not isinstance(cache, FileCache) or not cache.enabled:
        return pools_for_container(container, None, node_cpus=node_cpus)
    try:
        key = msgspec.msgpack.encode((container, node_cpus))
    except (TypeError, ValueError, OverflowError):
        return pools_for_container(container, None, node_cpus=node_cpus)
    found = cache.get_keyed(KIND, key, AppPools)
    if found is not None:
        return found
    value = pools_for_container(container, None, node_cpus=node_cpus)
    cache.put_keyed(KIND, key, value, AppPools)
    return value
