// Azure resources for the ragtune Functions app (deployed with `azd up`, see the README's
// "Deploying to Azure"):
//
// - a Flex Consumption Function App (Python 3.11) running as a user-assigned managed identity,
//   with a second identity used only to read its deployment package;
// - one storage account, reached only with Microsoft Entra ID (no shared keys): the Functions
//   host and the Durable Functions task hub (AzureWebJobsStorage), the golden, documents and
//   reports containers, the deployment package container, and the evaluations queues;
// - a Key Vault holding the API keys, tokens and PostgreSQL password given as parameters; the
//   app settings are Key Vault references (none is needed for Azure OpenAI: without a key the
//   app authenticates with its identity, see core/models/azure.py);
// - Log Analytics and Application Insights (local authentication off: the app publishes
//   telemetry as its identity);
// - role assignments for the identities, each scoped to the containers, queues and tables it
//   uses (and, optionally, for the person deploying);
// - an Event Grid system topic on the storage account and, once the code is deployed, the
//   subscription that delivers BlobCreated events of the golden container to the blob trigger.
targetScope = 'resourceGroup'

@minLength(1)
@maxLength(64)
@description('Name of the environment (azd: AZURE_ENV_NAME); tags every resource and seeds the names.')
param environmentName string

@minLength(1)
@description('Azure region of every resource (a region that offers the Flex Consumption plan).')
@metadata({ azd: { type: 'location' } })
param location string = resourceGroup().location

@description('Object id of the person deploying (azd: AZURE_PRINCIPAL_ID); gets data access to the storage account to upload golden files and read reports. Empty: none.')
param principalId string = ''

@description('Principal type of principalId: User, or ServicePrincipal when a pipeline deploys.')
@allowed(['User', 'ServicePrincipal'])
param principalType string = 'User'

@description('Create the Event Grid subscription that feeds the golden blob trigger. Its webhook only validates once the code is deployed: provision with false, deploy, then provision again with true (azure.yaml does this in its postdeploy hook).')
param deployEventSubscription bool = false

