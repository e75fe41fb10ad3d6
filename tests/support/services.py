"""The test services' addresses, as ``scripts/test.sh`` exports them."""

from __future__ import annotations

import os

import pytest


def service(var: str, script: str) -> str:
    """Return the value of ``var``; fail the test (never skip) with how to start ``script``."""
    value = os.environ.get(var)
    if not value:
        pytest.fail(f"{var} is not set: start the service with 'bash scripts/services/{script} start' "
                    f"and 'eval \"$(bash scripts/services/{script} env)\"' (scripts/test.sh does both)")
    return value


def delete_bucket(client, bucket: str) -> None:
    """Empty and delete an S3 ``bucket`` through boto3 ``client`` (test cleanup)."""
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", ()):
            client.delete_object(Bucket=bucket, Key=item["Key"])
    client.delete_bucket(Bucket=bucket)
