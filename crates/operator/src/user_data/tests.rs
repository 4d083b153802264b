//! Reconcile scenarios over the cluster-client fakes with real keys (the `wmco-user-data` test fixtures): first
//! render, converged pass, hand edit reverted, key rotation, weak and unusable keys; the mirror in
//! `openshift-cluster-api` (kept while the namespace exists, hand edits reverted, a namespace created later found, a
//! Forbidden answer one Warning and no error).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::ObjectMeta;
use wmco_cluster_client::fake::{FakeCluster, FakeEvents, FakeNamespaces, FakeSecrets};
use wmco_cluster_client::{Namespaces, Seams, Secrets, Severity, Verb};
use wmco_user_data::{Platform, PublicKey, render_user_data};

use super::*;

const NAMESPACE: &str = "openshift-windows-machine-config-operator";
const ED25519: &str = include_str!("../../../user-data/tests/fixtures/ed25519-openssh.pem");
const RSA_2048: &str = include_str!("../../../user-data/tests/fixtures/rsa-2048-pkcs1.pem");
const RSA_1024: &str = include_str!("../../../user-data/tests/fixtures/rsa-1024-pkcs1.pem");
const AWS_GOLDEN: &str = include_str!("../../../user-data/tests/golden/aws.txt");

/// An API error with HTTP status `code`, as the cluster client reports it.
fn api_error(verb: Verb, kind: &'static str, name: &str, code: u16) -> wmco_cluster_client::Error {
    let status = kube::core::Status { code, message: "refused".into(), ..kube::core::Status::default() };
    wmco_cluster_client::Error::api(verb, kind, name, kube::Error::Api(Box::new(status)))
}

/// `Secrets` over [`FakeSecrets`] that counts GETs and applies, and answers 403 in the namespaces of `forbidden`.
#[derive(Default)]
struct CountingSecrets {
    inner: FakeSecrets,
    calls: Mutex<Vec<String>>,
    forbidden: Mutex<BTreeSet<String>>,
}

impl CountingSecrets {
    fn calls(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }

    fn forbid(&self, namespace: &str, forbidden: bool) {
        let mut namespaces = self.forbidden.lock().unwrap();
        if forbidden {
            namespaces.insert(namespace.to_owned());
        } else {
            namespaces.remove(namespace);
        }
    }

    fn refuses(&self, verb: Verb, namespace: &str, name: &str) -> wmco_cluster_client::Result<()> {
        match self.forbidden.lock().unwrap().contains(namespace) {
            true => Err(api_error(verb, "Secret", &format!("{namespace}/{name}"), 403)),
            false => Ok(()),
        }
    }

    async fn user_data_in(&self, namespace: &str) -> Option<String> {
        let secret = self.inner.get(namespace, USER_DATA_SECRET).await.unwrap()?;
        Some(String::from_utf8(secret.data.unwrap()[USER_DATA_KEY].0.clone()).unwrap())
    }

    async fn user_data(&self) -> Option<String> {
        self.user_data_in(USER_DATA_NAMESPACE).await
    }

    async fn mirror(&self) -> Option<String> {
        self.user_data_in(USER_DATA_MIRROR_NAMESPACE).await
    }
}

#[async_trait]
impl Secrets for CountingSecrets {
    async fn get(&self, namespace: &str, name: &str) -> wmco_cluster_client::Result<Option<Secret>> {
        self.calls.lock().unwrap().push(format!("get {namespace}/{name}"));
        self.refuses(Verb::Get, namespace, name)?;
        self.inner.get(namespace, name).await
    }

    async fn apply(&self, secret: &Secret) -> wmco_cluster_client::Result<Secret> {
        let (namespace, name) = (secret.namespace().unwrap_or_default(), secret.name_any());
        self.calls.lock().unwrap().push(format!("apply {namespace}/{name}"));
        self.refuses(Verb::Apply, &namespace, &name)?;
        self.inner.apply(secret).await
    }
}

/// `Namespaces` whose every answer is an API error with the HTTP status it holds.
struct FailingNamespaces(u16);

#[async_trait]
impl Namespaces for FailingNamespaces {
    async fn active(&self, name: &str) -> wmco_cluster_client::Result<bool> {
        Err(api_error(Verb::Get, "Namespace", name, self.0))
    }
}

struct Fixture {
    secrets: Arc<CountingSecrets>,
    namespaces: Arc<FakeNamespaces>,
    events: Arc<FakeEvents>,
    ctx: UserDataContext,
}

