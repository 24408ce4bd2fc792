"""The owners Bitnami publishes its container images under: `bitnami/<name>`, and since
its 2025 catalogue change the same images as `bitnamilegacy/<name>` (the tags pinned
before it) and `bitnamisecure/<name>`. One list, so every Bitnami image reader (the
PostgreSQL server, Pgpool-II, the published-image check) accepts the same names."""

from __future__ import annotations

BITNAMI_OWNERS = ("bitnami", "bitnamilegacy", "bitnamisecure")


def bitnami_images(name: str) -> tuple[str, ...]:
    """`owner/name` under each of Bitnami's owners (for base.image_is)."""
    return tuple(f"{owner}/{name}" for owner in BITNAMI_OWNERS)


def is_bitnami_owner(owner: str) -> bool:
    """Whether an image repository's owner part (lower-cased) is one of Bitnami's."""
    return owner in BITNAMI_OWNERS
