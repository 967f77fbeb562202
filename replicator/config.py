"""``mirrorflow.yaml``: load, validate and expose the configuration as frozen objects.

Every problem is reported as ``<key path>: <problem>`` (for example
``routes[1].source: unknown cluster 'dr' (known: backup, primary)``) and raised as
one :class:`~replicator.errors.ConfigError`; the CLI prints it and exits 2.
The environment is read only by the caller (``environ`` argument), never at import.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from replicator.client_properties import (
    KeyProblem,
    client_key_problems,
    commit_interval_problems,
    properties_of,
    unreadable_files,
)
from replicator.config_refs import expand_env, login_files, read_secret_file
from replicator.domain.client_rules import CONSUMER_FIXED, PRODUCER_FIXED, refused_overrides
from replicator.domain.group_filter import DEFAULT_EXCLUDED_GROUPS, DEFAULT_GROUPS, GroupFilter
from replicator.domain.heartbeat import heartbeat_patterns
from replicator.domain.replication_policy import ReplicationPolicy, policy_for
from replicator.domain.secrets import redact
from replicator.domain.sla import SlaThresholds
from replicator.domain.topic_filter import TopicFilter
from replicator.errors import ConfigError

CONFIG_ENV = "MIRRORFLOW_CONFIG"
DEFAULT_CONFIG_PATH = Path("mirrorflow.yaml")
DEFAULT_STATE_URL = "sqlite:///.mirrorflow/state.db"

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _regexes(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """``patterns`` unchanged when each compiles; else the first bad one, by index."""
    for index, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise KeyProblem(f"[{index}]", f"invalid regex {pattern!r}: {exc}") from exc
    return patterns


class ClusterConfig(_Frozen):
    """A named Kafka cluster and its librdkafka client properties."""

    name: str
    properties: Mapping[str, str]
    # The SASL login properties whose whole value is a ``${file:PATH}`` (key -> the file): re-read when the
    # cluster refuses the login, so a password rotated in its file reaches a running worker.
    login_files: Mapping[str, str] = Field(default_factory=dict, exclude=True)

    @property
    def bootstrap_servers(self) -> str:
        """The ``bootstrap.servers`` list of this cluster."""
        return self.properties["bootstrap.servers"]

    def client_properties(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        """The librdkafka configuration for a client of this cluster (the one conversion)."""
        return {**self.properties, **(overrides or {})}

    def redacted(self) -> dict[str, object]:
        """The properties with secrets masked, safe for logs and output."""
        return redact(self.properties)

    def login(self) -> tuple[str, str]:
        """``(sasl.username, sasl.password)`` as configured (empty when not set)."""
        return self.properties.get("sasl.username", ""), self.properties.get("sasl.password", "")

    def reread_login(self) -> tuple[str, str]:
        """The SASL login with the values of ``login_files`` read again now; ConfigError naming the key and the
        file (never a value) when one cannot be read."""
        user, password = self.login()
        values = {key: read_secret_file(Path(path), f"clusters.{self.name}.{key}")
                  for key, path in self.login_files.items()}
        return values.get("sasl.username", user), values.get("sasl.password", password)


class MappingPolicy(_Frozen):
    """Explicit source → target topic names (``merge``: several sources may share one target)."""

    mapping: Mapping[str, str]
    merge: bool = False


_PRINCIPAL = r"^[A-Za-z][A-Za-z0-9_-]*:.+$"


def _named_principals(principals: tuple[str, ...], example: str) -> tuple[str, ...]:
    """Each a principal by name (``User:*`` names no one: an ACL for it would cover everyone)."""
    for index, value in enumerate(principals):
        if not re.match(_PRINCIPAL, value) or value.endswith(":*"):
            raise KeyProblem(f"[{index}]", f"{value!r} is not a principal like {example!r}")
    return principals


class SyncSettings(_Frozen):
    """``routes[].sync``: how ``mirrorflow sync`` and the sync DAGs keep the target in step."""

    discovery_interval: int = Field(default=5, ge=1)  # minutes between topic discoveries
    exclude_configs: tuple[str, ...] = ()  # topic config names/regexes never copied (besides MM2's)
    acls: bool = True
    principals: Mapping[str, str] = Field(default_factory=dict)  # source principal -> target principal
    grant_write: bool = False  # copy ALLOW WRITE/ALL onto replicas as they are
    delete_topics: bool = False  # delete replicas whose source topic is gone
    # Deny WRITE on the replicas to every principal but ``writers`` (the replicator's, on the target): nobody
    # writes into a replica by mistake. A failover lifts it for the topics it moves.
    read_only: bool = False
    writers: tuple[str, ...] = ()

    @field_validator("exclude_configs", mode="after")
    @classmethod
    def _valid_exclusions(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        return _regexes(patterns)

    @field_validator("writers", mode="after")
    @classmethod
    def _valid_writers(cls, writers: tuple[str, ...]) -> tuple[str, ...]:
        return _named_principals(writers, "User:mirrorflow")

    @field_validator("principals", mode="after")
    @classmethod
    def _valid_principals(cls, principals: Mapping[str, str]) -> Mapping[str, str]:
        for source, target in principals.items():
            for value in (source, target):
                if not re.match(_PRINCIPAL, value):
                    raise KeyProblem(f".{source}", f"{value!r} is not a principal like 'User:alice'")
        return principals


class CheckpointSettings(_Frozen):
    """``routes[].checkpoints``: which source groups get checkpoints, how often, written where."""

    groups: tuple[str, ...] = DEFAULT_GROUPS  # group ids/regexes (whole id) to checkpoint
    exclude_groups: tuple[str, ...] = DEFAULT_EXCLUDED_GROUPS  # replaces the defaults when given
    interval: int = Field(default=60, ge=1)  # seconds between checkpoint runs of the DAG
    write_target_groups: bool = False  # commit translated offsets into the target's idle groups

    @field_validator("groups", "exclude_groups", mode="after")
    @classmethod
    def _valid_group_regexes(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        return _regexes(patterns)

    @property
    def group_filter(self) -> GroupFilter:
        """The include/exclude filter of the route's consumer groups."""
        return GroupFilter(self.groups, self.exclude_groups)


