"""Spark's and Iceberg's failures to reach a table's store, told apart from the query's own mistakes."""

from __future__ import annotations

from pyspark.errors.exceptions.base import PySparkException

from zskip.iceberg.spark_errors import storage_failure


def test_a_missing_bucket_the_sdk_does_not_name_is_the_tables_bucket() -> None:
    failure = storage_failure(PySparkException(message="Failed to refresh the table: NoSuchBucket (Service: S3)"))
    assert failure is not None
    assert str(failure).startswith("the table's bucket does not exist") and "'?'" not in str(failure)


def test_a_named_bucket_is_named() -> None:
    failure = storage_failure(PySparkException(message="NoSuchBucket reading s3://sales-lake/db/t/metadata/v3.json"))
    assert failure is not None and str(failure).startswith("bucket 'sales-lake' does not exist")


def test_a_403_status_is_refused_credentials() -> None:
    failure = storage_failure(PySparkException(message="S3Exception: (Service: S3, Status Code: 403, Request ID: x)"))
    assert failure is not None and "refused the credentials" in str(failure)


def test_a_line_number_403_in_a_stack_trace_is_not_a_storage_failure() -> None:
    text = "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `zz` cannot be resolved.\n\tat Analyzer.scala:403)"
    assert storage_failure(PySparkException(message=text, errorClass="UNRESOLVED_COLUMN.WITH_SUGGESTION")) is None
    assert storage_failure(PySparkException(message="boom\n\tat Foo.java:403)")) is None


def test_zskips_own_line_raised_in_a_spark_task_is_the_whole_message() -> None:
    text = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times\n"
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/zskip/indexing/jobs.py", line 79, in task\n'
        "zskip.errors.StorageError: http://127.0.0.1:9 kept failing (SLOW_DOWN) on s3://lake/t/data/f.parquet "
        "after 5 retries: AWS Error SLOW_DOWN during GetObject operation\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:572)\n"
    )
    failure = storage_failure(PySparkException(message=text))
    assert failure is not None and str(failure).startswith("http://127.0.0.1:9 kept failing (SLOW_DOWN) on s3://lake/")
    assert "\n" not in str(failure) and "PythonRDD" not in str(failure)


def test_a_store_that_kept_throttling_the_jvm_client_is_named_with_the_setting_to_raise() -> None:
    text = "S3Exception: Please reduce your request rate. (Service: S3, Status Code: 503) reading s3://lake/db/t/x.avro"
    failure = storage_failure(PySparkException(message=text))
    assert failure is not None and "kept failing (SlowDown)" in str(failure) and "s3.retry.num-retries" in str(failure)
