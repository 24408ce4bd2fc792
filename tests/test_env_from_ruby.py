"""A Rails app's counts written as `ENV.fetch("RAILS_MAX_THREADS") { 5 }` and friends
(config/database.yml ERB, config/puma.rb, config/sidekiq.yml), in a container whose
variables come partly from a Secret the repository does not hold (`envFrom`): the
variable may be set there, so the count is unknown (PA106, "may be set by", naming the
source), never the fallback 5. An explicit env entry, or a prefix that cannot form the
name, keeps it known; without such a source nothing changes. `ENV["X"] || 5` whose X is
a Secret's (secretKeyRef) is unknown too: ENV["X"] is then not nil, `|| 5` not taken."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from advisor.model import EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.rubyeval import RubyScope, ruby_eval
from advisor.read.fs import Root
from tests.apphelpers import container

GEMFILE = "source 'https://rubygems.org'\ngem 'rails', '7.1.3'\ngem 'pg'\ngem 'puma'\n" \
          "gem 'sidekiq'\n"
FORMS = ['ENV.fetch("RAILS_MAX_THREADS") { 5 }', 'ENV.fetch("RAILS_MAX_THREADS", 5)',
         'ENV["RAILS_MAX_THREADS"] || 5', 'Integer(ENV.fetch("RAILS_MAX_THREADS", 5))']
HELD = "Secret app-env (envFrom, k8s/app.yaml:30), not in the repository"


def _marker(prefix: str = "") -> EnvVar:
    return EnvVar(name=f"{prefix}*", source=Source(path="k8s/app.yaml", line=30),
                  from_ref="secret:app-env (not in repository)", secret=True)


def _rails(tmp_path: Path, form: str, *, sidekiq: str | None = None):
    files = {"Gemfile": GEMFILE,
             "config/database.yml": "default: &default\n  adapter: postgresql\n"
                                    f"  pool: <%= {form} %>\n\nproduction:\n  <<: *default\n"
                                    "  host: db\n  database: app\n",
             "config/puma.rb": f"max_threads = {form}\nthreads max_threads, max_threads\n"
                               "workers 2\n"}
    if sidekiq is not None:
        files["config/sidekiq.yml"] = f"---\n:concurrency: {sidekiq}\n"
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return scan_app_dir(Root.of(tmp_path), "")


def _found(app, *env: EnvVar, command=("bundle", "exec", "puma", "-C", "config/puma.rb"),
           given: dict[str, str] | None = None):
    c = container({"RAILS_ENV": "production", **(given or {})}, command=command)
    return pools_for_container(replace(c, env=(*c.env, *env)), app, node_cpus=4)


@pytest.mark.parametrize("form", FORMS)
def test_a_rails_fallback_is_not_taken_when_an_envfrom_secret_may_set_it(tmp_path, form):
    app = _rails(tmp_path, form)
    plain = _found(app)
    assert [p.size.value for p in plain.pools] == [5] and not plain.unknown, plain
    hidden = _found(app, _marker())
    assert not hidden.pools, hidden
    assert ("Rails production pool: RAILS_MAX_THREADS may be set by " + HELD) \
        in hidden.unknown, hidden.unknown
    assert ("Puma max threads: RAILS_MAX_THREADS may be set by the envFrom source at "
            "k8s/app.yaml:30, whose keys are not in the repository") in hidden.unknown
    # an explicit entry wins over every envFrom source
    given = _found(app, _marker(), given={"RAILS_MAX_THREADS": "3"})
    assert [p.size.value for p in given.pools] == [3] and not given.unknown, given
    # a prefix that cannot form RAILS_MAX_THREADS leaves the fallback
    other = _found(app, _marker("REDIS_"))
    assert [p.size.value for p in other.pools] == [5] and not other.unknown, other


def test_a_sidekiq_yml_fallback_is_not_taken_when_an_envfrom_secret_may_set_it(tmp_path):
    app = _rails(tmp_path, "10", sidekiq="<%= ENV.fetch('SIDEKIQ_CONCURRENCY', 7) %>")
    command = ("bundle", "exec", "sidekiq", "-C", "config/sidekiq.yml")
    plain = _found(app, command=command)
    assert [p.size.value for p in plain.pools] == [7] and not plain.unknown, plain
    hidden = _found(app, _marker(), command=command)
    assert hidden.unknown == ["Sidekiq concurrency: SIDEKIQ_CONCURRENCY may be set by the "
                              "envFrom source at k8s/app.yaml:30, whose keys are not in the "
                              "repository"], hidden.unknown
    given = _found(app, _marker(), command=command, given={"SIDEKIQ_CONCURRENCY": "4",
                                                           "RAILS_MAX_THREADS": "5"})
    assert [p.size.value for p in given.pools] == [4] and not given.unknown, given


def test_or_of_a_secret_set_variable_is_not_its_right_side():
    """ENV["DB_POOL"] set from a secretKeyRef is a string (non-nil): `|| 5` is not what
    runs. Before, the unreadable left side was taken as nil and 5 counted."""
    secret = EnvVar(name="DB_POOL", source=Source(path="k8s/app.yaml", line=12, key="DB_POOL"),
                    from_ref="ref", secret=True)
    scope = RubyScope("config/database.yml", 3, {"DB_POOL": secret}, 4)
    assert ruby_eval('ENV["DB_POOL"] || 5', scope) is None
    assert [v.name for v in scope.hidden] == ["DB_POOL"]
    # unset, no envFrom source: nil, so 5; a known value wins
    assert ruby_eval('ENV["DB_POOL"] || 5', RubyScope("d.yml", 3, {}, 4)).value == 5
    got = ruby_eval('ENV["DB_POOL"] || 5', RubyScope("d.yml", 3, {"DB_POOL": replace(
        secret, value="9")}, 4))
    assert got.value == "9"


def test_or_after_a_method_not_evaluated_is_unknown_not_its_right_side():
    """`Rails.application.credentials.db_pool || 5`: the credentials are encrypted in the
    repository; the reader does not evaluate them, so 5 is not what runs when they hold a
    pool size. Nil (an ENV[] unset, `nil`) still lets the right side decide."""
    scope = RubyScope("config/database.yml", 3, {}, 4)
    assert ruby_eval("Rails.application.credentials.db_pool || 5", scope) is None
    assert ruby_eval('nil || ENV["X"] || 7', scope).value == 7
    assert ruby_eval('ENV["X"] || Rails.application.credentials.x || 7', scope) is None
