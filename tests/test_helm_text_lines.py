"""Which chart file lines a generated ConfigMap text is placed at
(advisor.read.render.helm_text_lines.place_text): only a part that holds at least half
of the text's lines, each line checked as written or with its actions filled in."""

from __future__ import annotations

from advisor.read.render.helm_text_lines import _part, place_text

HELPER = [
    "[databases]",
    "shop = host=db pool_size={{ .Values.poolSize }}",
    "{{- if .Values.extra }}",
    "extra = 1",
    "{{- end }}",
    "[pgbouncer]",
    "pool_mode = transaction",
    "max_client_conn = 100",
]


def test_each_line_is_placed_at_its_helper_line():
    part = _part("app/templates/_helpers.tpl", 9, HELPER)  # the body starts at line 10
    text = ("[databases]\nshop = host=db pool_size=12\n[pgbouncer]\npool_mode = transaction\n"
            "max_client_conn = 150\n")
    placed = place_text(text, [part])
    # max_client_conn = 150 is not what line 17 writes (100): not placed there
    assert {n: (s.path, s.line) for n, s in placed.items()} == {
        1: ("app/templates/_helpers.tpl", 10), 2: ("app/templates/_helpers.tpl", 11),
        3: ("app/templates/_helpers.tpl", 15), 4: ("app/templates/_helpers.tpl", 16)}


def test_a_part_holding_less_than_half_of_the_text_places_nothing():
    part = _part("app/templates/_helpers.tpl", 0, HELPER)
    text = "[pgbouncer]\nlisten_port = 6432\nauth_type = md5\nmax_client_conn = 150\n"
    assert place_text(text, [part]) == {}


def test_the_part_holding_most_lines_wins():
    small = _part("a.tpl", 0, ["[pgbouncer]", "pool_mode = transaction", "x = 1"])
    whole = _part("b.tpl", 0, HELPER)
    text = "[databases]\nshop = host=db pool_size=3\n[pgbouncer]\npool_mode = transaction\n"
    placed = place_text(text, [small, whole])
    assert {s.path for s in placed.values()} == {"b.tpl"}
