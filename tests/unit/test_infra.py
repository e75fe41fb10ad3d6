"""The deployment files read as text: infra/main.bicep, infra/main.parameters.json, azure.yaml.

No Bicep compiler runs here; these tests pin what a compile would not catch (keys in app
settings, secrets outside secure parameters, an Event Grid subscription that would fail before
the code is deployed) and what the azd files must agree on.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BICEP = (ROOT / "infra" / "main.bicep").read_text(encoding="utf-8")
PARAMETERS = json.loads((ROOT / "infra" / "main.parameters.json").read_text(encoding="utf-8"))["parameters"]
AZURE_YAML = yaml.safe_load((ROOT / "azure.yaml").read_text(encoding="utf-8"))

PARAM = re.compile(r"^((?:@[^\n]*\n)*)param (\w+) (\w+)(?: = ([^\n]+))?$", re.M)


def _params() -> dict[str, dict]:
    """``name -> {"type", "default", "secure"}`` of the Bicep parameters."""
    return {m.group(2): {"type": m.group(3), "default": m.group(4), "secure": "@secure()" in m.group(1)}
            for m in PARAM.finditer(BICEP)}


def _app_settings() -> dict[str, str]:
    """``name -> value expression`` of the Function App's appSettings entries."""
    return dict(re.findall(r"\{ name: '([^']+)', value: (.+?) \}", BICEP))


def test_parameters_file_names_only_bicep_parameters_and_all_required_ones():
    params = _params()
    assert set(PARAMETERS) <= set(params)
    required = {name for name, p in params.items() if p["default"] is None}
    assert required <= set(PARAMETERS)
    assert PARAMETERS["environmentName"]["value"] == "${AZURE_ENV_NAME}"
    assert PARAMETERS["location"]["value"] == "${AZURE_LOCATION}"
    assert PARAMETERS["principalId"]["value"] == "${AZURE_PRINCIPAL_ID}"


def test_parameters_default_to_the_bicep_defaults():
    """``${VAR=default}`` in the parameters file repeats the Bicep default, so azd and a plain
    deployment agree."""
    params = _params()
    for name, entry in PARAMETERS.items():
        m = re.fullmatch(r"\$\{(\w+)(?:=([^}]*))?\}", entry["value"])
        assert m, f"{name}: {entry['value']}"
        default = params[name]["default"]
        if m.group(2) is not None and default is not None:
            assert default.strip("'") == m.group(2), name


def test_secret_settings_are_key_vault_references_to_secure_parameters():
    """Each secret setting is empty or a Key Vault reference to a secret holding a @secure()
    parameter; no secret value is an app setting."""
    params = _params()
    secret = re.compile(r"(API_KEY|TOKEN|PASSWORD|_DSN)$")
    settings = _app_settings()
    secrets = {name: value for name, value in settings.items() if secret.search(name)}
    assert secrets, "no secret settings found: the parse is broken"
    stored = dict(re.findall(r"\{ name: '([a-z-]+)', value: (\w+) \}", BICEP))  # vault secret -> parameter
    assert len(stored) == len(secrets) == 8  # embedding, chat, judge, rerank, search keys; Milvus token; PG DSN and password
    for name, value in secrets.items():
        m = re.fullmatch(r"empty\((\w+)\) \? '' : '\$\{kvRef\}([a-z-]+)/\)'", value)
        assert m, f"{name} = {value} is not a Key Vault reference"
        param, secret_name = m.groups()
        assert params[param]["secure"] and params[param]["default"] == "''", param
        assert stored[secret_name] == param, f"{name}: secret {secret_name} does not hold {param}"
    assert "var kvRef = '@Microsoft.KeyVault(SecretUri=${vault.properties.vaultUri}secrets/'" in BICEP
    assert "for secret in secretValues: if (!empty(secret.value)) {" in BICEP
    assert "keyVaultReferenceIdentity: identity.id" in BICEP
    assert "enableRbacAuthorization: true" in BICEP
    assert not re.search(r"^output .*(Key|Token|Password|Dsn)\b", BICEP, re.M | re.I)


