//! One certificate request as client-go's `csr.RequestCertificate` + `WaitForCertificate` make it: `POST` a
//! `CertificateSigningRequest` (`generateName: csr-`), then `LIST`+`WATCH` it by `metadata.name`, checking the UID,
//! failing on `Denied`/`Failed` or deletion, waiting while it is approved but unsigned (kubelet-bootstrap.md §1.2).

use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;

/// Signer of kubelet client certificates.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Signer of kubelet serving certificates.
pub const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// Usages of a client request with an ECDSA key.
pub(crate) const CLIENT_USAGES: [&str; 2] = ["digital signature", "client auth"];
/// Usages of a serving request with an ECDSA key.
pub(crate) const SERVING_USAGES: [&str; 2] = ["digital signature", "server auth"];

/// Why one request attempt ended without a certificate.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CsrProblem {
    #[error("cannot create certificate signing request: {0}")]
    Create(#[source] kube::Error),
    #[error("certificate signing request {name} exists and is not compatible: {reason}")]
    Incompatible { name: String, reason: String },
    #[error("certificate signing request {name} came back without a name or UID")]
    Incomplete { name: String },
    #[error("certificate signing request {name} is denied, reason: {reason}, message: {message}")]
    Denied { name: String, reason: String, message: String },
    #[error("certificate signing request {name} failed, reason: {reason}, message: {message}")]
    Failed { name: String, reason: String, message: String },
    #[error("certificate signing request {name} was deleted while waiting for its certificate")]
    Deleted { name: String },
    #[error("watch of certificate signing request {name} failed: {message}")]
    Watch { name: String, message: String },
    #[error("timed out after {waited:?} waiting for certificate signing request {name} to be signed")]
    Timeout { name: String, waited: Duration },
}

/// Creates a request on `signer` (named `csr-<random>`, or exactly `fixed_name`), tells `on_created` its name,
/// and waits up to `wait` for its certificate (PEM). Returns the request's name and the certificate.
///
/// With a fixed name that already exists, the existing request is waited on instead if it is compatible: same
/// subject and public key in its PKCS#10 request, same signer, and no expired certificate attached (client-go's
/// `ensureCompatible`).
pub(crate) async fn request_certificate(
    client: &kube::Client,
    signer: &str,
    usages: &[&str],
    request_pem: &str,
    fixed_name: Option<&str>,
    wait: Duration,
    on_created: impl FnOnce(&str),
) -> Result<(String, String), CsrProblem> {
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    let metadata = match fixed_name {
        Some(name) => ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        None => ObjectMeta { generate_name: Some("csr-".to_owned()), ..ObjectMeta::default() },
    };
    let object = CertificateSigningRequest {
        metadata,
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.as_bytes().to_vec()),
            signer_name: signer.to_owned(),
            usages: Some(usages.iter().map(|usage| (*usage).to_owned()).collect()),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    };
    let created = match (api.create(&PostParams::default(), &object).await, fixed_name) {
        (Ok(created), _) => created,
        (Err(kube::Error::Api(status)), Some(name)) if status.code == 409 => {
            let existing = api.get(name).await.map_err(CsrProblem::Create)?;
            ensure_compatible(&object, &existing)
                .map_err(|reason| CsrProblem::Incompatible { name: name.to_owned(), reason })?;
            existing
        }
        (Err(error), _) => return Err(CsrProblem::Create(error)),
    };
    let name = created.metadata.name.clone().unwrap_or_default();
    let uid = created.metadata.uid.clone().ok_or_else(|| CsrProblem::Incomplete { name: name.clone() })?;
    if name.is_empty() {
        return Err(CsrProblem::Incomplete { name });
    }
    on_created(&name);
    let certificate = tokio::time::timeout(wait, wait_for_certificate(&api, &name, &uid))
        .await
        .map_err(|_| CsrProblem::Timeout { name: name.clone(), waited: wait })??;
    Ok((name, certificate))
}

/// Whether `existing` can stand for `wanted`: same request subject and public key, same signer, no expired
/// certificate.
fn ensure_compatible(wanted: &CertificateSigningRequest, existing: &CertificateSigningRequest) -> Result<(), String> {
    let wanted_request = parse_request(&wanted.spec.request.0)?;
    let existing_request = parse_request(&existing.spec.request.0)?;
    if wanted_request.0 != existing_request.0 {
        return Err("csr subjects differ".to_owned());
    }
    if wanted_request.1 != existing_request.1 {
        return Err("public key does not match".to_owned());
    }
    if wanted.spec.signer_name != existing.spec.signer_name {
        return Err(format!(
            "csr signerNames differ: {:?} != {:?}",
            existing.spec.signer_name, wanted.spec.signer_name
        ));
    }
    let attached = existing.status.as_ref().and_then(|status| status.certificate.as_ref());
    if let Some(certificate) = attached.filter(|certificate| !certificate.0.is_empty()) {
        let expired = x509_parser::pem::Pem::iter_from_buffer(&certificate.0)
            .filter_map(Result::ok)
            .filter_map(|pem| pem.parse_x509().ok().map(|parsed| parsed.validity().time_to_expiration().is_none()))
            .any(|expired| expired);
        if expired {
            return Err("the attached certificate has expired".to_owned());
        }
    }
    Ok(())
}