@description('Largest number of instances the app scales out to.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 40

@description('Memory of each instance, in MB.')
@allowed([512, 2048, 4096])
param instanceMemoryMB int = 4096

@description('Public network access of the storage account, the Key Vault and the Function App. Disabled: they refuse traffic from the internet; reaching them then needs private endpoints and VNet integration, which this template does not create (and Event Grid cannot deliver to a private app).')
@allowed(['Enabled', 'Disabled'])
param publicNetworkAccess string = 'Enabled'

@description('Name of an Azure OpenAI (Azure AI services) account in this resource group: the app identity gets Cognitive Services OpenAI User on it, so no API key is needed. Empty: none.')
param azureOpenAiAccountName string = ''

// Settings of the app (core/settings.py documents each one). Empty means "the default".
@description('RAGTUNE_EMBEDDING_PROVIDER: openai or azure (the deployment installs no local model).')
@allowed(['openai', 'azure'])
param embeddingProvider string = 'azure'
@description('RAGTUNE_EMBEDDING_MODEL: model name (Azure: deployment name).')
param embeddingModel string = 'text-embedding-3-small'
@description('RAGTUNE_EMBEDDING_BASE_URL: endpoint (Azure: https://<resource>.openai.azure.com).')
param embeddingBaseUrl string = ''
@secure()
@description('RAGTUNE_EMBEDDING_API_KEY')
param embeddingApiKey string = ''
@description('RAGTUNE_EMBEDDING_DIMENSIONS: ask the endpoint for this many dimensions; empty: model default.')
param embeddingDimensions string = ''
@description('RAGTUNE_EMBEDDING_API_VERSION: Azure OpenAI API version.')
param embeddingApiVersion string = '2024-10-21'
@description('RAGTUNE_VECTOR_STORE: milvus-lite, milvus or pgvector; empty: milvus when milvusUri is set, else milvus-lite (one instance only: each instance has its own disk).')
param vectorStore string = ''
@description('RAGTUNE_MILVUS_URI: a Milvus server (http://host:19530).')
param milvusUri string = ''
@secure()
@description('RAGTUNE_MILVUS_TOKEN')
param milvusToken string = ''
@description('RAGTUNE_MILVUS_DB')
param milvusDb string = ''
@description('RAGTUNE_MILVUS_LITE_PATH: Milvus Lite database; empty: <RAGTUNE_OUT_DIR>/milvus.db.')
param milvusLitePath string = ''
@secure()
@description('RAGTUNE_PG_DSN: PostgreSQL with pgvector (postgresql://user:password@host:5432/db); wins over the pieces below.')
param pgDsn string = ''
@description('RAGTUNE_PG_HOST')
param pgHost string = ''
@description('RAGTUNE_PG_PORT')
param pgPort string = ''
@description('RAGTUNE_PG_USER')
param pgUser string = ''
@secure()
@description('RAGTUNE_PG_PASSWORD')
param pgPassword string = ''
@description('RAGTUNE_PG_DB')
param pgDb string = ''
@description('RAGTUNE_PG_SCHEMA')
param pgSchema string = ''
@description('RAGTUNE_CHAT_PROVIDER: openai or azure; empty: answers come from the extractive baseline.')
param chatProvider string = ''
@description('RAGTUNE_CHAT_MODEL')
param chatModel string = ''
@description('RAGTUNE_CHAT_BASE_URL')
param chatBaseUrl string = ''
@secure()
@description('RAGTUNE_CHAT_API_KEY')
param chatApiKey string = ''
@description('RAGTUNE_CHAT_API_VERSION')
param chatApiVersion string = '2024-10-21'
@description('RAGTUNE_JUDGE_MODEL: empty: no judge.')
param judgeModel string = ''
@description('RAGTUNE_JUDGE_BASE_URL: empty: the chat endpoint.')
param judgeBaseUrl string = ''
@secure()
@description('RAGTUNE_JUDGE_API_KEY: empty: the chat key.')
param judgeApiKey string = ''
@description('RAGTUNE_EVALUATION_TIMEOUT_S: time budget of one evaluation, in seconds (below functionTimeout in host.json); the round timeout is derived from it.')
param evaluationTimeoutS string = '1500'
@description('RAGTUNE_PARALLEL_EVALUATIONS: evaluations enqueued per round of the experiment orchestrator.')
param parallelEvaluations string = '8'
@description('RAGTUNE_DOCUMENT_MAX_BYTES: largest document read, in bytes on disk; empty: 64 MiB.')
param documentMaxBytes string = ''
@description('RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES: most bytes a ZIP-based document (DOCX) may unpack to; empty: 256 MiB.')
param documentMaxUnpackedBytes string = ''
@description('RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO: most a part of a ZIP-based document may expand; empty: 100.')
param documentMaxInflateRatio string = ''
@description('RAGTUNE_DOCUMENT_MAX_PAGES: most pages of a document; empty: 5000.')
param documentMaxPages string = ''
@description('RAGTUNE_DOCUMENT_MAX_CHARS: most characters of a document's text; empty: 20000000.')
param documentMaxChars string = ''
@description('RAGTUNE_ENDPOINT_DEADLINE_S: total seconds of one embedding, chat or rerank request; empty: 300.')
param endpointDeadlineS string = ''
@description('RAGTUNE_SEARCH_ENDPOINT: the Azure AI Search service the configured targets search (read-only).')
param searchEndpoint string = ''
@secure()
@description('RAGTUNE_SEARCH_API_KEY: an Azure AI Search query key; empty: the app's managed identity (Entra ID).')
param searchApiKey string = ''
@description('RAGTUNE_TARGETS: the targets an evaluation request may name (a targets file's YAML or JSON text).')
param targets string = ''
@description('RAGTUNE_GOLDEN_MAX_BYTES: largest golden file checked, in bytes; empty: 20 MiB.')
param goldenMaxBytes string = ''
@description('RAGTUNE_RERANK_PROVIDER: local (the packaged cross-encoder), cohere, jina, vllm, tei or none.')
param rerankProvider string = 'local'
@description('RAGTUNE_RERANK_MODEL: the rerank model (local: ms-marco-MiniLM-L-12-v2).')
param rerankModel string = ''
@description('RAGTUNE_RERANK_BASE_URL: the rerank endpoint (requests go to {base}/rerank).')
param rerankBaseUrl string = ''
@secure()
@description('RAGTUNE_RERANK_API_KEY: the rerank endpoint key.')
param rerankApiKey string = ''

var resourceToken = toLower(uniqueString(subscription().id, resourceGroup().id, environmentName))
var tags = { 'azd-env-name': environmentName }
var functionAppName = 'func-ragtune-${resourceToken}'
var goldenContainerName = 'golden'
var documentsContainerName = 'documents'
var reportsContainerName = 'reports'
var deploymentContainerName = 'app-package-${take(resourceToken, 7)}'
var evaluationsQueueName = 'evaluations'
// The blob-triggered function that checks golden files (functions/golden.py).
var goldenFunctionName = 'check_golden_blob'
// The Durable Functions task hub (host.json extensions.durableTask.hubName) and what the Azure
// Storage provider keeps in the account: containers, queues (4 control-queue partitions, the
// default partitionCount) and tables. Declared here so that each role is scoped to them.
var hubName = 'ragtune'
var hostContainerNames = ['azure-webjobs-hosts', 'azure-webjobs-secrets', '${hubName}-leases', '${hubName}-largemessages', '${hubName}-applease']
var hostQueueNames = ['${hubName}-control-00', '${hubName}-control-01', '${hubName}-control-02', '${hubName}-control-03', '${hubName}-workitems', 'webjobs-blobtrigger-poison']
var hostTableNames = ['${hubName}History', '${hubName}Instances', '${hubName}Partitions']
// What the app does with each container: documents are only read.
var appContainers = [
  { name: goldenContainerName, role: 'storageBlobDataContributor' } // read uploads, write drafts beside them
  { name: documentsContainerName, role: 'storageBlobDataReader' }
  { name: reportsContainerName, role: 'storageBlobDataContributor' }
]
var runtimeContainers = concat(appContainers, map(hostContainerNames, name => { name: name, role: 'storageBlobDataContributor' }))
var queueNames = concat([evaluationsQueueName, '${evaluationsQueueName}-poison'], hostQueueNames)

// Built-in role definitions.
var roles = {
  storageBlobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  storageBlobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1'
  storageQueueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  storageTableDataContributor: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
  keyVaultSecretsUser: '4633458b-17de-408a-b874-0445c86b69e6'
  cognitiveServicesOpenAIUser: '5e0bd9bd-7b93-4f28-af87-19fc36ad61bd'
}

// Identity ----------------------------------------------------------------------------------
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-ragtune-${resourceToken}'
  location: location
  tags: tags
}

// Reads the deployment package and nothing else: the running code (as `identity`) cannot change it.
resource deployIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-ragtune-deploy-${resourceToken}'
  location: location
  tags: tags
}

// Storage -----------------------------------------------------------------------------------
resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: 'stragtune${take(resourceToken, 13)}'
  location: location
  tags: tags
  sku: { name: 'Standard_LRS' }
  kind: 'StorageV2'
  properties: {
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false // every client (host, app, deployment) uses Entra ID
    dnsEndpointType: 'Standard'
    publicNetworkAccess: publicNetworkAccess
    networkAcls: { defaultAction: publicNetworkAccess == 'Enabled' ? 'Allow' : 'Deny', bypass: 'AzureServices' }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = [
  for container in runtimeContainers: {
    parent: blobService
    name: container.name
    properties: { publicAccess: 'None' }
  }
]

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for queue in queueNames: {
    parent: queueService
    name: queue
  }
]

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = [
  for table in hostTableNames: {
    parent: tableService
    name: table
  }
]

// The app's identity, scoped to what it uses and never to the whole account: on each container
// the role in runtimeContainers (the host's and the task hub's containers, golden and reports:
// Blob Data Contributor; documents: Blob Data Reader; the deployment package: nothing); Queue
// Data Contributor on each queue (queue trigger and output, Durable control and work-item
// queues); Table Data Contributor on the task hub's tables.
resource appContainerRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (container, i) in runtimeContainers: {
    name: guid(containers[i].id, identity.id, roles[container.role])
    scope: containers[i]
    properties: {
      principalId: identity.properties.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles[container.role])
    }
  }
]

