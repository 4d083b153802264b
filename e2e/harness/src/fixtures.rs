//! The OpenShift objects the product reads, installed into every control plane: CRDs (minimal structural schemas
//! in `fixtures/crds/`, the Prometheus Operator's monitoring.coreos.com kinds among them), namespaces, the node-bootstrapper identity and the cluster singletons
//! (`fixtures/cluster/`). Objects are server-side applied in file order; status is applied through the status
//! subresource when the kind has one.

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};

use crate::Error;

/// The field manager of everything the harness applies.
const FIELD_MANAGER: &str = "wmco-e2e-harness";

/// How long a freshly created CRD may take to be established and discoverable.
const CRD_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A fixture file: its name (for errors) and its text.
struct Fixture {
    file: &'static str,
    text: &'static str,
}

/// CRDs, installed first and awaited until established.
const CRD_FIXTURES: [Fixture; 5] = [
    Fixture {
        file: "crds/machine.openshift.io.yaml",
        text: include_str!("../fixtures/crds/machine.openshift.io.yaml"),
    },
    Fixture { file: "crds/config.openshift.io.yaml", text: include_str!("../fixtures/crds/config.openshift.io.yaml") },
    Fixture {
        file: "crds/operator.openshift.io.yaml",
        text: include_str!("../fixtures/crds/operator.openshift.io.yaml"),
    },
    Fixture {
        file: "crds/machineconfiguration.openshift.io.yaml",
        text: include_str!("../fixtures/crds/machineconfiguration.openshift.io.yaml"),
    },
    Fixture {
        file: "crds/monitoring.coreos.com.yaml",
        text: include_str!("../fixtures/crds/monitoring.coreos.com.yaml"),
    },
];

/// Cluster objects, installed in this order once the CRDs are established.
const CLUSTER_FIXTURES: [Fixture; 3] = [
    Fixture { file: "cluster/namespaces.yaml", text: include_str!("../fixtures/cluster/namespaces.yaml") },
    Fixture {
        file: "cluster/node-bootstrapper.yaml",
        text: include_str!("../fixtures/cluster/node-bootstrapper.yaml"),
    },
    Fixture { file: "cluster/singletons.yaml", text: include_str!("../fixtures/cluster/singletons.yaml") },
];

/// Values substituted for `${NAME}` placeholders in the cluster fixtures.
#[derive(Debug, Clone)]
pub(crate) struct FixtureValues {
    /// `${API_SERVER_URL}`.
    pub api_server_url: String,
    /// `${CA_CERTIFICATE_BASE64}`.
    pub ca_certificate_base64: String,
}

impl FixtureValues {
    fn substitute(&self, text: &str) -> String {
        text.replace("${API_SERVER_URL}", &self.api_server_url)
            .replace("${CA_CERTIFICATE_BASE64}", &self.ca_certificate_base64)
    }
}

/// Installs every fixture: CRDs (waiting until each is established), then the cluster objects.
pub(crate) async fn install(client: &kube::Client, values: &FixtureValues) -> Result<(), Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd_names = Vec::new();
    for fixture in &CRD_FIXTURES {
        for document in parse_documents(fixture, fixture.text)? {
            let crd: CustomResourceDefinition = serde_json::from_value(document)
                .map_err(|error| Error::Fixture { file: fixture.file, problem: error.to_string() })?;
            let name = crd.metadata.name.clone().unwrap_or_default();
            crds.patch(&name, &apply_params(), &Patch::Apply(&crd))
                .await
                .map_err(Error::api(format!("apply CRD {name} from {}", fixture.file)))?;
            crd_names.push(name);
        }
    }
    for name in &crd_names {
        wait_until_established(&crds, name).await?;
    }
    for fixture in &CLUSTER_FIXTURES {
        for document in parse_documents(fixture, &values.substitute(fixture.text))? {
            apply_object(client, fixture.file, document).await?;
        }
    }
    Ok(())
}

fn parse_documents(fixture: &Fixture, text: &str) -> Result<Vec<serde_json::Value>, Error> {
    serde_saphyr::from_multiple::<serde_json::Value>(text)
        .map_err(|error| Error::Fixture { file: fixture.file, problem: error.to_string() })
}

fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