def test_no_account_keys_and_no_settings_flex_consumption_rejects():
    settings = _app_settings()
    assert "allowSharedKeyAccess: false" in BICEP
    assert not re.search(r"listKeys\(\s*storage|AccountKey=|primaryKey|\.keys\[", BICEP)
    assert "AzureWebJobsStorage" not in settings  # a connection string would be used instead of the identity
    assert settings["AzureWebJobsStorage__credential"] == "'managedidentity'"
    assert settings["AzureWebJobsStorage__clientId"] == "identity.properties.clientId"
    assert settings["AZURE_CLIENT_ID"] == "identity.properties.clientId"
    assert settings["APPLICATIONINSIGHTS_AUTHENTICATION_STRING"] == \
        "'ClientId=${identity.properties.clientId};Authorization=AAD'"
    assert settings["RAGTUNE_OUT_DIR"] == "'/tmp/ragtune-out'"
    for name in ("FUNCTIONS_WORKER_RUNTIME", "FUNCTIONS_EXTENSION_VERSION", "WEBSITE_RUN_FROM_PACKAGE"):
        assert name not in settings


def _resource_blocks() -> dict[str, str]:
    """``symbolic name -> text`` of each top-level resource declaration."""
    starts = [(m.group(1), m.start()) for m in re.finditer(r"^resource (\w+) ", BICEP, re.M)]
    ends = [s for _, s in starts[1:]] + [len(BICEP)]
    return {name: BICEP[start:end] for (name, start), end in zip(starts, ends)}


def test_storage_resources_and_roles():
    assert "for container in runtimeContainers: {" in BICEP
    assert "name: deploymentContainerName" in _resource_blocks()["deploymentContainer"]
    assert "var queueNames = concat([evaluationsQueueName, '${evaluationsQueueName}-poison'], hostQueueNames)" in BICEP
    roles = dict(re.findall(r"^  (\w+): '([0-9a-f-]{36})'$", BICEP, re.M))
    # Built-in role ids (Azure's built-in roles reference).
    assert roles == {
        "storageBlobDataContributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
        "storageBlobDataReader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
        "storageQueueDataContributor": "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
        "storageTableDataContributor": "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",
        "monitoringMetricsPublisher": "3913510d-42f4-4e42-8a64-420c390055eb",
        "keyVaultSecretsUser": "4633458b-17de-408a-b874-0445c86b69e6",
        "cognitiveServicesOpenAIUser": "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd",
    }
    assert "roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', " \
           "roles.monitoringMetricsPublisher)" in BICEP


def test_the_app_identity_is_scoped_to_what_it_uses():
    """No role of the app's identity covers the whole storage account (so not the deployment
    package); each is scoped to one container, queue or table; documents are read-only."""
    blocks = _resource_blocks()
    assignments = {n: b for n, b in blocks.items() if "Microsoft.Authorization/roleAssignments" in b.split("\n")[0]}
    app_roles = {n: b for n, b in assignments.items() if "principalId: identity.properties.principalId" in b}
    assert set(app_roles) == {"appContainerRoles", "appQueueRoles", "appTableRoles", "appInsightsRole", "vaultRole",
                              "openAiRole"}
    for name, block in app_roles.items():
        assert "scope: storage\n" not in block, name
    assert "scope: containers[i]" in app_roles["appContainerRoles"]
    assert "scope: queues[i]" in app_roles["appQueueRoles"] and "scope: tables[i]" in app_roles["appTableRoles"]
    assert "{ name: documentsContainerName, role: 'storageBlobDataReader' }" in BICEP
    assert "Owner" not in BICEP
    # The task hub's name agrees with host.json: its containers, queues and tables are the ones granted.
    host = json.loads((ROOT / "host.json").read_text(encoding="utf-8"))
    assert f"var hubName = '{host['extensions']['durableTask']['hubName']}'" in BICEP
    # The deployment package: the deployment identity only, on its container only.
    deploy = blocks["deployPackageRole"]
    assert "scope: deploymentContainer\n" in deploy and "deployIdentity.properties.principalId" in deploy
    assert "deploymentContainer" not in app_roles["appContainerRoles"]
    assert "for container in runtimeContainers" in blocks["containers"]
    assert "deploymentContainerName" not in re.search(r"var runtimeContainers = [^\n]+", BICEP).group(0)


