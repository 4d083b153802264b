//! When the kubelet renews a certificate: at a uniformly random point between 70 % and 90 % of its lifetime,
//! measured from its (backdated) `NotBefore` (`jitteryDuration` in client-go's certificate manager;
//! kubelet-bootstrap.md §2), for client and serving certificates alike.

use std::time::Duration;

use jiff::Timestamp;

/// A fraction of the lifetime drawn uniformly from [0.7, 0.9).
pub(crate) fn jittered_fraction() -> f64 {
    0.7 + 0.2 * rand::random::<f64>()
}

/// The renewal time of the first certificate in `pem` at `fraction` of its lifetime; `None` if there is none.
pub(crate) fn deadline(pem: &[u8], fraction: f64) -> Option<Timestamp> {
    let block = x509_parser::pem::Pem::iter_from_buffer(pem)
        .filter_map(Result::ok)
        .find(|block| block.label == "CERTIFICATE")?;
    let certificate = block.parse_x509().ok()?;
    let not_before = certificate.validity().not_before.timestamp();
    let not_after = certificate.validity().not_after.timestamp();
    deadline_between(not_before, not_after, fraction)
}

/// `not_before + (not_after - not_before) × fraction`, in Unix seconds; `None` for an empty or negative lifetime or
/// a fraction outside [0, 1].
fn deadline_between(not_before: i64, not_after: i64, fraction: f64) -> Option<Timestamp> {
    let lifetime = not_after.checked_sub(not_before).filter(|lifetime| *lifetime > 0)?;
    if !(0.0..=1.0).contains(&fraction) {
        return None;
    }
    let offset = jiff::SignedDuration::from_secs(lifetime).mul_f64(fraction);
    Timestamp::from_second(not_before).ok()?.checked_add(offset).ok()
}

/// Sleeps until `deadline` (returns at once if it has passed).
pub(crate) async fn sleep_until(deadline: Timestamp) {
    let remaining = deadline.duration_since(Timestamp::now());
    if let Ok(remaining) = Duration::try_from(remaining) {
        tokio::time::sleep(remaining).await;
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, KeyPair};

    use super::*;

    #[test]
    fn the_deadline_lies_at_the_fraction_of_the_lifetime() {
        assert_eq!(deadline_between(1_000, 2_000, 0.7), Timestamp::from_second(1_700).ok());
        assert_eq!(deadline_between(1_000, 2_000, 0.9), Timestamp::from_second(1_900).ok());
        assert_eq!(deadline_between(2_000, 1_000, 0.7), None);
        assert_eq!(deadline_between(1_000, 2_000, f64::NAN), None);
    }

    #[test]
    fn jittered_fractions_stay_between_70_and_90_percent() {
        for _ in 0..1_000 {
            let fraction = jittered_fraction();
            assert!((0.7..0.9).contains(&fraction), "{fraction}");
        }
    }

    #[test]
    fn the_deadline_of_a_pem_certificate_uses_its_validity() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["x".to_owned()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2030, 1, 1);
        params.not_after = rcgen::date_time_ymd(2030, 1, 11);
        let pem = params.self_signed(&key).unwrap().pem();
        let start = Timestamp::from_second(1_893_456_000).unwrap();
        assert_eq!(deadline(pem.as_bytes(), 0.8), Some(start + jiff::SignedDuration::from_hours(192)));
        assert_eq!(deadline(b"no certificate", 0.8), None);
    }
}
