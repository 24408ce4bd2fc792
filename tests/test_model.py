import pytest

from advisor.model import Source, Term


def test_term_shows_value_label_and_source():
    t = Term(label="HPA maxReplicas", value=40, source=Source(path="k8s/hpa.yaml", line=9))
    assert t.show() == "40 (HPA maxReplicas, k8s/hpa.yaml:9)"


def test_default_source_label():
    s = Source.default_of("PostgreSQL 15 default", key="superuser_reserved_connections")
    assert s.label() == "default: PostgreSQL 15 default"


def test_records_are_keyword_only_and_values_immutable():
    with pytest.raises(TypeError):
        Source("k8s/a.yaml", 3)  # type: ignore[misc]
    src = Source(path="k8s/a.yaml", line=3)
    with pytest.raises(AttributeError):
        src.line = 4  # type: ignore[misc]
    assert hash(src) == hash(Source(path="k8s/a.yaml", line=3))


def test_float_fields_hold_floats():
    term = Term(label="pods", value=40, source=Source(path="k8s/hpa.yaml", line=12))
    assert type(term.value) is float and term.show().startswith("40 (pods")


def test_pydantic_models_can_hold_records():
    """advise, diff and usl keep pydantic models whose fields are these records."""
    from pydantic import BaseModel

    class Holder(BaseModel):
        term: Term

    held = Holder(term={"label": "x", "value": 2, "source": {"path": "a", "line": 1}})
    assert held.term == Term(label="x", value=2.0, source=Source(path="a", line=1))
    assert Holder(term=held.term).term is held.term
    assert held.model_dump(mode="json") == {
        "term": {"label": "x", "value": 2.0,
                 "source": {"path": "a", "line": 1, "key": None, "default": None}}}


def test_finding_fingerprint_is_sha256_of_its_subject_without_hashlib():
    """model._sha256 is CPython's own sha256 (hashlib's OpenSSL load is not needed for
    a few hundred bytes): the digests are hashlib's, so fingerprints do not change."""
    import hashlib

    from advisor.model import Finding, Location, Severity, _sha256

    for data in (b"", b"abc", "PA101|k8s/\u00e9.yaml|x".encode() * 100):
        assert _sha256()(data).hexdigest() == hashlib.sha256(data).hexdigest()
    f = Finding(code="PA101", name="oversubscribed-server", severity=Severity.error,
                message="m", location=Location(path="k8s/db.yaml", line=3), subject="db")
    assert f.fingerprint == hashlib.sha256(b"PA101|k8s/db.yaml|db").hexdigest()[:16]
