//! Reading kubelet CSRs in e2e assertions: the subject a PKCS#10 request names, and a decided condition.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;

/// The (reason, message) of the CSR's condition `kind` (`Approved`, `Denied`, `Failed`) when its status is True.
///
/// ```
/// let csr: k8s_openapi::api::certificates::v1::CertificateSigningRequest = serde_json::from_value(serde_json::json!({
///     "metadata": {"name": "csr-1"},
///     "spec": {"request": "", "signerName": "kubernetes.io/kube-apiserver-client-kubelet"},
///     "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "AllRulesPassed"}]}
/// }))?;
/// assert_eq!(wmco_sandbox::csr::true_condition(&csr, "Approved"), Some(("AllRulesPassed".into(), String::new())));
/// assert_eq!(wmco_sandbox::csr::true_condition(&csr, "Denied"), None);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn true_condition(csr: &CertificateSigningRequest, kind: &str) -> Option<(String, String)> {
    csr.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == kind && condition.status == "True")
        .map(|condition| (condition.reason.clone().unwrap_or_default(), condition.message.clone().unwrap_or_default()))
}

/// The subject CN of a PEM PKCS#10 request (`system:node:<name>` for a kubelet), if the request parses and has one.
///
/// ```
/// let pem = b"-----BEGIN CERTIFICATE REQUEST-----\nnot base64\n-----END CERTIFICATE REQUEST-----\n";
/// assert_eq!(wmco_sandbox::csr::subject_common_name(pem), None);
/// ```
pub fn subject_common_name(request_pem: &[u8]) -> Option<String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(request_pem).ok()?;
    let (_, request) =
        <x509_parser::certification_request::X509CertificationRequest as x509_parser::prelude::FromDer<_>>::from_der(
            &pem.contents,
        )
        .ok()?;
    let common_name = request.certification_request_info.subject.iter_common_name().next()?;
    common_name.as_str().ok().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_request_names_its_subject() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name.push(rcgen::DnType::CommonName, "system:node:win-1");
        let request = params.serialize_request(&key).unwrap().pem().unwrap();
        assert_eq!(subject_common_name(request.as_bytes()).as_deref(), Some("system:node:win-1"));
    }
}
