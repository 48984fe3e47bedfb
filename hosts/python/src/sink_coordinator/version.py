"""The component versions this package runs, checked when a component is
loaded, before anything is linked: the same range and the same message as the
Rust host (``sink_coordinator_host::artifact::COMPATIBLE_VERSIONS``) and the
npm package."""

from __future__ import annotations

from typing import Iterable, List

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from .errors import IncompatibleComponent

#: The WIT package versions of ``sink:coordinator`` this host runs: ``0.2.x``
#: from 0.2.1 on (within 0.2 versions only add; this host calls ``events``,
#: added in 0.2.1; 0.2.0 is not additive over 0.1.0, whose ``outcome`` lacks
#: ``committed-up-to`` and whose writer has no ``committed``).
COMPATIBLE_VERSIONS = ">=0.2.1, <0.3.0"


def exported_versions(names: Iterable[str]) -> List[str]:
    """The sorted, distinct versions of the ``sink:coordinator/…@V`` names."""
    return sorted({n.split("@", 1)[1] for n in names if n.startswith("sink:coordinator/") and "@" in n})


def check_version(names: Iterable[str]) -> str:
    """The component's version if this host runs it, else raises
    IncompatibleComponent. ``names``: the component's export names
    (``component.type.exports(engine)``)."""
    found = exported_versions(names)
    wanted = f"this host runs sink:coordinator {COMPATIBLE_VERSIONS}"
    if not found:
        raise IncompatibleComponent(
            f"not a sink-coordinator component: it exports no sink:coordinator interface ({wanted})", found
        )
    if len(found) > 1:
        raise IncompatibleComponent(
            f"incompatible component: {wanted}, the component exports several versions ({', '.join(found)})",
            found,
        )
    try:
        # A semver release X.Y.Z is its own canonical PEP 440 form; anything
        # else (a pre-release, a "v" prefix) is not a version this host runs.
        v = Version(found[0])
        ok = str(v) == found[0] and SpecifierSet(COMPATIBLE_VERSIONS.replace(" ", "")).contains(v, prereleases=False)
    except InvalidVersion:
        ok = False
    if not ok:
        raise IncompatibleComponent(
            f"incompatible component: {wanted}, the component is sink:coordinator@{found[0]}", found
        )
    return found[0]
