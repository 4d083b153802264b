//! Fuzz target: the PEM + PKCS#10 parsing path of the CSR approver (`ParsedRequest::from_pem`, `from_der`, and
//! signature verification), which reads attacker-chosen bytes from `spec.request`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wmco_csr_approver::ParsedRequest;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = ParsedRequest::from_pem(data) {
        let _ = request.verify_signature();
    }
    if let Ok(request) = ParsedRequest::from_der(data.to_vec()) {
        assert_eq!(request.der(), data);
        let _ = request.verify_signature();
    }
});
