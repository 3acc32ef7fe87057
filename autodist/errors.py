"""Errors and warnings that autodist raises on purpose.

Every error autodist raises deliberately is an :class:`AutodistError`. Each message says what
happened, what was expected, and how to fix it, and quotes the values it received.

Example:
    >>> import autodist
    >>> try:
    ...     autodist.plan(autodist.HardwareSnapshot.cpu_only(), batch_size=0)
    ... except autodist.AutodistError as err:
    ...     print(type(err).__name__)
    BatchSizeError
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "AutodistError",
    "AutodistWarning",
    "BackupFolderInUseError",
    "BatchSizeError",
    "ClusterConfigError",
    "CollectiveMismatchError",
    "ModelPlacementError",
    "PeerError",
    "ReplicaContextError",
    "RuntimeAlreadyStartedError",
    "StrategyUnavailableError",
    "UnsupportedVersionError",
]


class AutodistError(Exception):
    """Base class of every error autodist raises on purpose."""


class ClusterConfigError(AutodistError, ValueError):
    """The cluster definition (TF_CONFIG, SLURM, ...) is malformed or inconsistent."""


class StrategyUnavailableError(AutodistError):
    """A strategy was forced, but this machine or cluster cannot run it."""


class ArgumentError(AutodistError, ValueError, TypeError):
    """An argument of autodist's API, the command line or the launcher has the wrong type or
    value. It is a ``TypeError`` and a ``ValueError`` too, what Python and ``model.fit`` raise for
    the same mistakes, so code that catches those still does."""


class BatchSizeError(ArgumentError):
    """The batch size cannot be used (not a positive integer, or unknown where it is needed)."""


class ModelPlacementError(AutodistError):
    """The model cannot be moved into, or built inside, the strategy's scope."""


class ReplicaContextError(AutodistError, ValueError):
    """A Keras object made under the strategy autodist made current (a model's, an optimizer's or a
    metric's variable) is read outside the replica context: a custom training step written for one
    device (``tape.gradient``, an optimizer's ``apply``) run as it is on several replicas. The
    message names the variable and the fix; TensorFlow's ``ValueError`` is its cause."""

    # Exception's own constructor: TensorFlow's AutoGraph then raises this class again, with the
    # user's line added to the message, where it raises a StagingError for any other constructor.
    __init__ = Exception.__init__


class RuntimeAlreadyStartedError(AutodistError, RuntimeError):
    """The TensorFlow runtime started before autodist could configure it."""


class UnsupportedVersionError(AutodistError):
    """The installed TensorFlow, Keras or tf_keras is older than the releases autodist supports."""


class AutodistWarning(UserWarning):
    """Something autodist changed on the user's behalf (a batch size, a compile setting)."""


class PeerError(AutodistError, RuntimeError):
    """A worker of the cluster stopped, or never came, while this one needed it."""


class BackupFolderInUseError(AutodistError, RuntimeError):
    """Another live process holds this task's backup folder (a pod being replaced while its
    predecessor still runs, or the same script started twice), and did not let go in time."""


#: ``BaseException``'s own ``__cause__`` slot, under the property that :class:`CollectiveMismatchError` puts over it.
_CAUSE = BaseException.__dict__["__cause__"]


class CollectiveMismatchError(AutodistError, RuntimeError):
    """The workers of a multi-worker job did not run the same collective ops: most often work
    done on one worker only (the chief) under the multi-worker strategy, which the others never
    joined. The message names the likely cause and the fix.

    TensorFlow's error is its ``__cause__``, also after TensorFlow's and Keras's traceback
    filters re-raise it ``from None`` (it is raised inside ``tf.Variable`` and Keras layers):
    ``original`` keeps it, and ``__cause__`` falls back to it.
    """

    def __init__(self, message: str, original: BaseException | None = None) -> None:
        super().__init__(message)
        self.original = original

    @property  # type: ignore[override]
    def __cause__(self) -> BaseException | None:
        return _CAUSE.__get__(self) or self.original

    @__cause__.setter
    def __cause__(self, cause: BaseException | None) -> None:
        _CAUSE.__set__(self, cause)
