"""Puma's `workers 0` is its single mode, one process: the count reads as that, not as
"Puma workers = 1" citing a line that says 0 (audit4 D6 on zammad/zammad-helm:
values.yaml:253 `webConcurrency: 0`, passed as `puma -w 0`), and a WEB_CONCURRENCY of 0
is one process, never 0 processes (Mastodon)."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.read.apps import pools_for_container
from tests.apphelpers import container

PUMA = ("bundle", "exec", "puma", "-b", "tcp://0.0.0.0:3000", "-w", "0", "-e", "production")


def processes(image: str, env: dict[str, str] | None = None, command=()):
    got = pools_for_container(replace(container(env, command=command), image=image))
    assert got.pools, got.unknown
    return got.pools[0].processes


def test_zammad_chart_puma_w_0_says_single_mode():
    term = processes("ghcr.io/zammad/zammad:6.5.0", {"POSTGRESQL_OPTIONS": "?pool=50"}, PUMA)
    assert term.value == 1 and "workers 0: single mode, one process" in term.label
    term = processes("ghcr.io/zammad/zammad:6.5.0", {"WEB_CONCURRENCY": "0"},
                     ("zammad-railsserver",))
    assert term.value == 1 and "single mode" in term.label
    term = processes("ghcr.io/zammad/zammad:6.5.0", {"WEB_CONCURRENCY": "3"},
                     ("zammad-railsserver",))
    assert term.value == 3 and term.label == "Puma workers"


def test_zammad_default_says_single_mode():
    term = processes("ghcr.io/zammad/zammad:6.5.0", {}, ("zammad-railsserver",))
    assert term.value == 1 and "single mode" in term.label


def test_mastodon_web_concurrency_0_is_one_process():
    term = processes("ghcr.io/mastodon/mastodon:v4.3.2", {"WEB_CONCURRENCY": "0"})
    assert term.value == 1 and "single mode" in term.label