resource appQueueRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (queue, i) in queueNames: {
    name: guid(queues[i].id, identity.id, roles.storageQueueDataContributor)
    scope: queues[i]
    properties: {
      principalId: identity.properties.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageQueueDataContributor)
    }
  }
]

resource appTableRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for (table, i) in hostTableNames: {
    name: guid(tables[i].id, identity.id, roles.storageTableDataContributor)
    scope: tables[i]
    properties: {
      principalId: identity.properties.principalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageTableDataContributor)
    }
  }
]

// The deployment identity: the package container only (the platform writes and reads the package).
resource deployPackageRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(deploymentContainer.id, deployIdentity.id, roles.storageBlobDataContributor)
  scope: deploymentContainer
  properties: {
    principalId: deployIdentity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataContributor)
  }
}

// Secrets -----------------------------------------------------------------------------------
// Each secret parameter given is stored in the vault; its app setting is a Key Vault reference
// the platform resolves with the app's identity (keyVaultReferenceIdentity), empty otherwise.
resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: 'kv-ragtune-${take(resourceToken, 13)}'
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: { family: 'A', name: 'standard' }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
    publicNetworkAccess: publicNetworkAccess
    networkAcls: { defaultAction: publicNetworkAccess == 'Enabled' ? 'Allow' : 'Deny', bypass: 'AzureServices' }
  }
}