fn fixture(platform: Platform) -> Fixture {
    let secrets = Arc::new(CountingSecrets::default());
    let namespaces = Arc::new(FakeNamespaces::default());
    let events = Arc::new(FakeEvents::default());
    let settings = UserDataSettings { operator_namespace: NAMESPACE.to_owned(), platform };
    let seams = Seams {
        secrets: secrets.clone(),
        namespaces: namespaces.clone(),
        events: events.clone(),
        ..FakeCluster::default().seams()
    };
    let ctx = UserDataContext::new(&seams, settings);
    Fixture { secrets, namespaces, events, ctx }
}

fn key_secret(data: Option<(&str, &[u8])>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some("cloud-private-key".to_owned()),
            namespace: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: data.map(|(key, bytes)| BTreeMap::from([(key.to_owned(), ByteString(bytes.to_vec()))])),
        ..Secret::default()
    }
}

fn pem_secret(pem: &str) -> Secret {
    key_secret(Some(("private-key.pem", pem.as_bytes())))
}

/// The one Event published so far, which must be a Warning on Secret `cloud-private-key` with `reason` and `action`.
fn only_warning_on_the_key_secret(fixture: &Fixture, reason: &str, action: &str) -> wmco_cluster_client::NewEvent {
    let published = fixture.events.published();
    assert_eq!(published.len(), 1, "one Event per distinct problem: {published:?}");
    let (regarding, event) = &published[0];
    assert_eq!(
        (regarding.kind.as_deref(), regarding.namespace.as_deref(), regarding.name.as_deref()),
        (Some("Secret"), Some(NAMESPACE), Some("cloud-private-key"))
    );
    assert_eq!((event.severity, event.reason.as_str(), event.action.as_str()), (Severity::Warning, reason, action));
    event.clone()
}

fn hash_of(pem: &str) -> String {
    PublicKey::from_private_key_pem(pem).unwrap().pub_key_hash()
}

#[tokio::test]
async fn the_first_pass_creates_the_user_data_and_a_converged_pass_only_reads() {
    let fixture = fixture(Platform::Aws);
    let outcome = reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert_eq!(outcome, UserDataOutcome::Applied { replaced: false, pub_key_hash: hash_of(ED25519) });
    assert_eq!(
        fixture.secrets.calls(),
        ["get openshift-machine-api/windows-user-data", "apply openshift-machine-api/windows-user-data"]
    );
    assert_eq!(fixture.secrets.user_data().await.as_deref(), Some(AWS_GOLDEN));
    let stored = fixture.secrets.inner.get(USER_DATA_NAMESPACE, USER_DATA_SECRET).await.unwrap().unwrap();
    assert_eq!(stored.type_.as_deref(), Some("Opaque"));

    let outcome = reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert_eq!(outcome, UserDataOutcome::Unchanged);
    assert_eq!(fixture.secrets.calls(), ["get openshift-machine-api/windows-user-data"]);
    assert!(fixture.events.published().is_empty());
}

#[tokio::test]
async fn a_hand_edit_is_reverted() {
    let fixture = fixture(Platform::Aws);
    reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    fixture
        .secrets
        .inner
        .apply(&desired_user_data_secret(USER_DATA_NAMESPACE, "<powershell>evil</powershell>"))
        .await
        .unwrap();
    let outcome = reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert_eq!(outcome, UserDataOutcome::Applied { replaced: true, pub_key_hash: hash_of(ED25519) });
    assert_eq!(fixture.secrets.user_data().await.as_deref(), Some(AWS_GOLDEN));
}

#[tokio::test]
async fn a_new_key_replaces_the_user_data_for_the_platform() {
    let fixture = fixture(Platform::Gcp);
    reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    let outcome = reconcile_user_data(Some(&pem_secret(RSA_2048)), &fixture.ctx).await.unwrap();
    assert_eq!(outcome, UserDataOutcome::Applied { replaced: true, pub_key_hash: hash_of(RSA_2048) });
    let expected = render_user_data(&PublicKey::from_private_key_pem(RSA_2048).unwrap(), Platform::Gcp);
    assert_eq!(fixture.secrets.user_data().await, Some(expected));
}

