"""The exit codes a task and its launcher agree on, and the launcher's own.

Example:
    >>> PREEMPTED_EXIT_CODE, TIMEOUT_EXIT_CODE, STALL_EXIT_CODE
    (75, 124, 125)
"""

from __future__ import annotations

__all__ = ["PREEMPTED_EXIT_CODE", "STALL_EXIT_CODE", "TIMEOUT_EXIT_CODE"]

#: A task's exit code after SIGTERM, when it saved its step, or when the workers could not all
#: agree on one and none saved (``EX_TEMPFAIL``: try again; the next start resumes from the
#: newest save every worker has).
PREEMPTED_EXIT_CODE = 75
#: The exit code of a job stopped by ``--timeout``, as coreutils' ``timeout`` uses.
TIMEOUT_EXIT_CODE = 124
#: The exit code of a job stopped by the stall watchdog (no task made progress for ``--stall-timeout``).
STALL_EXIT_CODE = 125
