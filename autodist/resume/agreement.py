"""How the workers of one job agree on the step after which every one of them saves, when one of
them is preempted (:mod:`autodist.resume.preemption` saves and exits; :mod:`autodist.resume.resumed_fit` resumes).

- One process (:class:`LocalAgreement`): save after the step that is running when SIGTERM comes.
- ``MultiWorkerMirroredStrategy`` (:class:`ClusterAgreement`): every worker must save after the
  *same* step, or the others wait for ever in the next step's all-reduce. The first worker to see
  SIGTERM proposes a step through the coordination service's key-value store (the one
  TensorFlow's ``PreemptionCheckpointHandler`` uses): two steps past its own, since workers in
  one all-reduce are at most one step apart, so no worker can have passed it. Each worker's
  watcher thread takes the proposal and acknowledges it. Once every worker has, the proposer
  writes the decision ``commit`` and all save after that step. No step pays for this: the check
  is a flag.
- **No half-agreement.** When a worker does not acknowledge within the agreement's time (a third
  of the launcher's ``--grace``, at most :data:`ACK_TIMEOUT_S`: a hung or frozen worker, or one
  that died), the proposer writes the decision ``abandon``, naming that worker. Then no worker
  saves a step: the newest save every worker has stays, and the next start resumes there. Every
  worker that heard the decision exits with ``PREEMPTED_EXIT_CODE`` and a message that names the
  worker that did not answer, also when its main thread is blocked in an all-reduce that the
  missing worker will never join (the watcher thread ends the process after
  :data:`ABANDON_DELAY_S`; a save is written to a partial file and renamed, so none is cut
  short). The launcher kills the worker that did not answer when ``--grace`` ends, and says so.

Example:
    >>> ClusterAgreement.proposal(finished=7)
    9
    >>> ClusterAgreement(0, 2, names=("worker 0", "worker 1"), ack_timeout=3.0).abandon_message([1])
    'worker 1 did not answer the agreement on the step to save within 3 s'
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autodist.errors import PeerError
from autodist.jobs.exit_codes import PREEMPTED_EXIT_CODE
from autodist.resume.train_state import Save
from autodist.log import get_logger
from autodist.settings import grace_setting
from autodist.upstream.tf_runtime import get_key_value, set_key_value
from autodist.process import STATE

__all__ = [
    "ABANDON_DELAY_S",
    "ACK_TIMEOUT_S",
    "TF_NOTICE_KEY",
    "ClusterAgreement",
    "LocalAgreement",
    "ack_timeout",
    "next_fit_id",
    "watch_tf_notice",
]

#: Where TensorFlow's own SIGTERM handler (its ``PreemptionNotifier``, installed with the
#: coordination service) writes, in the coordination service, the task that got SIGTERM:
#: ``/job:worker/task:1``. A process whose SIGTERM autodist cannot catch (fit outside the main
#: thread, as in Ray Train) learns of it here.
TF_NOTICE_KEY = "TF_DEFAULT_PREEMPTION_NOTICE_KEY"

#: The longest wait for the other workers to acknowledge a proposed step, all together, in seconds.
ACK_TIMEOUT_S = 10.0
#: The shortest: a round trip through the coordination service on a busy host fits in it.
MIN_ACK_TIMEOUT_S = 1.0
#: The longest wait for another worker to say which saves it has, at the start of ``fit``.
RESUME_TIMEOUT_S = 300.0
#: The longest wait for the other workers to say, at the end of ``fit``, whether SIGTERM came.
END_TIMEOUT_S = 60.0
#: After an abandoned agreement: how long the main thread has to exit on its own before the
#: watcher ends the process (it may be blocked in an all-reduce with the missing worker).
ABANDON_DELAY_S = 2.0
COMMIT = "commit"


def next_fit_id() -> int:
    """This process's count of ``autodist.fit`` calls so far (every worker counts alike)."""
    return next(STATE.fit_ids)  # every worker runs its fits in the same order: one key per fit