var secretValues = [
  { name: 'embedding-api-key', value: embeddingApiKey }
  { name: 'chat-api-key', value: chatApiKey }
  { name: 'judge-api-key', value: judgeApiKey }
  { name: 'rerank-api-key', value: rerankApiKey }
  { name: 'search-api-key', value: searchApiKey }
  { name: 'milvus-token', value: milvusToken }
  { name: 'pg-dsn', value: pgDsn }
  { name: 'pg-password', value: pgPassword }
]

resource secrets 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = [
  for secret in secretValues: if (!empty(secret.value)) {
    parent: vault
    name: secret.name
    properties: { value: secret.value }
  }
]

// '@Microsoft.KeyVault(SecretUri=<vault>secrets/<name>/)': the latest version of the secret.
var kvRef = '@Microsoft.KeyVault(SecretUri=${vault.properties.vaultUri}secrets/'

resource vaultRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, identity.id, roles.keyVaultSecretsUser)
  scope: vault
  properties: {
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.keyVaultSecretsUser)
  }
}

// Azure OpenAI with the app's identity (no key) ----------------------------------------------
resource openAi 'Microsoft.CognitiveServices/accounts@2023-05-01' existing = {
  name: empty(azureOpenAiAccountName) ? 'none' : azureOpenAiAccountName
}

resource openAiRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(azureOpenAiAccountName)) {
  name: guid(openAi.id, identity.id, roles.cognitiveServicesOpenAIUser)
  scope: openAi
  properties: {
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.cognitiveServicesOpenAIUser)
  }
}

// The person deploying: upload golden files and documents, read reports, look at the queues.
var userStorageRoleIds = empty(principalId) ? [] : [roles.storageBlobDataContributor, roles.storageQueueDataContributor]

resource userStorageRoles 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for roleId in userStorageRoleIds: {
    name: guid(storage.id, principalId, roleId)
    scope: storage
    properties: {
      principalId: principalId
      principalType: principalType
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleId)
    }
  }
]

// Monitoring --------------------------------------------------------------------------------
resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-ragtune-${resourceToken}'
  location: location
  tags: tags
  properties: {
    sku: { name: 'PerGB2018' }
    retentionInDays: 30
  }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-ragtune-${resourceToken}'
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logs.id
    DisableLocalAuth: true // telemetry only with Entra ID (APPLICATIONINSIGHTS_AUTHENTICATION_STRING)
  }
}

resource appInsightsRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(insights.id, identity.id, roles.monitoringMetricsPublisher)
  scope: insights
  properties: {
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
  }
}

// Function App ------------------------------------------------------------------------------
resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-ragtune-${resourceToken}'
  location: location
  tags: tags
  kind: 'functionapp'
  sku: { tier: 'FlexConsumption', name: 'FC1' }
  properties: { reserved: true }
}

