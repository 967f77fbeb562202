"""Loading a mirrorflow config as a container sees it: its ``${file:PATH}`` secrets and the files it names
(``ssl.ca.location``, ...) mounted where the deployment mounts them (compose's /run/secrets, a Kubernetes
Secret volume), used by the compose and Kubernetes checks.

The host has no such paths, so each ``${file:PATH}`` of the text, and each mounted path it names, is pointed at
a temporary file holding what the deployment would mount there (a relative ``${file:}`` PATH counts from the
config's folder in the container, as ``replicator.config`` reads it); a ``${file:}`` the deployment does not
mount is an error naming it, and so is a named file (the loader cannot read it), as in the container.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from replicator.config import Config, parse_config
from replicator.errors import ConfigError

_FILE_REF = re.compile(r"\$\{file:([^}]+)\}")


def file_refs(text: str, config_dir: PurePosixPath) -> list[PurePosixPath]:
    """The container paths of the text's ``${file:PATH}`` references."""
    return [config_dir / ref for ref in _FILE_REF.findall(text)]


def load_mounted(text: str, source: str, config_dir: PurePosixPath, environ: Mapping[str, str],
                 mounted: Mapping[PurePosixPath, str]) -> Config:
    """Parse ``text`` (named ``source`` in errors) with ``environ``, each ``${file:}`` read from ``mounted``
    (container path -> the file's contents)."""
    missing = [str(p) for p in file_refs(text, config_dir) if p not in mounted]
    if missing:
        raise ConfigError(f"{', '.join(missing)}: not mounted in the container", source)
    with tempfile.TemporaryDirectory(prefix="mounted-") as tmp:
        local = {path: Path(tmp) / str(index) for index, path in enumerate(mounted)}
        for path, target in local.items():
            target.write_text(mounted[path], encoding="utf-8")

        def point(match: re.Match[str]) -> str:
            return "${file:" + str(local[config_dir / match.group(1)]) + "}"

        pointed = _FILE_REF.sub(point, text)
        for path in sorted(local, key=lambda p: -len(str(p))):  # a file named as a value (ssl.ca.location: PATH)
            pointed = re.sub(rf"(?<![\w/.-]){re.escape(str(path))}(?![\w/.-])", str(local[path]), pointed)
        return parse_config(pointed, source, environ)