async fn wait_until_established(crds: &Api<CustomResourceDefinition>, name: &str) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        let crd = crds.get(name).await.map_err(Error::api(format!("read CRD {name}")))?;
        let established = crd.status.and_then(|status| status.conditions).is_some_and(|conditions| {
            conditions.iter().any(|condition| condition.type_ == "Established" && condition.status == "True")
        });
        if established {
            return Ok(());
        }
        if started.elapsed() > CRD_READY_TIMEOUT {
            return Err(Error::Timeout {
                what: format!("CRD {name}"),
                waited: started.elapsed(),
                last_problem: "condition Established is not True".to_owned(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Server-side applies one object of any kind, then its `status` through the status subresource if it has one.
async fn apply_object(client: &kube::Client, file: &'static str, document: serde_json::Value) -> Result<(), Error> {
    let object: DynamicObject =
        serde_json::from_value(document).map_err(|error| Error::Fixture { file, problem: error.to_string() })?;
    let types =
        object.types.clone().ok_or_else(|| Error::Fixture { file, problem: "a document has no kind".to_owned() })?;
    let name = object.metadata.name.clone().unwrap_or_default();
    let gvk = GroupVersionKind::try_from(&types)
        .map_err(|error| Error::Fixture { file, problem: format!("{name}: {error}") })?;
    let (resource, capabilities) = discover(client, &gvk).await?;
    let api: Api<DynamicObject> = match (&capabilities.scope, object.metadata.namespace.as_deref()) {
        (Scope::Namespaced, Some(namespace)) => Api::namespaced_with(client.clone(), namespace, &resource),
        (Scope::Namespaced, None) => {
            return Err(Error::Fixture { file, problem: format!("{} {name} needs a namespace", gvk.kind) });
        }
        (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    };
    let step = format!("apply {} {name} from {file}", gvk.kind);
    api.patch(&name, &apply_params(), &Patch::Apply(&object)).await.map_err(Error::api(&step))?;
    let has_status_subresource =
        capabilities.subresources.iter().any(|(subresource, _)| subresource.plural == "status");
    if let Some(status) = object.data.get("status").filter(|_| has_status_subresource) {
        let status_patch = serde_json::json!({
            "apiVersion": types.api_version,
            "kind": types.kind,
            "metadata": { "name": name },
            "status": status,
        });
        api.patch_status(&name, &apply_params(), &Patch::Apply(&status_patch))
            .await
            .map_err(Error::api(format!("{step} (status)")))?;
    }
    Ok(())
}

/// Finds the resource of a kind, retrying while a just-established CRD is not yet in discovery.
async fn discover(client: &kube::Client, gvk: &GroupVersionKind) -> Result<(ApiResource, ApiCapabilities), Error> {
    let started = Instant::now();
    loop {
        match kube::discovery::pinned_kind(client, gvk).await {
            Ok(found) => return Ok(found),
            Err(error) if started.elapsed() > CRD_READY_TIMEOUT => {
                return Err(Error::Api { step: format!("discover {}/{}", gvk.api_version(), gvk.kind), source: error });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixture_parses_into_named_objects_with_a_kind() {
        let values = FixtureValues {
            api_server_url: "https://127.0.0.1:6443".to_owned(),
            ca_certificate_base64: "Q0E=".to_owned(),
        };
        let mut kinds = Vec::new();
        for fixture in CRD_FIXTURES.iter().chain(&CLUSTER_FIXTURES) {
            for document in parse_documents(fixture, &values.substitute(fixture.text)).unwrap() {
                let object: DynamicObject = serde_json::from_value(document).unwrap();
                assert!(object.metadata.name.is_some(), "{}", fixture.file);
                kinds.push(object.types.unwrap().kind);
            }
        }
        let crd_count = kinds.iter().filter(|kind| *kind == "CustomResourceDefinition").count();
        assert_eq!(crd_count, 13);
        assert_eq!(kinds.len(), 13 + 4 + 3 + 6);
    }

    #[test]
    fn placeholders_are_substituted() {
        let values = FixtureValues {
            api_server_url: "https://127.0.0.1:6443".to_owned(),
            ca_certificate_base64: "Q0E=".to_owned(),
        };
        let singletons = values.substitute(CLUSTER_FIXTURES[2].text);
        assert!(!singletons.contains("${"), "{singletons}");
        let documents = parse_documents(&CLUSTER_FIXTURES[2], &singletons).unwrap();
        assert_eq!(documents[0]["status"]["apiServerInternalURI"], "https://127.0.0.1:6443");
        assert_eq!(documents[5]["spec"]["kubeAPIServerServingCAData"], "Q0E=");
    }
}
