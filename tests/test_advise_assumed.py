"""The After block says which proposals it assumes applied, and which of them the diff
does not make (by hand: a default to set, an edit refused at its line); "fits" is never
said for a state the diff alone does not produce. Audit 13d: on BorisPolonsky/dify-helm
the proposed PgBouncer's client host edits were refused in a template, and the After
block still said "fits" (only the trailing "Still reported by check" said otherwise)."""

from __future__ import annotations

from pathlib import Path

from advisor.advise.assumed import mark_by_hand
from advisor.advise.records import Edit, NewFile, Proposal, ServerAdvice
from tests.test_advise import cli
from tests.test_advise_pool_parts import _repo


def _advice() -> ServerAdvice:
    host = Edit(path="charts/app/templates/config.tpl", line=215, key="DB_HOST",
                old="db", new="pgbouncer-db")
    return ServerAdvice(
        server="db", server_id="db", fits_before=False, usable_before=97, peak_before=220,
        proposals=[
            Proposal(kind="pooler", subject="pgbouncer-db", key="PgBouncer (new)", old="none",
                     new="charts/app/templates/pgbouncer-db.yaml", reason="r",
                     new_file=NewFile(path="charts/app/templates/pgbouncer-db.yaml", text="")),
            Proposal(kind="client-pool", subject="api", key="database host", old="db",
                     new="pgbouncer-db", reason="r", edit=host)],
        fits_after=True, usable_after=97, peak_after=3,
        after=["usable: 97", "peak: 3", "fits"])


def test_a_refused_edit_is_by_hand_and_fits_says_so():
    (a,) = mark_by_hand([_advice()], [(_advice().proposals[1].edit, "config.tpl:215: 'db' "
                                       "not found on the line")],
                        {"charts/app/templates/pgbouncer-db.yaml"})
    assert a.by_hand == [2]
    assert a.proposals[1].edit is None and "not found on the line" in a.proposals[1].manual
    assert a.after[0] == "assumes proposals 1, 2 applied: 1 by the diff, 2 by hand"
    assert a.after[-1].startswith("fits once proposal 2 is done by hand too; the diff alone "
                                  "does not make this state")


def test_all_in_the_diff_fits_plainly():
    (a,) = mark_by_hand([_advice()], [], {"charts/app/templates/pgbouncer-db.yaml"})
    assert a.by_hand == [] and a.after[0] == "assumes proposals 1, 2 applied (all in the diff)"
    assert a.after[-1] == "fits"


def test_a_default_set_by_hand_is_named_in_the_after_block(tmp_path: Path):
    # Dify's defaults: SQLALCHEMY_POOL_SIZE 30 -> 18 by hand, no edit in the diff
    out = cli("advise", str(_repo(tmp_path, ""))).stdout
    after = out[out.index("After:"):]
    assert "assumes proposals 1 applied: none by the diff, 1 by hand" in after
    assert "  fits once proposal 1 is done by hand too" in after and "\n  fits\n" not in after
