"""`storage_options`: the key names delta-rs, polars, obstore and pyiceberg users already
know, each mapped to the one setting it means for the backend of a location, and the secrets
among them (shown as `***` in every repr and message).

Keys are case-insensitive (`AWS_REGION` and `aws_region` are one key).  A key no backend
knows, or one that does not apply to the location's backend (`aws_region` for `gs://`), is an
`InvalidArgumentError` naming the key; the value is never repeated back."""
from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from mergetree.errors import InvalidArgumentError

__all__ = ["OPTION_KEYS", "REDACTED", "ResolvedOptions", "StorageOption", "redact_text", "resolve_options"]

REDACTED = "***"

# Backends a key may apply to.
S3, GCS, AZURE, HDFS, LOCAL = "s3", "gcs", "azure", "hdfs", "local"
OBJECT_STORES = (S3, GCS, AZURE)


@dataclass(frozen=True)
class StorageOption:
    """One setting: the backends it applies to, where it goes (`config`: the obstore store's
    own key; `client`: its HTTP client options; `retry`: the retry policy; `hdfs`: the
    HadoopFileSystem argument) and whether its value is a secret."""
    name: str
    backends: tuple[str, ...]
    target: str
    secret: bool = False
    kind: str = "str"  # str | bool | seconds | int


def _options() -> dict[str, StorageOption]:
    table: dict[str, StorageOption] = {}

    def add(name: str, backends: tuple[str, ...], target: str, *aliases: str, secret: bool = False,
            kind: str = "str") -> None:
        option = StorageOption(name, backends, target, secret, kind)
        for key in (name, *aliases):
            table[key] = option

    # S3 (the names of delta-rs / object_store, polars, pyiceberg's `s3.*`)
    add("access_key_id", (S3,), "config", "aws_access_key_id", "s3.access-key-id")
    add("secret_access_key", (S3,), "config", "aws_secret_access_key", "s3.secret-access-key", secret=True)
    add("session_token", (S3,), "config", "aws_session_token", "aws_token", "s3.session-token", secret=True)
    add("region", (S3,), "config", "aws_region", "aws_default_region", "s3.region")
    add("virtual_hosted_style_request", (S3,), "config", "aws_virtual_hosted_style_request", kind="bool")
    add("skip_signature", (S3, GCS, AZURE), "config", "aws_skip_signature", kind="bool")
    add("role_arn", (S3,), "config", "aws_role_arn")
    add("role_session_name", (S3,), "config", "aws_role_session_name")
    add("metadata_endpoint", (S3,), "config", "aws_metadata_endpoint")
    add("request_payer", (S3,), "config", "aws_request_payer", kind="bool")
    add("server_side_encryption", (S3,), "config", "aws_server_side_encryption")
    add("sse_kms_key_id", (S3,), "config", "aws_sse_kms_key_id")
    add("conditional_put", (S3,), "config", "aws_conditional_put")
    add("profile", (S3,), "profile", "aws_profile")  # a profile of ~/.aws/credentials and ~/.aws/config
    # endpoints: one key, the backend's own endpoint (S3-compatible servers, Azurite)
    add("endpoint", (S3, AZURE), "config", "aws_endpoint", "aws_endpoint_url", "endpoint_url", "s3.endpoint",
        "azure_storage_endpoint", "azure_endpoint")
    # GCS
    add("service_account", (GCS,), "config", "google_service_account", "google_service_account_path",
        "service_account_path")
    add("service_account_key", (GCS,), "config", "google_service_account_key", secret=True)
    add("application_credentials", (GCS,), "config", "google_application_credentials")
    add("base_url", (GCS,), "config", "google_base_url", "gcs_base_url")
    # Azure (delta-rs's azure_storage_*, pyiceberg's adls.*)
    add("account_name", (AZURE,), "config", "azure_storage_account_name", "azure_account_name", "adls.account-name")
    add("account_key", (AZURE,), "config", "azure_storage_account_key", "azure_storage_access_key",
        "azure_account_key", "access_key", "adls.account-key", secret=True)
    add("client_id", (AZURE,), "config", "azure_storage_client_id", "azure_client_id")
    add("client_secret", (AZURE,), "config", "azure_storage_client_secret", "azure_client_secret", secret=True)
    add("tenant_id", (AZURE,), "config", "azure_storage_tenant_id", "azure_tenant_id", "azure_storage_authority_id")
    add("sas_key", (AZURE,), "config", "azure_storage_sas_key", "azure_storage_sas_token", "sas_token",
        "adls.sas-token", secret=True)
    add("token", (AZURE,), "config", "azure_storage_token", "bearer_token", "azure_storage_bearer_token", secret=True)
    add("use_emulator", (AZURE,), "config", "azure_storage_use_emulator", kind="bool")
    add("use_azure_cli", (AZURE,), "config", kind="bool")
    # every object store's HTTP client and retries
    add("allow_http", OBJECT_STORES, "client", "aws_allow_http", "azure_allow_http", kind="bool")
    add("allow_invalid_certificates", OBJECT_STORES, "client", kind="bool")
    add("timeout", OBJECT_STORES, "client", kind="seconds")
    add("connect_timeout", OBJECT_STORES, "client", kind="seconds")
    add("proxy_url", OBJECT_STORES, "client")
    add("max_retries", OBJECT_STORES, "retry", kind="int")
    add("retry_timeout", OBJECT_STORES, "retry", kind="seconds")
    # HDFS (pyarrow.fs.HadoopFileSystem)
    add("user", (HDFS,), "hdfs", "hdfs_user")
    add("kerb_ticket", (HDFS,), "hdfs", "kerberos_ticket_cache_path", "hdfs_kerb_ticket")
    return table


