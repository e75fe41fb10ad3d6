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


def new_s3_bucket(monkeypatch) -> tuple[str, str, object]:
    """Create an empty bucket on the test S3 server, with the environment the CLI reaches it
    through (moto's dummy keys, ``AWS_ENDPOINT_URL``) set on ``monkeypatch``.

    Returns:
        ``(endpoint, bucket, client)``; delete the bucket with :func:`delete_bucket`.
    """
    import uuid

    import boto3

    endpoint = service("RAGTUNE_TEST_S3_ENDPOINT", "moto.sh")
    for name, value in {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client("s3", endpoint_url=endpoint)
    bucket = f"ragtune-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=bucket)
    return endpoint, bucket, client