def ack_timeout(environ: Mapping[str, str]) -> float:
    """The agreement's time: a third of the launcher's ``--grace`` (``AUTODIST_GRACE``), so the
    decision, the save and the exit fit in it; at least :data:`MIN_ACK_TIMEOUT_S` (a round trip
    through the coordination service on a busy host), at most :data:`ACK_TIMEOUT_S`.

    Example:
        >>> ack_timeout({"AUTODIST_GRACE": "6"}), ack_timeout({}), ack_timeout({"AUTODIST_GRACE": "1"})
        (2.0, 10.0, 1.0)
    """
    grace = grace_setting(environ)
    return ACK_TIMEOUT_S if grace is None else min(ACK_TIMEOUT_S, max(MIN_ACK_TIMEOUT_S, grace / 3))


class LocalAgreement:
    """One process: save after the step that is running when SIGTERM comes."""

    def common(self, available: list[Save]) -> list[Save]:
        """The saves to resume from: all of this process's."""
        return list(available)

    def any_preempted(self, mine: bool) -> bool:
        return mine

    def propose(self, finished: int) -> None:
        self.target = finished

    def agreed(self) -> int | None:
        return getattr(self, "target", None)

    def missing(self) -> list[int] | None:
        """The workers that did not answer (``None``: the agreement holds, or there is none)."""
        return None

    def confirmed(self) -> bool:
        """Whether every worker agreed to save after the agreed step."""
        return True

    def close(self) -> None:
        pass


def watch_tf_notice(task: str, on_notice: Callable[[], Any], stop: threading.Event) -> None:
    """Call ``on_notice`` (in a watcher thread) when TensorFlow's SIGTERM handler says that
    ``task`` (``/job:worker/task:1``) got SIGTERM (:data:`TF_NOTICE_KEY`); asked once a second,
    until ``stop`` is set (the ``fit`` is over)."""

    def watch() -> None:
        import tensorflow as tf

        while not stop.is_set():
            try:
                value = get_key_value(TF_NOTICE_KEY, timeout_ms=1000)
            except tf.errors.DeadlineExceededError:  # not set within the second: ask again
                continue
            except Exception:  # no coordination service, or the cluster is going away
                return
            if value.strip() == task:
                on_notice()
            return

    threading.Thread(target=watch, name="autodist-tf-notice", daemon=True).start()