OPTION_KEYS: dict[str, StorageOption] = _options()


@dataclass
class ResolvedOptions:
    """Options split by where they go, for one backend; `secrets` holds every secret value
    given, so any text can be scrubbed of them (`redact_text`)."""
    config: dict[str, Any] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)
    retry: dict[str, Any] = field(default_factory=dict)
    hdfs: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)  # canonical key -> value or *** (for repr)
    secrets: tuple[str, ...] = ()


def _parse(option: StorageOption, key: str, value: object) -> Any:
    def bad(expected: str) -> InvalidArgumentError:
        shown = REDACTED if option.secret else repr(value)
        return InvalidArgumentError(f"storage option {key!r} must be {expected}, got {shown}")

    if option.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise bad("true or false")
    if option.kind in ("int", "seconds"):
        try:
            number = float(value) if option.kind == "seconds" else int(str(value))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise bad("a number of seconds" if option.kind == "seconds" else "an integer") from None
        if number < 0:
            raise bad("not negative")
        return timedelta(seconds=number) if option.kind == "seconds" else number
    if not isinstance(value, str):
        raise bad("a string")
    return value


def resolve_options(storage_options: Mapping[str, object] | None, backend: str, where: str) -> ResolvedOptions:
    """Check `storage_options` for `backend` and split them by target.  `where` (the redacted
    URI) names the location in errors."""
    out = ResolvedOptions()
    if storage_options is None:
        storage_options = {}
    if not isinstance(storage_options, Mapping):
        raise InvalidArgumentError(f"storage_options for {where} must be a dict of strings, "
                                   f"got {type(storage_options).__name__}")
    secrets = []
    for raw_key, value in storage_options.items():
        key = str(raw_key).strip().lower()
        option = OPTION_KEYS.get(key)
        if option is None:
            raise InvalidArgumentError(f"unknown storage option {raw_key!r} for {where}; known keys are listed in "
                                       f"docs/STORAGE.md (e.g. aws_region, aws_endpoint_url, "
                                       f"azure_storage_account_name, google_service_account)")
        if backend not in option.backends:
            raise InvalidArgumentError(f"storage option {raw_key!r} does not apply to {where} (a {backend} location)")
        if option.secret and isinstance(value, str) and value:
            secrets.append(value)
        parsed = _parse(option, str(raw_key), value)
        getattr(out, option.target)[option.name] = parsed
        out.shown[option.name] = REDACTED if option.secret else str(value)
    if backend == S3:
        secrets.extend(_apply_aws_profile(out, out.profile.get("profile")))
    # object_store reads its store settings from the environment but not its HTTP client's:
    # AWS_ALLOW_HTTP=true (as delta-rs users set it for a local server) would be ignored
    variable = {S3: "AWS_ALLOW_HTTP", AZURE: "AZURE_ALLOW_HTTP"}.get(backend)
    if variable and "allow_http" not in out.client and os.environ.get(variable):
        out.client["allow_http"] = _parse(OPTION_KEYS["allow_http"], variable, os.environ[variable])
    out.secrets = tuple(secrets)
    return out


# A setting of a ~/.aws profile -> the storage option it fills, with the environment variable
# that, set, wins over the file (the AWS SDKs' order: options, environment, profile).
_PROFILE_SETTINGS = {
    "aws_access_key_id": ("access_key_id", ("AWS_ACCESS_KEY_ID",)),
    "aws_secret_access_key": ("secret_access_key", ("AWS_SECRET_ACCESS_KEY",)),
    "aws_session_token": ("session_token", ("AWS_SESSION_TOKEN",)),
    "region": ("region", ("AWS_REGION", "AWS_DEFAULT_REGION")),
    "endpoint_url": ("endpoint", ("AWS_ENDPOINT_URL",)),
}


def _profile_sections(path: str, section: str) -> dict[str, str]:
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"cannot read the AWS profile file {path}: {type(exc).__name__}") from None
    return dict(parser[section]) if parser.has_section(section) else {}


def _apply_aws_profile(out: ResolvedOptions, profile: str | None) -> list[str]:
    """Fill what neither the options nor the environment give from a profile of the AWS
    shared files (`AWS_SHARED_CREDENTIALS_FILE`/`AWS_CONFIG_FILE`, default ~/.aws/credentials
    and ~/.aws/config): the `profile` option, else `AWS_PROFILE`, else `default` (obstore's
    object_store reads only the environment and instance metadata).  Static keys, region and
    endpoint_url only; an explicitly named profile that does not exist is an error.  The
    secrets filled in, for redaction."""
    name = profile or os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
    home = os.path.expanduser("~")
    credentials_file = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials")
    config_file = os.environ.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config")
    section = name or "default"
    found = _profile_sections(config_file, section if section == "default" else f"profile {section}")
    found.update(_profile_sections(credentials_file, section))  # the credentials file wins, as in the SDKs
    if name and not found:
        raise InvalidArgumentError(f"AWS profile {name!r} is in neither {credentials_file} nor {config_file}")
    given_keys = "access_key_id" in out.config or bool(os.environ.get("AWS_ACCESS_KEY_ID"))
    secrets = []
    for setting, (option, variables) in _PROFILE_SETTINGS.items():
        value = found.get(setting, "").strip()
        if not value or option in out.config or any(os.environ.get(v) for v in variables):
            continue
        if setting in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token") and given_keys:
            continue  # keys come as a set: never one from the options and its partner from a file
        out.config[option] = value
        if OPTION_KEYS[option].secret:
            secrets.append(value)
            out.shown[option] = REDACTED
        else:
            out.shown[option] = value
    return secrets


def redact_text(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret replaced by ***."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