var blobEndpoint = storage.properties.primaryEndpoints.blob // ends with '/'
var queueEndpoint = storage.properties.primaryEndpoints.queue

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: functionAppName
  location: location
  tags: union(tags, { 'azd-service-name': 'api' })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: { '${identity.id}': {}, '${deployIdentity.id}': {} }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    publicNetworkAccess: publicNetworkAccess
    keyVaultReferenceIdentity: identity.id
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${blobEndpoint}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: deployIdentity.id
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: { name: 'python', version: '3.11' }
    }
    siteConfig: {
      minTlsVersion: '1.2'
      // Every setting the code reads is listed here, empty where the default applies
      // (tests/functions/test_app_settings.py checks this against the source). The Flex
      // Consumption plan rejects FUNCTIONS_WORKER_RUNTIME and FUNCTIONS_EXTENSION_VERSION: the
      // runtime is functionAppConfig.runtime above.
      appSettings: [
        // Functions host and Durable Functions task hub, as the identity (no account key).
        { name: 'AzureWebJobsStorage__accountName', value: storage.name }
        { name: 'AzureWebJobsStorage__credential', value: 'managedidentity' }
        { name: 'AzureWebJobsStorage__clientId', value: identity.properties.clientId }
        { name: 'APPLICATIONINSIGHTS_CONNECTION_STRING', value: insights.properties.ConnectionString }
        { name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING', value: 'ClientId=${identity.properties.clientId};Authorization=AAD' }
        // DefaultAzureCredential (core.settings) picks this identity.
        { name: 'AZURE_CLIENT_ID', value: identity.properties.clientId }
        // The app's storage connection (blob trigger, queues, reports), identity-based.
        { name: 'RAGTUNE_STORAGE_CONNECTION__blobServiceUri', value: blobEndpoint }
        { name: 'RAGTUNE_STORAGE_CONNECTION__queueServiceUri', value: queueEndpoint }
        { name: 'RAGTUNE_STORAGE_CONNECTION__credential', value: 'managedidentity' }
        { name: 'RAGTUNE_STORAGE_CONNECTION__clientId', value: identity.properties.clientId }
        { name: 'RAGTUNE_GOLDEN_CONTAINER', value: goldenContainerName }
        { name: 'RAGTUNE_DOCUMENTS_CONTAINER', value: documentsContainerName }
        { name: 'RAGTUNE_GOLDEN_TRIGGER_SOURCE', value: 'EventGrid' } // Flex Consumption has no polling blob trigger
        { name: 'RAGTUNE_EVALUATIONS_QUEUE', value: evaluationsQueueName }
        { name: 'RAGTUNE_EVALUATION_TIMEOUT_S', value: evaluationTimeoutS }
        { name: 'RAGTUNE_PARALLEL_EVALUATIONS', value: parallelEvaluations }
        { name: 'RAGTUNE_GOLDEN_MAX_BYTES', value: goldenMaxBytes }
        { name: 'RAGTUNE_DOCUMENT_MAX_BYTES', value: documentMaxBytes }
        { name: 'RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES', value: documentMaxUnpackedBytes }
        { name: 'RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO', value: documentMaxInflateRatio }
        { name: 'RAGTUNE_DOCUMENT_MAX_PAGES', value: documentMaxPages }
        { name: 'RAGTUNE_DOCUMENT_MAX_CHARS', value: documentMaxChars }
        { name: 'RAGTUNE_ENDPOINT_DEADLINE_S', value: endpointDeadlineS }
        { name: 'RAGTUNE_SEARCH_ENDPOINT', value: searchEndpoint }
        { name: 'RAGTUNE_SEARCH_API_KEY', value: empty(searchApiKey) ? '' : '${kvRef}search-api-key/)' }
        { name: 'RAGTUNE_TARGETS', value: targets }
        { name: 'RAGTUNE_REPORTS', value: '${blobEndpoint}${reportsContainerName}' }
        { name: 'RAGTUNE_OUT_DIR', value: '/tmp/ragtune-out' } // the writable local disk on Flex Consumption
        // Models.
        { name: 'RAGTUNE_EMBEDDING_PROVIDER', value: embeddingProvider }
        { name: 'RAGTUNE_EMBEDDING_MODEL', value: embeddingModel }
        { name: 'RAGTUNE_EMBEDDING_BASE_URL', value: embeddingBaseUrl }
        { name: 'RAGTUNE_EMBEDDING_API_KEY', value: empty(embeddingApiKey) ? '' : '${kvRef}embedding-api-key/)' }
        { name: 'RAGTUNE_EMBEDDING_DIMENSIONS', value: embeddingDimensions }
        { name: 'RAGTUNE_EMBEDDING_API_VERSION', value: embeddingApiVersion }
        { name: 'RAGTUNE_CHAT_PROVIDER', value: chatProvider }
        { name: 'RAGTUNE_CHAT_MODEL', value: chatModel }
        { name: 'RAGTUNE_CHAT_BASE_URL', value: chatBaseUrl }
        { name: 'RAGTUNE_CHAT_API_KEY', value: empty(chatApiKey) ? '' : '${kvRef}chat-api-key/)' }
        { name: 'RAGTUNE_CHAT_API_VERSION', value: chatApiVersion }
        { name: 'RAGTUNE_JUDGE_MODEL', value: judgeModel }
        { name: 'RAGTUNE_JUDGE_BASE_URL', value: judgeBaseUrl }
        { name: 'RAGTUNE_JUDGE_API_KEY', value: empty(judgeApiKey) ? '' : '${kvRef}judge-api-key/)' }
        { name: 'RAGTUNE_RERANK_PROVIDER', value: rerankProvider }
        { name: 'RAGTUNE_RERANK_MODEL', value: rerankModel }
        { name: 'RAGTUNE_RERANK_BASE_URL', value: rerankBaseUrl }
        { name: 'RAGTUNE_RERANK_API_KEY', value: empty(rerankApiKey) ? '' : '${kvRef}rerank-api-key/)' }
        // Vector store.
        { name: 'RAGTUNE_VECTOR_STORE', value: vectorStore }
        { name: 'RAGTUNE_MILVUS_URI', value: milvusUri }
        { name: 'RAGTUNE_MILVUS_TOKEN', value: empty(milvusToken) ? '' : '${kvRef}milvus-token/)' }
        { name: 'RAGTUNE_MILVUS_DB', value: milvusDb }
        { name: 'RAGTUNE_MILVUS_LITE_PATH', value: milvusLitePath }
        { name: 'RAGTUNE_PG_DSN', value: empty(pgDsn) ? '' : '${kvRef}pg-dsn/)' }
        { name: 'RAGTUNE_PG_HOST', value: pgHost }
        { name: 'RAGTUNE_PG_PORT', value: pgPort }
        { name: 'RAGTUNE_PG_USER', value: pgUser }
        { name: 'RAGTUNE_PG_PASSWORD', value: empty(pgPassword) ? '' : '${kvRef}pg-password/)' }
        { name: 'RAGTUNE_PG_DB', value: pgDb }
        { name: 'RAGTUNE_PG_SCHEMA', value: pgSchema }
      ]
    }
  }
  // The host reaches storage, and the platform the secrets, as the identity from its first start.
  dependsOn: [appContainerRoles, appQueueRoles, appTableRoles, deployPackageRole, appInsightsRole, vaultRole, secrets]
}

