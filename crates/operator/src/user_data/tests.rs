//! Reconcile scenarios over the cluster-client fakes with real keys (the `wmco-user-data` test fixtures): first
//! render, converged pass, hand edit reverted, key rotation, weak and unusable keys.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::ObjectMeta;
use wmco_cluster_client::fake::{FakeCluster, FakeEvents, FakeSecrets};
use wmco_cluster_client::{Seams, Secrets, Severity};
use wmco_user_data::{Platform, PublicKey, render_user_data};

use super::*;

const NAMESPACE: &str = "openshift-windows-machine-config-operator";
const ED25519: &str = include_str!("../../../user-data/tests/fixtures/ed25519-openssh.pem");
const RSA_2048: &str = include_str!("../../../user-data/tests/fixtures/rsa-2048-pkcs1.pem");
const RSA_1024: &str = include_str!("../../../user-data/tests/fixtures/rsa-1024-pkcs1.pem");
const AWS_GOLDEN: &str = include_str!("../../../user-data/tests/golden/aws.txt");

/// `Secrets` over [`FakeSecrets`] that counts GETs and applies.
#[derive(Default)]
struct CountingSecrets {
    inner: FakeSecrets,
    calls: Mutex<Vec<String>>,
}

impl CountingSecrets {
    fn calls(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }

    async fn user_data(&self) -> Option<String> {
        let secret = self.inner.get(USER_DATA_NAMESPACE, USER_DATA_SECRET).await.unwrap()?;
        Some(String::from_utf8(secret.data.unwrap()[USER_DATA_KEY].0.clone()).unwrap())
    }
}

#[async_trait]
impl Secrets for CountingSecrets {
    async fn get(&self, namespace: &str, name: &str) -> wmco_cluster_client::Result<Option<Secret>> {
        self.calls.lock().unwrap().push(format!("get {namespace}/{name}"));
        self.inner.get(namespace, name).await
    }

    async fn apply(&self, secret: &Secret) -> wmco_cluster_client::Result<Secret> {
        self.calls.lock().unwrap().push(format!(
            "apply {}/{}",
            secret.namespace().unwrap_or_default(),
            secret.name_any()
        ));
        self.inner.apply(secret).await
    }
}

struct Fixture {
    secrets: Arc<CountingSecrets>,
    events: Arc<FakeEvents>,
    ctx: UserDataContext,
}

fn fixture(platform: Platform) -> Fixture {
    let secrets = Arc::new(CountingSecrets::default());
    let events = Arc::new(FakeEvents::default());
    let settings = UserDataSettings { operator_namespace: NAMESPACE.to_owned(), platform };
    let seams = Seams { secrets: secrets.clone(), events: events.clone(), ..FakeCluster::default().seams() };
    let ctx = UserDataContext::new(&seams, settings);
    Fixture { secrets, events, ctx }
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
    fixture.secrets.inner.apply(&desired_user_data_secret("<powershell>evil</powershell>")).await.unwrap();
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
    let published = fixture.events.published();
    assert_eq!(published.len(), 1, "one Event per distinct problem: {published:?}");
    let (regarding, event) = &published[0];
    assert_eq!(
        (regarding.kind.as_deref(), regarding.namespace.as_deref(), regarding.name.as_deref()),
        (Some("Secret"), Some(NAMESPACE), Some("cloud-private-key"))
    );
    assert_eq!(
        (event.severity, event.reason.as_str(), event.action.as_str()),
        (Severity::Warning, WEAK_KEY_REASON, "RenderUserData")
    );
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
