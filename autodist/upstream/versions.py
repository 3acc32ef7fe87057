"""The TensorFlow, Keras and tf_keras releases autodist supports, and what it says about others.

The support matrix (``docs/support-matrix.md``) was measured on the pairs in :data:`MEASURED`,
the next releases among them (a TensorFlow release candidate, a dated ``keras-nightly``: the
matrix's "next" sessions, which CI runs). Older releases than :data:`OLDEST` are refused with an
:class:`UnsupportedVersionError` that names the fix; releases newer than :data:`NEWEST_TESTED`
get one warning that names what is unverified there (every touch of
:mod:`autodist.upstream.surface` still checks, at first use, that what it needs exists).

Pure: the versions come in as arguments (:func:`installed` reads them without importing
anything: Keras's and tf_keras's from their own code, TensorFlow's from its package metadata).

Example:
    >>> check_versions({"tensorflow": "2.18.1", "keras": "3.8.0"})
    []
    >>> check_versions({"tensorflow": "2.23.0", "keras": "3.15.1"})[0][:40]
    'TensorFlow 2.23.0 is newer than the rele'
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from autodist.errors import UnsupportedVersionError

__all__ = [
    "MEASURED",
    "NEWEST_RELEASED",
    "NEWEST_TESTED",
    "is_prerelease",
    "OLDEST",
    "check_versions",
    "installed",
    "module_version",
    "named",
    "package_version",
    "release_order",
    "tensorflow_version",
    "version_tuple",
]

#: The oldest release of each package autodist supports (pyproject.toml says the same).
OLDEST = {"tensorflow": "2.16.0", "keras": "3.3.0", "tf_keras": "2.16.0"}
#: The newest release of each that the support matrix ran on, pre-releases included (its next
#: sessions): a release of the same minor version is not newer than tested.
NEWEST_TESTED = {"tensorflow": "2.22.0rc0", "keras": "3.16.0.dev2026102704", "tf_keras": "2.21.0"}
#: The newest final release of each that the support matrix ran on.
NEWEST_RELEASED = {"tensorflow": "2.21.0", "keras": "3.15.1", "tf_keras": "2.21.0"}
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
    ("2.22.0rc0", "3.15.1", None),  # the next releases: a release candidate with the released Keras
    ("2.22.0rc0", "3.16.0.dev2026102704", None),  # and with a dated keras-nightly
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


#: How far a pre-release of a version comes before the release itself.
_STAGES = MappingProxyType({"dev": 0, "a": 1, "b": 2, "rc": 3})


def release_order(version: str | None) -> tuple[int, ...]:
    """A key that orders releases and their pre-releases: a nightly (``.devN``) before an alpha,
    a beta, a release candidate, and all before the release itself; nightlies by their number.

    Example:
        >>> sorted(["3.16.0", "3.16.0.dev2026102704", "3.16.0rc1", "3.16.0.dev2026100101"], key=release_order)
        ['3.16.0.dev2026100101', '3.16.0.dev2026102704', '3.16.0rc1', '3.16.0']
    """
    base = version_tuple(version)
    if not base:
        return ()
    found = re.search(r"(dev|a|b|rc)\.?(\d*)", str(version).split("+")[0].replace("-", ""))
    stage, number = (_STAGES[found.group(1)], int(found.group(2) or 0)) if found else (len(_STAGES), 0)
    return (*base, *(0,) * (3 - len(base)), stage, number)


def is_prerelease(version: str | None) -> bool:
    """Whether a version names a pre-release: a release candidate, a nightly or a dev build.

    Example:
        >>> is_prerelease("2.22.0rc0"), is_prerelease("3.16.0.dev2026102704"), is_prerelease("3.15.1")
        (True, True, False)
    """
    return bool(version) and re.search(r"(a|b|rc|dev)\d*", str(version).split("+")[0]) is not None


def check_versions(
    versions: Mapping[str, str | None], notes_for: tuple[str, ...] = ("tensorflow", "keras", "tf_keras")
) -> list[str]:
    """The notes these installed versions deserve (newer than tested) for the packages of
    ``notes_for`` (a newer Keras is said where the plan applies its workarounds:
    :func:`autodist.upstream.workaround.warn_untested`).

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
    return [
        f"{_LABELS[name]} {version} is newer than the releases autodist was tested on (up to "
        f"{NEWEST_TESTED[name]}). Unverified there: the Keras workarounds (each stays applied "
        "only where it is harmless once fixed), and the touches of private code listed by "
        "`python -m autodist inspect` (each checks that what it needs exists and turns "
        "itself off with a warning where it does not). Compare a first run with model.fit "
        "on one device."
        for name, version in versions.items()
        if name in notes_for and version and version_tuple(version)[:2] > version_tuple(NEWEST_TESTED[name])[:2]
    ]


#: Where Keras and tf_keras write their own ``__version__``, under each package's folder, first
#: found first: a nightly (``keras-nightly``) or a source install has no ``keras`` distribution
#: metadata, but its code names its version all the same.
_VERSION_FILES = MappingProxyType(
    {"keras": ("src/version.py", "__init__.py"), "tf_keras": ("__init__.py", "src/__init__.py")}
)
_ASSIGNED = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


def module_version(name: str) -> str | None:
    """``keras.__version__`` (or ``tf_keras``'s), without importing it: the imported module's
    own where it is imported, else what its version file assigns; ``None`` where it is not
    installed. Never the distribution's metadata, which a nightly or a source install lacks or
    names otherwise.

    Example:
        >>> module_version("no_such_package_here") is None
        True
    """
    version = getattr(sys.modules.get(name), "__version__", None)
    if isinstance(version, str):
        return version
    try:  # the path finder reads the folders on sys.path; the import system's finders (an editable install's) after
        spec = importlib.machinery.PathFinder.find_spec(name) or importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for relative in _VERSION_FILES.get(name, ("__init__.py",)):
            try:
                found = _ASSIGNED.search(Path(folder, relative).read_text(encoding="utf-8"))
            except OSError:
                continue
            if found:
                return found.group(1)
    return None


def package_version(name: str) -> str | None:
    """Installed version of a distribution, without importing it."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def tensorflow_version() -> str | None:
    """TensorFlow's version from package metadata (any of its wheels), without importing it: its
    ``__version__`` lives in its compiled library."""
    found = (package_version(dist) for dist in ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-nightly"))
    return next((version for version in found if version is not None), None)


def installed() -> dict[str, str | None]:
    """The installed TensorFlow, Keras and tf_keras versions (Keras and tf_keras as their code
    names them: :func:`module_version`), nothing imported; ``None`` for one that is not installed."""
    return {
        "tensorflow": tensorflow_version(),
        "keras": module_version("keras"),
        "tf_keras": module_version("tf_keras"),
    }


def named(found: Mapping[str, str | None] | None = None) -> str:
    """The installed releases, as a warning names them: ``"TensorFlow 2.21.0 / Keras 3.15.1"``.

    Example:
        >>> named({"tensorflow": "2.22.0rc0", "keras": "3.16.0.dev2026102704", "tf_keras": None})
        'TensorFlow 2.22.0rc0 / Keras 3.16.0.dev2026102704'
    """
    found = installed() if found is None else found
    return " / ".join(f"{_LABELS[name]} {version}" for name, version in found.items() if version) or "this installation"
