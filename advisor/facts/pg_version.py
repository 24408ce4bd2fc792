"""The PostgreSQL major version a deployment runs, from what a repository writes.

Majors are numbers: 10..18 as themselves, 9.6 as 9.6 (a Term's int_value is then 9,
which every "since 12" comparison treats right). Where a repository names none, the
caller's default is an assumption and its Term says so.

Where the version is written, as real repositories write it:
- image tags: postgres:16-alpine, postgres:9.6, bitnami/postgresql:11.14.0-debian-10-r28,
  ghcr.io/cloudnative-pg/postgresql:16.2, postgis/postgis:16-3.4 (PostgreSQL first, then
  PostGIS), timescale/timescaledb:2.14.2-pg16 and timescaledb-ha:pg16.2-ts2.14.2 (the
  extension's version first, PostgreSQL after "pg"), pgvector/pgvector:pg16 or
  0.7.0-pg16, crunchy-postgres:ubi8-16.2-0 (the base image first), and Zalando's
  spilo-16:3.2-p2 (the major in the repository name; the tag is Spilo's own version);
- operator resources: CloudNativePG spec.imageName or spec.imageCatalogRef.major,
  Zalando spec.postgresql.version ("16"), Crunchy spec.postgresVersion (16);
- declarations: pool-advisor's pg-version / --pg-version.
"""

from __future__ import annotations

import re

from advisor.lazyregex import lazy

_PG_IN_TAG = lazy(r"(?:^|[-_.])pg(\d+)(?:\.(\d+))?", re.I)  # 2.14.2-pg16, pg16.2-ts2
_UBI_TAG = lazy(r"^(?:ubi|centos|rhel)\d+-(\d+)(?:\.(\d+))?")  # ubi8-16.2-0
_LEADING = lazy(r"^v?(\d+)(?:\.(\d+))?")  # 16, 16.2, 11.14.0-debian-10-r28, 9.6
_BITNAMI_TAG = lazy(r"^(\d+)\.(\d+)\.\d+-debian-\d+-r\d+$")  # 14.4.0-debian-11-r0
# ghcr.io/zalando/spilo-16; sclorg's quay.io/fedora/postgresql-16,
# quay.io/sclorg/postgresql-15-c9s, centos/postgresql-96-centos7 (96 is 9.6), Sourcegraph's
# postgresql-16-codeinsights and, before it, postgres-11.4, postgres-12.6 and
# postgres-12-alpine (the names advisor.read.workloads takes for a server)
POSTGRESQL_REPO = (r"postgres(?:ql)?-(\d+)(?:\.(\d+))?"
                   r"(?:-(?:c\d+s|centos\d+|rhel\d+|el\d+|codeinsights|alpine))?")
_REPO_MAJOR = lazy(rf"^(?:spilo-(\d+)|{POSTGRESQL_REPO})$")

# Images whose leading tag number is not PostgreSQL's (their PostgreSQL is after "pg").
_OWN_VERSIONED = ("timescaledb", "timescaledb-ha", "pgvector", "spilo", "postgres-operator")


def major_of(major: int, minor: int | None) -> float | None:
    """9.6 stays 9.6; 10 and later are their first number; nothing older than 9.6 or
    after 99 is a PostgreSQL major."""
    if major == 9 and minor is not None and minor >= 6:
        return 9.6
    if 10 <= major <= 99:
        return major
    return None


def _split(image: str) -> tuple[str, str]:
    """(repository name without registry/path, tag without digest)."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    repo, _, tag = name.partition(":")
    return repo.lower(), tag


def image_major(image: str) -> float | None:
    """The PostgreSQL major an image runs, from its name and tag; None when they do not
    say (no tag, "latest", a digest only)."""
    repo, tag = _split(image)
    if m := _REPO_MAJOR.match(repo):
        digits = m.group(1) or m.group(2)
        if digits == "96":
            return 9.6
        return major_of(int(digits), int(m.group(3)) if m.group(3) else None)
    if m := _PG_IN_TAG.search(tag):
        return major_of(int(m.group(1)), int(m.group(2)) if m.group(2) else None)
    if m := _UBI_TAG.match(tag):
        return major_of(int(m.group(1)), int(m.group(2)) if m.group(2) else None)
    if repo in _OWN_VERSIONED:
        # a Bitnami-style rebuild (ghcr.io/chatwoot/pgvector:14.4.0-debian-11-r0, from
        # Bitnami's postgresql chart): Bitnami tags name the PostgreSQL release
        if m := _BITNAMI_TAG.match(tag):
            return major_of(int(m.group(1)), int(m.group(2)))
        return None
    if m := _LEADING.match(tag):
        return major_of(int(m.group(1)), int(m.group(2)) if m.group(2) else None)
    return None


def declared_major(raw: object) -> float | None:
    """A version as a resource or a declaration writes it: 16, "16", "16.2", "9.6"."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, int):
        return major_of(raw, None) if raw != 9 else None
    if isinstance(raw, float):
        raw = f"{raw:g}"
    m = _LEADING.match(str(raw).strip())
    if not m:
        return None
    return major_of(int(m.group(1)), int(m.group(2)) if m.group(2) else None)


def option_major(major: int) -> float:
    """--pg-version / pg-version take an integer: 9 stands for 9.6."""
    return 9.6 if major == 9 else major


def shown(major: float) -> str:
    return f"{major:g}"