@dataclass
class ClusterAgreement:
    """Workers of one ``MultiWorkerMirroredStrategy`` agree on the step after which all save,
    through the coordination service (see the module's docstring)."""

    task_index: int
    num_workers: int
    fit_id: int = 0
    names: tuple[str, ...] = ()  # each worker's name, by index ("chief 0", "worker 1", ...)
    ack_timeout: float = ACK_TIMEOUT_S
    end_process: Callable[[int], Any] = os._exit  # after an abandoned agreement (tests pass their own)
    _value: str | None = None
    _decision: str | None = None
    _received: threading.Event = field(default_factory=threading.Event)
    _decided: threading.Event = field(default_factory=threading.Event)
    _said: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def proposal(finished: int) -> int:
        """The step to save after, proposed by a worker that has finished ``finished`` steps."""
        return finished + 2

    @property
    def key(self) -> str:
        return f"autodist/preemption/{self.fit_id}"

    def common(self, available: list[Save]) -> list[Save]:
        """The saves every worker has (a worker that died may have missed its peers' last one):
        each worker posts the names of its own, and reads every other worker's."""
        key = f"autodist/resume/{self.fit_id}"
        set_key_value(f"{key}/{self.task_index}", json.dumps([found.name for found in available]))
        names = {found.name for found in available}
        for index in range(self.num_workers):
            try:
                names &= set(json.loads(get_key_value(f"{key}/{index}", timeout_ms=int(RESUME_TIMEOUT_S * 1000))))
            except Exception as err:
                raise PeerError(
                    f"{self.name(index)} did not say which saves it has in {RESUME_TIMEOUT_S:g} s "
                    f"({type(err).__name__}). "
                    "Expected every worker to start autodist.fit. Find that worker's error in its log."
                ) from err
        return [found for found in available if found.name in names]

    def any_preempted(self, mine: bool) -> bool:
        """At the end of ``fit``: whether any worker got SIGTERM (after the last step, none can
        propose one), so that all save the finished fit, or none does."""
        key = f"autodist/end/{self.fit_id}"
        set_key_value(f"{key}/{self.task_index}", "1" if mine else "0")
        deadline = time.monotonic() + END_TIMEOUT_S
        for index in range(self.num_workers):
            try:
                left_ms = max(1, int((deadline - time.monotonic()) * 1000))
                mine = mine or get_key_value(f"{key}/{index}", timeout_ms=left_ms) == "1"
            except Exception:
                get_logger().warning(
                    f"autodist: {self.name(index)} did not say how its fit ended in {END_TIMEOUT_S:g} s"
                )
        return mine

    def name(self, index: int) -> str:
        return self.names[index] if index < len(self.names) else f"worker {index}"

    def start(self) -> ClusterAgreement:
        threading.Thread(target=self._watch, name="autodist-preemption", daemon=True).start()
        return self

    def _watch(self) -> None:
        """Take the proposal, acknowledge it, take the decision; after ``abandon``, end the
        process if its main thread has not (it may be blocked in an all-reduce)."""
        try:
            value = get_key_value(self.key)  # blocks until some worker sets it
        except Exception:  # the cluster is going away
            return
        self._value = value
        self._received.set()
        if value == "done":
            return
        try:
            set_key_value(f"{self.key}/ack/{self.task_index}", "1")
            decision = get_key_value(f"{self.key}/decision", timeout_ms=int((2 * self.ack_timeout + 1) * 1000))
        except Exception:  # the proposer is gone before deciding: nobody can save the step
            decision = json.dumps({"missing": [], "proposer_gone": True})
        self._decide(decision)
        if self.missing() is not None:
            time.sleep(ABANDON_DELAY_S)  # the main thread exits on its own when it is not blocked
            self.say_abandoned()
            self.end_process(PREEMPTED_EXIT_CODE)

    def _decide(self, decision: str) -> None:
        if self._decision is None:
            self._decision = decision
        self._decided.set()

    def propose(self, finished: int) -> None:
        """Propose the step, wait for every worker's acknowledgement and write the decision;
        when another worker proposed first, wait for its proposal instead."""
        try:
            set_key_value(self.key, str(self.proposal(finished)))
        except Exception:  # already set, by another worker's proposal (or the end of fit)
            self._received.wait(self.ack_timeout)
            return
        deadline = time.monotonic() + self.ack_timeout  # one bound for all: the grace is short
        missing = []
        for index in range(self.num_workers):
            left_ms = max(1, int((deadline - time.monotonic()) * 1000))
            try:
                get_key_value(f"{self.key}/ack/{index}", timeout_ms=left_ms)
            except Exception:
                missing.append(index)
        decision = COMMIT if not missing else json.dumps({"missing": missing})
        with contextlib.suppress(Exception):  # the coordination service is going away: this worker decides for itself
            set_key_value(f"{self.key}/decision", decision)
        self._decide(decision)
        self._received.wait(max(0.0, deadline - time.monotonic()))

    def agreed(self) -> int | None:
        value = self._value
        return int(value) if value is not None and value != "done" else None

    def missing(self) -> list[int] | None:
        """After an abandoned agreement, the workers that did not answer (empty when the
        proposer vanished before deciding); ``None`` otherwise."""
        if self._decision is None or self._decision == COMMIT:
            return None
        return list(json.loads(self._decision).get("missing", []))

    def confirmed(self) -> bool:
        """At the agreed step: whether every worker agreed (waits for the decision, bounded)."""
        self._decided.wait(2 * self.ack_timeout + 1)
        return self._decision == COMMIT

    def abandon_message(self, missing: list[int]) -> str:
        who = ", ".join(self.name(index) for index in missing) or "the worker that proposed the step"
        return f"{who} did not answer the agreement on the step to save within {self.ack_timeout:g} s"

    def say_abandoned(self) -> None:
        """Print, once per process, why no step is saved and what the next start does."""
        if not self._said.acquire(blocking=False):
            return
        print(
            f"autodist: preempted (SIGTERM), but {self.abandon_message(self.missing() or [])}: no worker saves "
            "a step; the newest save every worker has stays, and the next start resumes there. "
            f"Exiting with code {PREEMPTED_EXIT_CODE}.",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        """Wake every watcher: the fit is over."""
        with contextlib.suppress(Exception):  # a proposal, or another worker's "done", is there already
            set_key_value(self.key, "done")
