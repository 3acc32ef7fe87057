"""The TensorFlow, Keras and tf_keras releases autodist supports, and what it says about others.

The support matrix (``docs/support-matrix.md``) was measured on the pairs in :data:`MEASURED`.
Older releases than :data:`OLDEST` are refused with an :class:`UnsupportedVersionError` that
names the fix; releases newer than :data:`NEWEST_TESTED` get one warning that names what is
unverified there (every touch of :mod:`autodist.upstream.surface` still checks, at first use,
that what it needs exists).

Pure: the versions come in as arguments (:func:`installed` reads them from package metadata,
without importing anything).

Example:
    >>> check_versions({"tensorflow": "2.18.1", "keras": "3.8.0"})
    []
    >>> check_versions({"tensorflow": "2.22.0", "keras": "3.15.1"})[0][:40]
    'TensorFlow 2.22.0 is newer than the rele'
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Mapping
from types import MappingProxyType

from autodist.errors import UnsupportedVersionError

__all__ = ["MEASURED", "NEWEST_TESTED", "OLDEST", "check_versions", "installed", "version_tuple"]

#: The oldest release of each package autodist supports (pyproject.toml says the same).
OLDEST = {"tensorflow": "2.16.0", "keras": "3.3.0", "tf_keras": "2.16.0"}
#: The newest release of each that the support matrix ran on.
NEWEST_TESTED = {"tensorflow": "2.21.0", "keras": "3.15.1", "tf_keras": "2.21.0"}
#: The pairs the support matrix ran on (docs/support-matrix.md), oldest first.
MEASURED = (
    ("2.16.2", "3.3.3", "2.16.0"),
    ("2.17.1", "3.4.1", None),
    ("2.17.1", "3.6.0", None),
    ("2.18.1", "3.7.0", None),
    ("2.18.1", "3.8.0", None),
    ("2.19.1", "3.10.0", None),
    ("2.20.0", "3.12.0", None),
    ("2.21.0", "3.15.1", "2.21.0"),
)

_LABELS = MappingProxyType({"tensorflow": "TensorFlow", "keras": "Keras", "tf_keras": "tf_keras"})
_PINS = MappingProxyType({"tensorflow": "tensorflow>=2.16", "keras": "keras>=3.3", "tf_keras": "tf-keras>=2.16"})


def version_tuple(version: str | None) -> tuple[int, ...]:
    """``"3.15.1"`` → ``(3, 15, 1)``; a pre-release or local suffix is ignored.

    Example:
        >>> version_tuple("3.16.0.dev2026110101"), version_tuple("2.18.0rc1"), version_tuple(None)
        ((3, 16, 0), (2, 18, 0), ())
    """
    if not version:
        return ()
    return tuple(
        int(part) for part in re.findall(r"\d+", re.split(r"[a-z+]", version.split("+")[0], maxsplit=1)[0])[:3]
    )


def check_versions(
    versions: Mapping[str, str | None], notes_for: tuple[str, ...] = ("tensorflow", "keras", "tf_keras")
) -> list[str]:
    """The notes these installed versions deserve (newer than tested) for the packages of
    ``notes_for`` (a newer Keras is said where the plan applies its workarounds:
    :func:`autodist.planning.keras_compat.warn_untested`).

    Raises:
        UnsupportedVersionError: a release older than the oldest supported one.
    """
    older = [
        f"{_LABELS[name]} {version} (the oldest supported is {OLDEST[name]})"
        for name, version in versions.items()
        if name in OLDEST and version and version_tuple(version) < version_tuple(OLDEST[name])
    ]
    if older:
        raise UnsupportedVersionError(
            f"autodist does not support {', '.join(older)}. Expected TensorFlow 2.16 or newer with "
            "Keras 3.3 or newer (or tf_keras 2.16 or newer), the releases of its support matrix "
            "(docs/support-matrix.md). Upgrade them: pip install "
            f"{' '.join(repr(_PINS[name]) for name, version in versions.items() if name in OLDEST and version)}."
        )
    notes = []
    for name, version in versions.items():
        if name in notes_for and version and version_tuple(version)[:2] > version_tuple(NEWEST_TESTED[name])[:2]:
            notes.append(
                f"{_LABELS[name]} {version} is newer than the releases autodist was tested on (up to "
                f"{NEWEST_TESTED[name]}). Unverified there: the Keras workarounds (each stays applied "
                "only where it is harmless once fixed), and the touches of private code listed by "
                "`python -m autodist inspect` (each checks that what it needs exists and turns "
                "itself off with a warning where it does not). Compare a first run with model.fit "
                "on one device."
            )
    return notes


def installed() -> dict[str, str | None]:
    """The installed TensorFlow, Keras and tf_keras versions, from package metadata (nothing is
    imported); ``None`` for a package that is not installed."""
    found: dict[str, str | None] = {}
    for name, dists in (
        ("tensorflow", ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-nightly")),
        ("keras", ("keras",)),
        ("tf_keras", ("tf-keras", "tf_keras")),
    ):
        found[name] = None
        for dist in dists:
            try:
                found[name] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return found