class SlaSettings(_Frozen):
    """``routes[].sla``: heartbeats and the limits the SLA DAG alerts on (once per breach and recovery)."""

    heartbeats: bool = True  # workers write mirrorflow-heartbeats.<route> on the source; the route copies it
    heartbeat_interval: float = Field(default=5.0, gt=0)  # seconds between heartbeats
    heartbeat_age: float = Field(default=30.0, gt=0)  # seconds: newest heartbeat on the target older = breach
    max_lag: int = Field(default=100_000, ge=0)  # records not yet copied, all partitions together
    audit_must_be_clean: bool = True  # the latest audit found no missing record
    webhook: SecretStr | None = None  # alerts are POSTed here as JSON (the URL may hold a token)

    @field_validator("webhook", mode="after")
    @classmethod
    def _http_url(cls, url: SecretStr | None) -> SecretStr | None:
        if url is not None and not re.match(r"^https?://[^\s/]+", url.get_secret_value()):
            raise ValueError("must be an http:// or https:// URL")
        return url

    @property
    def thresholds(self) -> SlaThresholds:
        """The limits, as the pure SLA logic takes them."""
        return SlaThresholds(self.heartbeat_age, self.max_lag, self.audit_must_be_clean, self.heartbeats)


class TransactionSettings(_Frozen):
    """``routes[].transactions``: how an exactly-once route groups its records into transactions."""

    # A transaction commits this often (ms) or at this many records, whichever comes first. Its commit is
    # the floor of the route's latency; a shorter interval costs a commit (and a marker per partition).
    interval_ms: int = Field(default=100, ge=1, le=60_000)
    max_records: int = Field(default=100_000, ge=1)


class FenceSettings(_Frozen):
    """``routes[].fence``: what ``failover --fence`` spares and how long it watches for writes past it."""

    # Principals still allowed to write the route's source topics once fenced (an admin, a tool). The
    # replicator reads the source, it needs no exemption. None: the fence is one DENY for User:* per topic.
    exempt: tuple[str, ...] = ()
    watch: float = Field(default=10.0, gt=0, le=600)  # seconds the source's ends must stay still

    @field_validator("exempt", mode="after")
    @classmethod
    def _valid_principals(cls, principals: tuple[str, ...]) -> tuple[str, ...]:
        return _named_principals(principals, "User:admin")


