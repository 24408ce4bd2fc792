from advisor.model import Source, Term


def test_term_shows_value_label_and_source():
    t = Term(label="HPA maxReplicas", value=40, source=Source(path="k8s/hpa.yaml", line=9))
    assert t.show() == "40 (HPA maxReplicas, k8s/hpa.yaml:9)"


def test_default_source_label():
    s = Source.default_of("PostgreSQL 15 default", key="superuser_reserved_connections")
    assert s.label() == "default: PostgreSQL 15 default"
