"""The one error hierarchy of MirrorFlow.

Every error a user can cause or meet derives from :class:`MirrorFlowError`; the CLI
turns them into one readable line and an exit code, never a traceback.
"""

from __future__ import annotations


class MirrorFlowError(Exception):
    """Root of every error MirrorFlow raises on purpose."""

    exit_code = 1
    retriable = False


class ConfigError(MirrorFlowError):
    """The configuration (file or arguments) is wrong; nothing was changed."""

    exit_code = 2

    def __init__(self, problems: list[str] | str, source: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        prefix = f"{source}: " if source else ""
        super().__init__("\n".join(prefix + problem for problem in self.problems))


class UsageError(MirrorFlowError):
    """A command was called with arguments that cannot work."""

    exit_code = 2


class ClusterError(MirrorFlowError):
    """A Kafka cluster could not be reached, started or stopped."""

    def __init__(self, message: str, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable


class StateStoreError(MirrorFlowError):
    """The state database could not be opened, migrated, read or written.

    ``retriable``: it may answer if asked again (down, restarting, locked by another
    writer); otherwise the URL or the database itself must change first.
    """

    def __init__(self, message: str, *, retriable: bool = False, exit_code: int = 1) -> None:
        super().__init__(message)
        self.retriable, self.exit_code = retriable, exit_code
