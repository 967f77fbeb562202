"""The Dockerfile read as Docker reads it (stages, their instructions) and checked against pom.xml and
``replicator.jars`` (used by tests/unit/dev/test_dockerfile.py and the Kubernetes checks).

The image must carry Spark's Kafka connector jars where ``replicator.jars`` looks for them
(``$MIRRORFLOW_JARS/spark``, else ``<repo>/.cache/jars/spark``), fetched by a Maven stage that runs the pom's
``spark`` profile, since .dockerignore keeps the host's .cache/ out of the build.
"""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from replicator.jars import JARS_ENV
from tests.compose_checks import APP_DIR, POM_NS, image_repo_and_tag

DOCKERFILE = "Dockerfile"
JARS_PROFILE = "spark"  # the pom profile of Spark's Kafka connector (replicator.jars.spark_kafka_jars)
MAVEN_IMAGE = "maven"
# Official maven image tags name Maven's version and the JDK: 3.9-eclipse-temurin-17, 3.9.9-eclipse-temurin-17.
_MAVEN_TAG = re.compile(r"^\d+\.\d+(\.\d+)?-eclipse-temurin-(\d+)$")
JAVA_MAJOR = "17"  # the project's Java (README, STACK-NOTES): the jars are fetched by the same JDK


@dataclass(frozen=True)
class Stage:
    """One ``FROM`` of the Dockerfile and what follows it: (INSTRUCTION, arguments) pairs."""

    base: str
    name: str | None
    instructions: tuple[tuple[str, str], ...]

    def all(self, instruction: str) -> list[str]:
        """The arguments of every ``instruction`` of the stage."""
        return [args for kind, args in self.instructions if kind == instruction]

    def workdir(self) -> PurePosixPath:
        """The stage's last WORKDIR (/ when none)."""
        return PurePosixPath((self.all("WORKDIR") or ["/"])[-1])

    def env(self) -> dict[str, str]:
        """Its ENV settings (``ENV A=1 B=2`` form)."""
        return {k: v for args in self.all("ENV") for k, _, v in (w.partition("=") for w in shlex.split(args))}


def stages(text: str) -> list[Stage]:
    """The Dockerfile's stages, line continuations joined, comments and parser directives dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    found: list[Stage] = []
    for line in filter(None, (raw.strip() for raw in joined.splitlines())):
        kind, _, args = line.partition(" ")
        if kind.upper() == "FROM":
            words = args.split()
            name = words[2] if len(words) > 2 and words[1].upper() == "AS" else None
            found.append(Stage(words[0], name, ()))
        elif found:
            last = found[-1]
            found[-1] = Stage(last.base, last.name, (*last.instructions, (kind.upper(), args.strip())))
    return found


def pom_output_dir(repo: Path, profile: str, basedir: PurePosixPath) -> PurePosixPath | None:
    """The folder the pom's ``profile`` copies its dependencies to, for a pom in ``basedir``."""
    root = ET.parse(repo / "pom.xml").getroot()
    props = {p.tag.split("}")[1]: (p.text or "") for p in root.findall("m:properties/*", POM_NS)}
    for node in root.findall("m:profiles/m:profile", POM_NS):
        if node.findtext("m:id", namespaces=POM_NS) == profile:
            props |= {p.tag.split("}")[1]: (p.text or "") for p in node.findall("m:properties/*", POM_NS)}
            return PurePosixPath(_expand(props.get("outputDirectory", ""), props, basedir))
    return None


def _expand(value: str, props: dict[str, str], basedir: PurePosixPath) -> str:
    for _ in range(5):  # properties may name properties
        value = re.sub(r"\$\{([\w.]+)\}", lambda m: str(basedir) if m.group(1) == "project.basedir"
                       else props.get(m.group(1), m.group(0)), value)
    return value


def image_jars_dir(final: Stage) -> PurePosixPath:
    """Where ``replicator.jars`` looks in the image: ``$MIRRORFLOW_JARS``, else the app's ``.cache/jars``."""
    return PurePosixPath(final.env().get(JARS_ENV) or APP_DIR / ".cache" / "jars")


def jars_stage_problems(text: str, repo: Path) -> list[str]:
    """A Maven stage runs the pom's spark profile, and the final stage copies its output where the code looks."""
    found = stages(text)
    maven = [s for s in found if image_repo_and_tag(s.base)[0] == MAVEN_IMAGE]
    if not maven:
        return [f"{DOCKERFILE}: no {MAVEN_IMAGE} stage fetches Spark's Kafka connector jars"]
    stage, problems = maven[0], []
    tag = image_repo_and_tag(stage.base)[1]
    form = _MAVEN_TAG.match(tag)
    if not form or form.group(2) != JAVA_MAJOR:
        problems.append(f"{DOCKERFILE}: {stage.base}: not an official maven tag of Java {JAVA_MAJOR} "
                        f"(like maven:3.9-eclipse-temurin-{JAVA_MAJOR})")
    if not any(args.split()[:1] == ["pom.xml"] for args in stage.all("COPY")):
        problems.append(f"{DOCKERFILE}: stage {stage.name}: does not copy pom.xml")
    runs = [shlex.split(args.split(" ", 1)[-1] if args.startswith("--mount") else args) for args in stage.all("RUN")]
    if not any("mvn" in run and _profiles(run) == [JARS_PROFILE] and "dependency:copy-dependencies" in run
               for run in runs):
        problems.append(f"{DOCKERFILE}: stage {stage.name}: no `mvn -P {JARS_PROFILE} dependency:copy-dependencies`")
    output = pom_output_dir(repo, JARS_PROFILE, stage.workdir())
    if output is None:
        return [*problems, f"pom.xml: no profile {JARS_PROFILE!r}"]
    expected = image_jars_dir(found[-1]) / JARS_PROFILE
    copies = [args.split()[1:] for args in found[-1].all("COPY") if args.startswith(f"--from={stage.name} ")]
    if [str(output), str(expected)] not in copies:
        problems.append(f"{DOCKERFILE}: the final stage copies {copies or 'nothing'} from {stage.name}; the jars "
                        f"are at {output} there and replicator.jars looks in {expected}")
    return problems


def _profiles(run: list[str]) -> list[str]:
    """The ``-P`` profiles of a mvn command line."""
    out = []
    for index, word in enumerate(run):
        if word == "-P" and index + 1 < len(run):
            out += run[index + 1].split(",")
        elif word.startswith("-P") and len(word) > 2:
            out += word[2:].split(",")
    return out