def test_azure_openai_needs_no_key_with_the_identity():
    params = _params()
    assert params["azureOpenAiAccountName"]["default"] == "''"
    role = _resource_blocks()["openAiRole"]
    assert role.startswith("resource openAiRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = "
                           "if (!empty(azureOpenAiAccountName)) {")
    assert "roles.cognitiveServicesOpenAIUser" in role and "scope: openAi\n" in role
    assert _app_settings()["AZURE_CLIENT_ID"] == "identity.properties.clientId"  # DefaultAzureCredential's identity


def test_public_network_access_is_a_parameter():
    assert _params()["publicNetworkAccess"] == {"type": "string", "default": "'Enabled'", "secure": False}
    blocks = _resource_blocks()
    for name in ("storage", "vault", "app"):
        assert "publicNetworkAccess: publicNetworkAccess" in blocks[name], name
    for name in ("storage", "vault"):
        assert "defaultAction: publicNetworkAccess == 'Enabled' ? 'Allow' : 'Deny'" in blocks[name], name
    assert "publicNetworkAccess: 'Enabled'" not in BICEP


def test_flex_consumption_app_uses_the_identity_for_its_deployment_storage():
    assert "sku: { tier: 'FlexConsumption', name: 'FC1' }" in BICEP
    assert "runtime: { name: 'python', version: '3.11' }" in BICEP
    deployment = re.search(r"deployment: \{.*?\n      \}", BICEP, re.S).group(0)
    assert "type: 'UserAssignedIdentity'" in deployment
    assert "userAssignedIdentityResourceId: deployIdentity.id" in deployment
    assert "tags: union(tags, { 'azd-service-name': 'api' })" in BICEP


def test_event_subscription_is_conditional_and_its_key_is_read_only_then():
    """Before the code is deployed there is no blobs_extension key and Event Grid cannot
    validate the webhook: both must wait for ``deployEventSubscription``."""
    assert _params()["deployEventSubscription"] == {"type": "bool", "default": "false", "secure": False}
    assert re.search(r"resource goldenSubscription '[^']+' = if \(deployEventSubscription\) \{", BICEP)
    key_reads = [line for line in BICEP.splitlines() if "listKeys(" in line and not line.lstrip().startswith("//")]
    assert len(key_reads) == 1
    assert key_reads[0].startswith("var blobsExtensionKey = deployEventSubscription ? listKeys(")
    assert key_reads[0].endswith(".systemKeys.blobs_extension : ''")
    assert "includedEventTypes: ['Microsoft.Storage.BlobCreated']" in BICEP
    assert "endpointUrl: 'https://${app.properties.defaultHostName}/runtime/webhooks/blobs?" in BICEP


@pytest.mark.parametrize("field, value", [("project", "."), ("language", "python"), ("host", "function")])
def test_azure_yaml_service(field, value):
    assert AZURE_YAML["services"]["api"][field] == value
    assert AZURE_YAML["infra"] == {"provider": "bicep", "path": "infra", "module": "main"}


def test_azure_yaml_postdeploy_turns_on_the_event_subscription():
    for platform in ("posix", "windows"):
        script = AZURE_YAML["hooks"]["postdeploy"][platform]["run"]
        assert "azd env set DEPLOY_EVENT_SUBSCRIPTION true" in script
        assert "azd provision --no-prompt" in script
    assert PARAMETERS["deployEventSubscription"]["value"] == "${DEPLOY_EVENT_SUBSCRIPTION=false}"


def test_no_symbol_is_declared_twice():
    """Parameters, variables and resources share one namespace in Bicep: a name used twice does
    not compile."""
    names = re.findall(r"^(?:param|var|resource) (\w+)", BICEP, re.M)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
