//! Fixtures the fleet controller's tests share: the operator key in its Secret, and a key check every host passes.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use wmco_cluster_client::types::WindowsInstance;
use wmco_ssh_transport::PrivateKey;
use wmco_user_data::PublicKey;

use super::{KeyCheckFailure, KeyChecker};
use crate::operator_key::{PRIVATE_KEY_DATA_KEY, PRIVATE_KEY_SECRET};

/// An Ed25519 PKCS#8 key (RFC 8410 test vector): the operator's current key.
pub(crate) const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n";

/// The public half of [`TEST_KEY`].
pub(crate) fn test_public_key() -> PublicKey {
    PublicKey::from_private_key_pem(TEST_KEY).unwrap()
}

/// The `pub-key-hash` of [`TEST_KEY`].
pub(crate) fn test_key_hash() -> String {
    test_public_key().pub_key_hash()
}

/// Secret `cloud-private-key` in `namespace` holding [`TEST_KEY`].
pub(crate) fn key_secret(namespace: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(PRIVATE_KEY_SECRET.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(PRIVATE_KEY_DATA_KEY.to_owned(), ByteString(TEST_KEY.as_bytes().to_vec()))])),
        ..Secret::default()
    }
}

/// A [`KeyChecker`] every host accepts.
pub(crate) struct AcceptingKeys;

#[async_trait]
impl KeyChecker for AcceptingKeys {
    async fn check(&self, _instance: &WindowsInstance, _key: &PrivateKey) -> Result<(), KeyCheckFailure> {
        Ok(())
    }
}