#[tokio::test]
async fn a_weak_key_gives_one_warning_and_leaves_the_user_data_alone() {
    let fixture = fixture(Platform::Aws);
    reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    fixture.secrets.calls();
    for _ in 0..2 {
        let outcome = reconcile_user_data(Some(&pem_secret(RSA_1024)), &fixture.ctx).await.unwrap();
        assert!(matches!(outcome, UserDataOutcome::KeyRefused { .. }), "{outcome:?}");
    }
    assert_eq!(fixture.secrets.calls(), Vec::<String>::new(), "no read, no write for a refused key");
    assert_eq!(fixture.secrets.user_data().await.as_deref(), Some(AWS_GOLDEN));
    let event = only_warning_on_the_key_secret(&fixture, WEAK_KEY_REASON, "RenderUserData");
    assert_eq!(
        event.note.as_deref(),
        Some(
            "Secret cloud-private-key: RSA key of 1024 bits is shorter than the 2048 bits required; \
             openshift-machine-api/windows-user-data was not rendered from it. Replace the key (for example \
             `ssh-keygen -t ed25519`)"
        )
    );
}

#[tokio::test]
async fn unusable_keys_are_reported_without_key_material_and_a_fixed_key_recovers() {
    let fixture = fixture(Platform::None);
    let no_data = reconcile_user_data(Some(&key_secret(None)), &fixture.ctx).await.unwrap();
    assert_eq!(
        no_data,
        UserDataOutcome::KeyRefused {
            reason: "Secret cloud-private-key has no data key \"private-key.pem\"".to_owned()
        }
    );
    let truncated: String = ED25519.lines().take(3).collect::<Vec<_>>().join("\n");
    let outcome = reconcile_user_data(Some(&pem_secret(&truncated)), &fixture.ctx).await.unwrap();
    let UserDataOutcome::KeyRefused { reason } = outcome else { panic!("{outcome:?}") };
    assert!(reason.starts_with("Secret cloud-private-key: \"private-key.pem\" is not usable: not a key"), "{reason}");
    let reasons: Vec<String> = fixture.events.published().into_iter().map(|(_, event)| event.reason).collect();
    assert_eq!(reasons, [KEY_REFUSED_REASON, KEY_REFUSED_REASON]);
    for (_, event) in fixture.events.published() {
        assert!(!event.note.unwrap().contains(ED25519.lines().nth(1).unwrap()));
    }

    let outcome = reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert!(matches!(outcome, UserDataOutcome::Applied { replaced: false, .. }), "{outcome:?}");
    reconcile_user_data(Some(&key_secret(None)), &fixture.ctx).await.unwrap();
    assert_eq!(fixture.events.published().len(), 3, "a problem seen again after a recovery is published again");
}

#[tokio::test]
async fn without_a_key_secret_nothing_is_read_or_written() {
    let fixture = fixture(Platform::Aws);
    assert_eq!(reconcile_user_data(None, &fixture.ctx).await.unwrap(), UserDataOutcome::NoKey);
    assert_eq!(fixture.secrets.calls(), Vec::<String>::new());
}

#[tokio::test]
async fn the_user_data_is_mirrored_while_openshift_cluster_api_exists_and_hand_edits_there_are_reverted() {
    let fixture = fixture(Platform::Aws);
    fixture.namespaces.insert(USER_DATA_MIRROR_NAMESPACE);
    let outcome = reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert_eq!(outcome, UserDataOutcome::Applied { replaced: false, pub_key_hash: hash_of(ED25519) });
    assert_eq!(
        fixture.secrets.calls(),
        [
            "get openshift-machine-api/windows-user-data",
            "apply openshift-machine-api/windows-user-data",
            "get openshift-cluster-api/windows-user-data",
            "apply openshift-cluster-api/windows-user-data",
        ]
    );
    assert_eq!(fixture.secrets.mirror().await.as_deref(), Some(AWS_GOLDEN));
    let mirror = fixture.secrets.inner.get(USER_DATA_MIRROR_NAMESPACE, USER_DATA_SECRET).await.unwrap().unwrap();
    assert_eq!(mirror.type_.as_deref(), Some("Opaque"));

    assert_eq!(
        reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap(),
        UserDataOutcome::Unchanged
    );
    assert_eq!(
        fixture.secrets.calls(),
        ["get openshift-machine-api/windows-user-data", "get openshift-cluster-api/windows-user-data"],
        "a converged pass only reads"
    );

    let edit = desired_user_data_secret(USER_DATA_MIRROR_NAMESPACE, "<powershell>evil</powershell>");
    fixture.secrets.inner.apply(&edit).await.unwrap();
    assert_eq!(
        reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap(),
        UserDataOutcome::Unchanged
    );
    assert_eq!(fixture.secrets.mirror().await.as_deref(), Some(AWS_GOLDEN), "the hand edit is reverted");

    reconcile_user_data(Some(&pem_secret(RSA_2048)), &fixture.ctx).await.unwrap();
    let rotated = render_user_data(&PublicKey::from_private_key_pem(RSA_2048).unwrap(), Platform::Aws);
    assert_eq!(fixture.secrets.user_data().await.as_ref(), Some(&rotated));
    assert_eq!(fixture.secrets.mirror().await, Some(rotated), "a new key reaches the mirror too");
    assert!(fixture.events.published().is_empty());

    fixture.namespaces.remove(USER_DATA_MIRROR_NAMESPACE);
    fixture.secrets.calls();
    reconcile_user_data(Some(&pem_secret(RSA_2048)), &fixture.ctx).await.unwrap();
    assert_eq!(fixture.secrets.calls(), ["get openshift-machine-api/windows-user-data"], "no namespace, no mirror");
}