class RouteConfig(_Frozen):
    """One replication flow ``source → target``."""

    name: str = Field(pattern=_NAME)
    source: str
    target: str
    topics: tuple[str, ...] = Field(min_length=1)
    exclude: tuple[str, ...] = ()
    include_internal: bool = False
    policy: Literal["prefix", "identity"] | MappingPolicy = "prefix"
    separator: str = Field(default=".", min_length=1)
    guarantee: Literal["at-least-once", "exactly-once"] = "at-least-once"
    transactions: TransactionSettings = TransactionSettings()
    start: Literal["earliest", "latest"] | dt.datetime = "earliest"
    on_data_loss: Literal["continue", "fail"] = "continue"
    # Bytes (keys and values) per second the route copies at most, split among its workers by their share of
    # its partitions; the source is paused while over it, the loop goes on. None: no limit.
    max_bytes_per_second: int | None = Field(default=None, ge=1024)
    # Seconds a partition may stay unfetched while the source's end is past it before it is called stuck
    # (logged, counted, re-sought from its committed offset; stuck again: given back to the group).
    stuck_after: float = Field(default=120.0, gt=0)
    # A record the target refuses (larger than its topic accepts): stop the route
    # naming it (default), or write it to the dead-letter topic on the target and go on.
    on_refused_record: Literal["fail", "dead-letter"] = "fail"
    dead_letter_topic: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,249}$")
    consumer: Mapping[str, str] = Field(default_factory=dict)
    producer: Mapping[str, str] = Field(default_factory=dict)
    # Skip records born on the target (origin header) and stamp the origin of others.
    # Off only to restore a cluster's own records onto it (failback resync).
    loop_check: bool = True
    sync: SyncSettings = SyncSettings()
    checkpoints: CheckpointSettings = CheckpointSettings()
    sla: SlaSettings = SlaSettings()
    fence: FenceSettings = FenceSettings()

    @field_validator("topics", "exclude", mode="after")
    @classmethod
    def _valid_regexes(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        return _regexes(patterns)

    @field_validator("policy", mode="before")
    @classmethod
    def _known_policy(cls, value: Any) -> Any:
        if value in ("prefix", "identity") or (isinstance(value, Mapping) and "mapping" in value):
            return value
        raise ValueError(
            f"unknown policy {value!r} (expected prefix, identity or {{mapping: {{source: target}}}})"
        )

    @field_validator("consumer", "producer", mode="before")
    @classmethod
    def _client_overrides(cls, value: Any, info: ValidationInfo) -> dict[str, str]:
        properties = properties_of(value, "")
        fixed = CONSUMER_FIXED if info.field_name == "consumer" else PRODUCER_FIXED
        for key, why in refused_overrides(properties, fixed):
            raise KeyProblem(f".{key}", why)
        for key, problem in commit_interval_problems(properties):
            raise KeyProblem(f".{key}", problem)
        return properties

    @property
    def topic_filter(self) -> TopicFilter:
        """The include/exclude filter of this route: its own heartbeat topic (unless ``sla.heartbeats``
        is off), never another route's."""
        include, exclude = heartbeat_patterns(self.name, self.sla.heartbeats)
        return TopicFilter(self.topics + include, self.exclude + exclude, self.include_internal)


class StateConfig(_Frozen):
    """Where the state database lives (any SQLAlchemy URL)."""

    url: str = DEFAULT_STATE_URL


class Config(_Frozen):
    """The whole validated ``mirrorflow.yaml``."""

    clusters: Mapping[str, ClusterConfig] = Field(min_length=1)
    routes: tuple[RouteConfig, ...] = ()
    state: StateConfig = StateConfig()

    @field_validator("clusters", mode="before")
    @classmethod
    def _clusters(cls, raw: Any) -> Any:
        if not isinstance(raw, Mapping):
            raise ValueError("must be a mapping of cluster name to client properties")
        clusters = {}
        for name, props in raw.items():
            if not re.match(_NAME, str(name)):
                raise KeyProblem(f".{name}", "cluster names use letters, digits, '.', '_', '-'")
            properties = properties_of(props, f".{name}")
            for key, why in refused_overrides(properties, CONSUMER_FIXED, PRODUCER_FIXED):
                raise KeyProblem(f".{name}.{key}", why)
            for key, problem in commit_interval_problems(properties):
                raise KeyProblem(f".{name}.{key}", problem)
            if not properties.get("bootstrap.servers", "").strip():
                raise KeyProblem(f".{name}", "missing required key 'bootstrap.servers'")
            for key, problem in unreadable_files(properties):
                raise KeyProblem(f".{name}.{key}", problem)
            for key, problem in client_key_problems(properties):
                raise KeyProblem(f".{name}.{key}", problem)
            clusters[str(name)] = {"name": str(name), "properties": properties}
        return clusters

    @model_validator(mode="after")
    def _routes_agree(self) -> Config:
        problems = []
        seen: set[str] = set()
        for index, route in enumerate(self.routes):
            where = f"routes[{index}]"
            if route.name in seen:
                problems.append(f"{where}.name: duplicate route name {route.name!r}")
            seen.add(route.name)
            for side in ("source", "target"):
                cluster = getattr(route, side)
                if cluster not in self.clusters:
                    known = ", ".join(sorted(self.clusters))
                    problems.append(f"{where}.{side}: unknown cluster {cluster!r} (known: {known})")
            if route.source == route.target and route.policy == "identity":
                problems.append(
                    f"{where}.policy: identity would replicate {route.source!r} onto itself"
                )
            problems.extend(f"{where}.{problem}" for problem in _guarantee_problems(route))
        if problems:
            raise ConfigError(problems)
        return self

    def route(self, name: str) -> RouteConfig:
        """The route called ``name``; a ConfigError naming the known routes otherwise."""
        for route in self.routes:
            if route.name == name:
                return route
        known = ", ".join(r.name for r in self.routes) or "none"
        raise ConfigError(f"unknown route {name!r} (known: {known})")

    def policy(self, route: RouteConfig) -> ReplicationPolicy:
        """The naming policy of ``route`` (the known clusters tell prefixes apart)."""
        if isinstance(route.policy, str):
            return policy_for(route.policy, route.separator, self.clusters)
        return policy_for(route.policy.mapping, route.separator, self.clusters, route.policy.merge)

    def cluster(self, name: str) -> ClusterConfig:
        """The cluster called ``name``; a ConfigError naming the known clusters otherwise."""
        if name not in self.clusters:
            known = ", ".join(sorted(self.clusters))
            raise ConfigError(f"unknown cluster {name!r} (known: {known})")
        return self.clusters[name]


def _guarantee_problems(route: RouteConfig) -> list[str]:
    """Settings an at-least-once route would ignore."""
    if route.guarantee == "at-least-once":
        if "transactions" in route.model_fields_set:
            return ["transactions: only an exactly-once route has transactions (guarantee: exactly-once); "
                    "remove it"]
        return []
    return []


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(error: Mapping[str, Any]) -> str:
    loc = tuple(p for p in error["loc"] if not str(p).startswith(("function-", "literal[")))
    path = _location(loc)
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, KeyProblem):
        return f"{path}{cause.path}: {cause.problem}"
    if isinstance(cause, ConfigError):
        return "\n".join(cause.problems)
    kind = error["type"]
    message = {
        "missing": "missing required key",
        "extra_forbidden": "unknown key",
    }.get(kind, str(error["msg"]).removeprefix("Value error, "))
    return f"{path}: {message}" if path else message



