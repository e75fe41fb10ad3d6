"""``open_files`` address parsing and ``report_store``; nothing here contacts a service."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.reports import BlobFiles, LocalFiles, ReportStore, S3Files, open_files, report_store

AZURITE = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
    "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
)
SAS = "sv=2024-11-04&ss=b&srt=co&sp=rwl&se=2030-01-01T00:00:00Z&sig=SECRETSIGNATURE%3D"


@pytest.mark.parametrize("address", ["ragtune-out/reports", "/data/reports", "./x", "C:\\reports", "reports dir"])
def test_plain_paths_are_local_folders(address):
    files = open_files(address)
    assert isinstance(files, LocalFiles)
    assert files.root == Path(address)


def test_path_objects_and_file_urls_are_local_folders(tmp_path):
    assert open_files(tmp_path).root == tmp_path
    assert open_files("file:///data/my%20reports").root == Path("/data/my reports")
    assert open_files("file://localhost/data").root == Path("/data")
    with pytest.raises(ConfigError, match="another host"):
        open_files("file://server/share")


@pytest.mark.parametrize(
    ("address", "bucket", "prefix", "root"),
    [
        ("s3://my-bucket/team/reports", "my-bucket", "team/reports", "s3://my-bucket/team/reports"),
        ("s3://my-bucket/team/reports/", "my-bucket", "team/reports", "s3://my-bucket/team/reports"),
        ("s3://my-bucket", "my-bucket", "", "s3://my-bucket"),
        ("s3://my-bucket/", "my-bucket", "", "s3://my-bucket"),
        ("S3://my-bucket/a%20b", "my-bucket", "a b", "s3://my-bucket/a b"),
    ],
)
def test_s3_addresses(address, bucket, prefix, root):
    files = open_files(address, endpoint_url="http://127.0.0.1:5055", region="eu-west-1")
    assert isinstance(files, S3Files)
    assert (files.bucket, files.prefix, files.root) == (bucket, prefix, root)
    assert files._client is None  # no client (and no boto3 import) until the first request


@pytest.mark.parametrize("address", ["s3://", "s3:///prefix"])
def test_s3_without_bucket_is_refused(address):
    with pytest.raises(ConfigError, match="needs a bucket"):
        open_files(address)


@pytest.mark.parametrize(
    ("address", "container", "prefix", "root"),
    [
        ("https://acct.blob.core.windows.net/reports/team/a", "reports", "team/a",
         "https://acct.blob.core.windows.net/reports/team/a"),
        ("https://acct.blob.core.windows.net/reports", "reports", "", "https://acct.blob.core.windows.net/reports"),
        ("https://acct.blob.core.windows.net/reports/", "reports", "", "https://acct.blob.core.windows.net/reports"),
        ("https://acct.blob.core.chinacloudapi.cn/c/p%20q", "c", "p q", "https://acct.blob.core.chinacloudapi.cn/c/p q"),
    ],
)
def test_blob_urls_with_a_credential(address, container, prefix, root):
    files = open_files(address, credential="an-account-key")
    assert isinstance(files, BlobFiles)
    assert (files.container, files.prefix, files.root) == (container, prefix, root)


def test_blob_url_without_credential_uses_default_azure_credential_lazily():
    files = open_files("https://acct.blob.core.windows.net/reports/p")
    assert isinstance(files, BlobFiles)
    assert files._account_url == "https://acct.blob.core.windows.net" and files._credential is None
    assert files._service is None  # DefaultAzureCredential is created on first use only


def test_blob_url_with_sas_keeps_it_out_of_names_and_errors():
    files = open_files(f"https://acct.blob.core.windows.net/reports/p?{SAS}")
    assert isinstance(files, BlobFiles)
    assert files.root == "https://acct.blob.core.windows.net/reports/p"
    assert "SECRET" not in repr(files)
    with pytest.raises(ConfigError) as info:
        open_files(f"https://acct.blob.core.windows.net/reports/p?{SAS}", credential="key")
    assert "SECRET" not in str(info.value)
    with pytest.raises(ConfigError) as info:
        open_files(f"gs://bucket/p?{SAS}")
    assert "SECRET" not in str(info.value)


def test_azurite_path_style_url_with_a_connection_string():
    files = open_files("http://127.0.0.1:10000/devstoreaccount1/reports/team", connection_string=AZURITE)
    assert isinstance(files, BlobFiles)
    assert (files.container, files.prefix) == ("reports", "team")
    assert files.root == "http://127.0.0.1:10000/devstoreaccount1/reports/team"
    assert "AccountKey" not in repr(files) and "Eby8" not in files.root


def test_connection_string_with_a_virtual_host_url():
    cs = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net"
    files = open_files("https://acct.blob.core.windows.net/reports", connection_string=cs)
    assert files.root == "https://acct.blob.core.windows.net/reports"


@pytest.mark.parametrize(
    ("address", "kw", "message"),
    [
        ("http://127.0.0.1:10000/devstoreaccount1/reports", {}, "needs a connection string"),
        ("https://example.com/reports", {}, "needs a connection string"),
        ("http://127.0.0.1:10001/devstoreaccount1/reports", {"connection_string": AZURITE},
         "does not match the connection string's BlobEndpoint"),
        ("http://127.0.0.1:10000/otheraccount/reports", {"connection_string": AZURITE}, "does not match"),
        ("https://other.blob.core.windows.net/reports", {"connection_string": AZURITE},
         "is for account 'other' but the connection string is for 'devstoreaccount1'"),
        ("https://acct.blob.core.windows.net/", {"credential": "k"}, "needs a container"),
        ("http://127.0.0.1:10000/devstoreaccount1", {"connection_string": AZURITE}, "needs a container"),
        ("gs://bucket/reports", {}, "unknown store address scheme 'gs'"),
        ("ftp://host/reports", {}, "unknown store address scheme 'ftp'"),
        ("", {}, "empty store address"),
        ("   ", {}, "empty store address"),
        ("s3://bucket/a/../../b", {}, "invalid store prefix"),
        ("https://acct.blob.core.windows.net/c/../x", {"credential": "k"}, "invalid store prefix"),
    ],
)
def test_bad_addresses_are_config_errors(address, kw, message):
    with pytest.raises(ConfigError, match=message):
        open_files(address, **kw)


def test_constructors_validate_their_arguments():
    with pytest.raises(ConfigError, match="bucket name"):
        S3Files("")
    with pytest.raises(ConfigError, match="list_page_size"):
        S3Files("b", list_page_size=0)
    with pytest.raises(ConfigError, match="exactly one of"):
        BlobFiles("c")
    with pytest.raises(ConfigError, match="exactly one of"):
        BlobFiles("c", connection_string=AZURITE, account_url="https://a.blob.core.windows.net")
    with pytest.raises(ConfigError, match="credential goes with account_url"):
        BlobFiles("c", connection_string=AZURITE, credential="k")
    with pytest.raises(ConfigError, match="container name"):
        BlobFiles("a/b", connection_string=AZURITE)


def test_report_store_takes_an_address_or_a_files_store(tmp_path):
    store = report_store(str(tmp_path))
    assert isinstance(store, ReportStore) and store.files.root == tmp_path
    files = LocalFiles(tmp_path / "x")
    assert report_store(files).files is files
    assert isinstance(report_store("s3://b/p", endpoint_url="http://127.0.0.1:1").files, S3Files)
    with pytest.raises(ConfigError):
        report_store("gs://b")


@pytest.mark.parametrize("address", ["https://attacker.blob.evil.example/c/p", "https://acct.blob.core.windows.net.evil.example/c/p",
                                     "https://acct.blob.example.com/c/p"])
def test_only_azure_blob_hosts_are_virtual_host_blob_addresses(address):
    """A host that merely contains '.blob.' is no storage account: without a connection string
    it is refused, so no credential is ever sent to it."""
    with pytest.raises(ConfigError, match="needs a connection string"):
        open_files(address)


@pytest.mark.parametrize("host", ["acct.blob.core.windows.net", "acct.blob.core.chinacloudapi.cn",
                                  "acct.blob.core.usgovcloudapi.net"])
def test_azure_blob_hosts_in_each_cloud(host):
    from core.reports.blob import BlobFiles

    assert isinstance(open_files(f"https://{host}/container/prefix", credential=object()), BlobFiles)