#[tokio::test]
async fn a_mirror_namespace_created_later_is_found_by_the_next_pass() {
    let fixture = fixture(Platform::None);
    reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert_eq!(fixture.secrets.mirror().await, None);
    fixture.namespaces.insert(USER_DATA_MIRROR_NAMESPACE);
    assert_eq!(
        reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap(),
        UserDataOutcome::Unchanged
    );
    assert_eq!(fixture.secrets.mirror().await, fixture.secrets.user_data().await);
}

#[tokio::test]
async fn a_forbidden_mirror_is_one_warning_naming_the_component_not_an_error() {
    let fixture = fixture(Platform::Aws);
    fixture.namespaces.insert(USER_DATA_MIRROR_NAMESPACE);
    fixture.secrets.forbid(USER_DATA_MIRROR_NAMESPACE, true);
    for _ in 0..2 {
        let outcome = reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
        assert!(matches!(outcome, UserDataOutcome::Applied { .. } | UserDataOutcome::Unchanged), "{outcome:?}");
    }
    assert_eq!(fixture.secrets.user_data().await.as_deref(), Some(AWS_GOLDEN), "openshift-machine-api is kept");
    let event = only_warning_on_the_key_secret(&fixture, MIRROR_FORBIDDEN_REASON, "MirrorUserData");
    let note = event.note.as_deref().unwrap();
    assert!(note.starts_with("the operator may not read Secret openshift-cluster-api/windows-user-data"), "{note}");
    assert!(note.contains("include the kustomize component manifests/components/cluster-api"), "{note}");

    fixture.secrets.forbid(USER_DATA_MIRROR_NAMESPACE, false);
    reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert_eq!(fixture.secrets.mirror().await.as_deref(), Some(AWS_GOLDEN), "mirrored once the Role exists");
    fixture.secrets.forbid(USER_DATA_MIRROR_NAMESPACE, true);
    reconcile_user_data(Some(&pem_secret(ED25519)), &fixture.ctx).await.unwrap();
    assert_eq!(fixture.events.published().len(), 2, "refused again after a success: published again");
}

#[tokio::test]
async fn the_mirror_namespace_lookup_forbidden_is_a_warning_and_failing_is_an_error() {
    let fixture = fixture(Platform::Aws);
    let seams = Seams {
        secrets: fixture.secrets.clone(),
        namespaces: Arc::new(FailingNamespaces(403)),
        events: fixture.events.clone(),
        ..FakeCluster::default().seams()
    };
    let settings = UserDataSettings { operator_namespace: NAMESPACE.to_owned(), platform: Platform::Aws };
    let forbidden = UserDataContext::new(&seams, settings.clone());
    reconcile_user_data(Some(&pem_secret(ED25519)), &forbidden).await.unwrap();
    let notes: Vec<String> = fixture.events.published().into_iter().filter_map(|(_, event)| event.note).collect();
    assert_eq!(notes.len(), 1);
    assert!(notes[0].starts_with("the operator may not get Namespace openshift-cluster-api"), "{}", notes[0]);
    assert!(notes[0].contains("ClusterRole windows-machine-config-operator"), "{}", notes[0]);

    let failing = UserDataContext::new(&Seams { namespaces: Arc::new(FailingNamespaces(500)), ..seams }, settings);
    let error = reconcile_user_data(Some(&pem_secret(ED25519)), &failing).await.unwrap_err();
    assert_eq!(error.to_string(), "looking up Namespace openshift-cluster-api failed");
    assert_eq!(crate::runtime::ReconcilerError::metric_label(&error), "user_data_namespace");
}