def _with_login_files(config: Config, files: Mapping[str, Mapping[str, str]]) -> Config:
    if not files:
        return config
    clusters = {name: cluster.model_copy(update={"login_files": dict(files.get(name, {}))})
                for name, cluster in config.clusters.items()}
    return config.model_copy(update={"clusters": clusters})


def parse_config(text: str, source: str = "mirrorflow.yaml", environ: Mapping[str, str] = {}) -> Config:
    """Validate the YAML ``text``; ``source`` names it in error messages."""
    try:
        raw = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise ConfigError(f"YAML syntax error: {exc.problem}", where) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"YAML syntax error: {exc}", source) from None
    if not isinstance(raw, Mapping):
        raise ConfigError("the file must be a YAML mapping with a 'clusters' key", source)
    try:
        base = Path(source).parent
        return _with_login_files(Config.model_validate(expand_env(raw, environ, "", base)), login_files(raw, base))
    except ConfigError as exc:
        raise ConfigError(exc.problems, source) from None
    except ValidationError as exc:
        problems = list(dict.fromkeys(_describe(e) for e in exc.errors(include_url=False)))
        raise ConfigError(problems, source) from None


def resolve_config_path(path: str | Path | None, environ: Mapping[str, str]) -> Path:
    """``--config`` first, then ``$MIRRORFLOW_CONFIG``, then ``./mirrorflow.yaml``."""
    chosen = path or environ.get(CONFIG_ENV) or DEFAULT_CONFIG_PATH
    return Path(chosen)


def load_config(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read and validate the configuration file (see :func:`resolve_config_path`)."""
    env = os.environ if environ is None else environ
    resolved = resolve_config_path(path, env)
    try:
        text = resolved.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"config file not found: {resolved} (pass --config or set {CONFIG_ENV})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {resolved}: {exc.strerror}") from None
    return parse_config(text, str(resolved), env)


ConfigRef = Config | str | os.PathLike[str] | None


def as_config(config: ConfigRef) -> Config:
    """``config`` itself, or the file it names, or (None) ``$MIRRORFLOW_CONFIG`` / ``./mirrorflow.yaml``.

    What the functions the DAGs call take: a task passes a path or nothing, the CLI a Config.
    """
    if isinstance(config, Config):
        return config
    return load_config(None if config is None else Path(config), os.environ)