/// The subject (text) and public key (SPKI bytes) of a PEM PKCS#10 request.
fn parse_request(pem: &[u8]) -> Result<(String, Vec<u8>), String> {
    use x509_parser::prelude::FromDer as _;
    let (_, block) = x509_parser::pem::parse_x509_pem(pem).map_err(|error| format!("request PEM: {error}"))?;
    let (_, request) = x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
        .map_err(|error| format!("request: {error}"))?;
    let info = &request.certification_request_info;
    Ok((info.subject.to_string(), info.subject_pki.raw.to_vec()))
}

async fn wait_for_certificate(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    uid: &str,
) -> Result<String, CsrProblem> {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher(api.clone(), config).boxed();
    while let Some(event) = events.next().await {
        let event = event.map_err(|error| CsrProblem::Watch { name: name.to_owned(), message: error.to_string() })?;
        match event {
            watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                if object.metadata.uid.as_deref() != Some(uid) {
                    return Err(CsrProblem::Deleted { name: name.to_owned() });
                }
                if let Some(certificate) = decide(name, &object)? {
                    return Ok(certificate);
                }
            }
            watcher::Event::Delete(object) if object.metadata.uid.as_deref() == Some(uid) => {
                return Err(CsrProblem::Deleted { name: name.to_owned() });
            }
            watcher::Event::Delete(_) | watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }
    Err(CsrProblem::Watch { name: name.to_owned(), message: "the watch ended".to_owned() })
}

/// `Some(certificate)` once approved and signed, an error when denied or failed, `None` while waiting.
fn decide(name: &str, object: &CertificateSigningRequest) -> Result<Option<String>, CsrProblem> {
    let Some(status) = &object.status else { return Ok(None) };
    let mut approved = false;
    for condition in status.conditions.iter().flatten() {
        let reason = condition.reason.clone().unwrap_or_default();
        let message = condition.message.clone().unwrap_or_default();
        match condition.type_.as_str() {
            "Denied" => return Err(CsrProblem::Denied { name: name.to_owned(), reason, message }),
            "Failed" => return Err(CsrProblem::Failed { name: name.to_owned(), reason, message }),
            "Approved" => approved = true,
            _ => {}
        }
    }
    match &status.certificate {
        Some(certificate) if approved && !certificate.0.is_empty() => {
            Ok(Some(String::from_utf8_lossy(&certificate.0).into_owned()))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::certificates::v1::{CertificateSigningRequestCondition, CertificateSigningRequestStatus};

    use super::*;

    fn with(conditions: &[(&str, &str)], certificate: Option<&str>) -> CertificateSigningRequest {
        CertificateSigningRequest {
            status: Some(CertificateSigningRequestStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(type_, reason)| CertificateSigningRequestCondition {
                            type_: (*type_).to_owned(),
                            status: "True".to_owned(),
                            reason: Some((*reason).to_owned()),
                            message: Some("m".to_owned()),
                            ..CertificateSigningRequestCondition::default()
                        })
                        .collect(),
                ),
                certificate: certificate.map(|pem| ByteString(pem.as_bytes().to_vec())),
            }),
            ..CertificateSigningRequest::default()
        }
    }

    #[test]
    fn approved_and_signed_yields_the_certificate() {
        assert_eq!(decide("csr-a", &with(&[("Approved", "ok")], Some("PEM"))).unwrap(), Some("PEM".to_owned()));
    }

    #[test]
    fn pending_or_approved_without_certificate_keeps_waiting() {
        assert_eq!(decide("csr-a", &CertificateSigningRequest::default()).unwrap(), None);
        assert_eq!(decide("csr-a", &with(&[("Approved", "ok")], None)).unwrap(), None);
        assert_eq!(decide("csr-a", &with(&[], Some("PEM"))).unwrap(), None);
    }

    fn request_object(node: &str, key: &rcgen::KeyPair, signer: &str) -> CertificateSigningRequest {
        let generated = crate::certs::request_with_key(key, node, &crate::certs::SubjectAltNames::default()).unwrap();
        CertificateSigningRequest {
            spec: CertificateSigningRequestSpec {
                request: ByteString(generated.request_pem.into_bytes()),
                signer_name: signer.to_owned(),
                ..CertificateSigningRequestSpec::default()
            },
            ..CertificateSigningRequest::default()
        }
    }

    #[test]
    fn an_existing_request_is_reused_only_when_compatible() {
        let key = crate::certs::generate_key().unwrap();
        let wanted = request_object("win-a", &key, CLIENT_SIGNER);
        assert_eq!(ensure_compatible(&wanted, &request_object("win-a", &key, CLIENT_SIGNER)), Ok(()));
        assert_eq!(
            ensure_compatible(&wanted, &request_object("win-b", &key, CLIENT_SIGNER)),
            Err("csr subjects differ".to_owned())
        );
        let other_key = crate::certs::generate_key().unwrap();
        assert_eq!(
            ensure_compatible(&wanted, &request_object("win-a", &other_key, CLIENT_SIGNER)),
            Err("public key does not match".to_owned())
        );
        assert!(ensure_compatible(&wanted, &request_object("win-a", &key, SERVING_SIGNER)).is_err());
    }

    #[test]
    fn denied_and_failed_end_the_attempt() {
        assert_eq!(
            decide("csr-a", &with(&[("Denied", "NotMine")], None)).unwrap_err().to_string(),
            "certificate signing request csr-a is denied, reason: NotMine, message: m"
        );
        assert!(matches!(
            decide("csr-a", &with(&[("Approved", "ok"), ("Failed", "SignerValidationFailure")], None)),
            Err(CsrProblem::Failed { .. })
        ));
    }
}
