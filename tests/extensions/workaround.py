"""A workaround of a test's own, in one file: what it fixes, its patch, declared to the registry."""

from __future__ import annotations

from typing import Any

from autodist.process import replace
from autodist.upstream.keras_workarounds import declare
from autodist.upstream.workaround import EVERY_RELEASE, Workaround


class Greeter:
    """What the workaround patches (a stand-in for a Keras class)."""

    def greet(self) -> str:
        return "broken"


def _install(act: Any) -> bool:
    replace(Greeter, "greet", lambda self: "fixed")
    return True


GREETING_FIXED = declare(
    Workaround(
        name="greeting_fixed",
        upstream="a test's own",
        summary="Greeter.greet says 'broken' under a strategy; autodist makes it say 'fixed'.",
        affected=EVERY_RELEASE,
        if_fixed="the greeting is the same",
        install=_install,
        tested_in="tests/test_extensions.py",
    )
)
