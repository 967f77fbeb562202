"""A failed Spark call says its cause in one line: Py4J's own first line names only the call."""

from __future__ import annotations

from spark_jobs.runner import failure_line


class JavaThrowable:
    def __init__(self, text: str, cause: JavaThrowable | None = None) -> None:
        self.text, self.cause = text, cause

    def getCause(self) -> JavaThrowable | None:
        return self.cause

    def toString(self) -> str:
        return self.text


class CallFailed(Exception):
    """As py4j's Py4JJavaError: its message is the call's, the Java exception hangs off it."""

    def __init__(self, message: str, java: JavaThrowable | None) -> None:
        super().__init__(message)
        self.java_exception = java


def test_the_innermost_java_cause_joins_the_first_line() -> None:
    root = JavaThrowable("java.security.NoSuchAlgorithmException: PBES2 SecretKeyFactory not available")
    chain = JavaThrowable("org.apache.kafka.common.KafkaException: Failed to create new KafkaAdminClient",
                          JavaThrowable("InvalidConfigurationException: Invalid PEM keystore configs", root))
    exc = CallFailed("An error occurred while calling o52.count.\n: org.apache...\n\tat ...", chain)
    assert failure_line(exc) == ("An error occurred while calling o52.count. (cause: java.security."
                                 "NoSuchAlgorithmException: PBES2 SecretKeyFactory not available)")


def test_a_task_failure_names_its_last_caused_by_and_a_plain_error_stays_as_it_is() -> None:
    text = ("Job aborted due to stage failure: Task 0 failed\norg.apache.kafka.common.KafkaException: x\n"
            "Caused by: a.B: first\n\tat z\nCaused by: c.D: the root\n\tat y")
    said = failure_line(CallFailed(text, None))
    assert said == "Job aborted due to stage failure: Task 0 failed (cause: c.D: the root)"
    assert failure_line(ValueError("one line")) == "one line"
    assert failure_line(ValueError()) == "ValueError"