// Event Grid --------------------------------------------------------------------------------
// The golden blob trigger uses the Event Grid source (the Flex Consumption plan has no polling
// blob trigger): BlobCreated events of the golden container go to the blob extension's webhook.
resource storageTopic 'Microsoft.EventGrid/systemTopics@2022-06-15' = {
  name: 'evgt-ragtune-${resourceToken}'
  location: location
  tags: tags
  properties: {
    source: storage.id
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

// The blobs_extension system key exists once the code with the blob trigger runs, and Event
// Grid validates the endpoint when the subscription is created: both only after a deploy. The
// key is read only when the subscription is wanted.
var blobsExtensionKey = deployEventSubscription ? listKeys(resourceId('Microsoft.Web/sites/host', app.name, 'default'), '2023-12-01').systemKeys.blobs_extension : ''

resource goldenSubscription 'Microsoft.EventGrid/systemTopics/eventSubscriptions@2022-06-15' = if (deployEventSubscription) {
  parent: storageTopic
  name: 'golden-blob-created'
  properties: {
    destination: {
      endpointType: 'WebHook'
      properties: {
        endpointUrl: 'https://${app.properties.defaultHostName}/runtime/webhooks/blobs?functionName=Host.Functions.${goldenFunctionName}&code=${blobsExtensionKey}'
        maxEventsPerBatch: 1
        preferredBatchSizeInKilobytes: 64
      }
    }
    filter: {
      includedEventTypes: ['Microsoft.Storage.BlobCreated']
      subjectBeginsWith: '/blobServices/default/containers/${goldenContainerName}/'
    }
    eventDeliverySchema: 'EventGridSchema'
    retryPolicy: {
      maxDeliveryAttempts: 30
      eventTimeToLiveInMinutes: 1440
    }
  }
}

// Outputs (azd stores them in the environment: `azd env get-values`) ------------------------
output AZURE_LOCATION string = location
output AZURE_RESOURCE_GROUP string = resourceGroup().name
output AZURE_FUNCTION_APP_NAME string = app.name
output AZURE_FUNCTION_APP_URL string = 'https://${app.properties.defaultHostName}'
output AZURE_STORAGE_ACCOUNT_NAME string = storage.name
output AZURE_STORAGE_BLOB_ENDPOINT string = blobEndpoint
output AZURE_KEY_VAULT_NAME string = vault.name
output RAGTUNE_GOLDEN_CONTAINER string = goldenContainerName
output RAGTUNE_DOCUMENTS_CONTAINER string = documentsContainerName
output RAGTUNE_REPORTS string = '${blobEndpoint}${reportsContainerName}'
output GOLDEN_SYSTEM_TOPIC_NAME string = storageTopic.name
output EVENT_SUBSCRIPTION_DEPLOYED bool = deployEventSubscription
