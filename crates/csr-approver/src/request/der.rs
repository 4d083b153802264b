//! A strict DER reader for the outer shape of a PKCS#10 request: definite minimal lengths, single-byte tags, and
//! the structural checks of rule B1 (no trailing bytes, version 0, only an `extensionRequest` attribute).

use super::EncodingDefect;

/// DER tag of SEQUENCE (constructed).
const TAG_SEQUENCE: u8 = 0x30;
/// DER tag of SET (constructed).
const TAG_SET: u8 = 0x31;
/// DER tag of INTEGER.
const TAG_INTEGER: u8 = 0x02;
/// DER tag of OBJECT IDENTIFIER.
const TAG_OID: u8 = 0x06;
/// DER tag of BIT STRING.
const TAG_BIT_STRING: u8 = 0x03;
/// Context-specific constructed tag [0], the CRI attributes.
const TAG_ATTRIBUTES: u8 = 0xa0;
/// Content octets of OID 1.2.840.113549.1.9.14 (PKCS#9 extensionRequest).
const OID_EXTENSION_REQUEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e];

/// One DER element: its tag, its content octets, and the whole encoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Element<'a> {
    pub(crate) tag: u8,
    pub(crate) content: &'a [u8],
    pub(crate) encoding: &'a [u8],
}

/// Why bytes are not a DER element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementError {
    /// Fewer bytes than the header or the length announces.
    Truncated,
    /// A multi-byte tag, an indefinite length, or a length that is not minimally encoded.
    NotDer,
}

/// Reads one element from the front of `input`, returning it and the bytes after it.
pub(crate) fn read_element(input: &[u8]) -> Result<(Element<'_>, &[u8]), ElementError> {
    let (&tag, after_tag) = input.split_first().ok_or(ElementError::Truncated)?;
    if tag & 0x1f == 0x1f {
        return Err(ElementError::NotDer);
    }
    let (&first_length_byte, after_first) = after_tag.split_first().ok_or(ElementError::Truncated)?;
    let (length, after_length) = if first_length_byte < 0x80 {
        (usize::from(first_length_byte), after_first)
    } else {
        let count = usize::from(first_length_byte & 0x7f);
        if count == 0 || count > 4 {
            return Err(ElementError::NotDer);
        }
        let length_bytes = after_first.get(..count).ok_or(ElementError::Truncated)?;
        if length_bytes[0] == 0 {
            return Err(ElementError::NotDer);
        }
        let length = length_bytes.iter().fold(0usize, |length, byte| (length << 8) | usize::from(*byte));
        if length < 0x80 {
            return Err(ElementError::NotDer);
        }
        (length, &after_first[count..])
    };
    let content = after_length.get(..length).ok_or(ElementError::Truncated)?;
    let header_length = input.len() - after_length.len();
    let element = Element { tag, content, encoding: &input[..header_length + length] };
    Ok((element, &after_length[length..]))
}

fn expect_element<'a>(input: &'a [u8], tag: u8, what: &'static str) -> Result<(Element<'a>, &'a [u8]), EncodingDefect> {
    let (element, rest) = read_element(input).map_err(|_| EncodingDefect::MalformedDer { what })?;
    if element.tag == tag { Ok((element, rest)) } else { Err(EncodingDefect::MalformedDer { what }) }
}

/// DER of NULL.
const DER_NULL: &[u8] = &[0x05, 0x00];
/// Content octets of ecdsa-with-SHA256, -SHA384 and -SHA512 (1.2.840.10045.4.3.2–4).
const OID_ECDSA_SIGNATURES: [&[u8]; 3] = [
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02],
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03],
    &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04],
];
/// Content octets of sha256/384/512WithRSAEncryption (1.2.840.113549.1.1.11–13).
const OID_RSA_SIGNATURES: [&[u8]; 3] = [
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b],
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c],
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d],
];
/// Content octets of rsaEncryption (1.2.840.113549.1.1.1).
const OID_RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// Content octets of id-ecPublicKey (1.2.840.10045.2.1).
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

/// The first parts of a request, located strictly enough to read the subject.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outline<'a> {
    /// The subject Name, whole encoding.
    pub(crate) subject: &'a [u8],
}

/// Locates the subject: `SEQUENCE { SEQUENCE { INTEGER, Name, … } … }`.
pub(crate) fn outline(der: &[u8]) -> Result<Outline<'_>, EncodingDefect> {
    let (request, _) = expect_element(der, TAG_SEQUENCE, "CertificationRequest")?;
    let (info, _) = expect_element(request.content, TAG_SEQUENCE, "CertificationRequestInfo")?;
    let (_, after_version) = expect_element(info.content, TAG_INTEGER, "version")?;
    let (subject, _) = expect_element(after_version, TAG_SEQUENCE, "subject")?;
    Ok(Outline { subject: subject.encoding })
}

/// Every structural defect of rule B1 that the DER shows, in the order met.
pub(crate) fn structural_defects(der: &[u8]) -> Vec<EncodingDefect> {
    match check_structure(der) {
        Ok(defects) => defects,
        Err(defect) => vec![defect],
    }
}

fn check_structure(der: &[u8]) -> Result<Vec<EncodingDefect>, EncodingDefect> {
    let mut defects = Vec::new();
    let (request, after_request) = expect_element(der, TAG_SEQUENCE, "CertificationRequest")?;
    if !after_request.is_empty() {
        defects.push(EncodingDefect::TrailingDer { count: after_request.len() });
    }
    let (info, rest) = expect_element(request.content, TAG_SEQUENCE, "CertificationRequestInfo")?;
    let (signature_algorithm, rest) = expect_element(rest, TAG_SEQUENCE, "signatureAlgorithm")?;
    let (algorithm, parameters) = algorithm_identifier(signature_algorithm, "signatureAlgorithm")?;
    if !signature_parameters_are_canonical(algorithm, parameters) {
        defects.push(EncodingDefect::AlgorithmParameters { what: "signatureAlgorithm" });
    }
    let (signature, rest) = expect_element(rest, TAG_BIT_STRING, "signature")?;
    check_whole_octets(signature, "signature", &mut defects);
    if !rest.is_empty() {
        return Err(EncodingDefect::MalformedDer { what: "CertificationRequest (extra fields)" });
    }
    let (version, rest) = expect_element(info.content, TAG_INTEGER, "version")?;
    if version.content != [0] {
        defects.push(EncodingDefect::Version);
    }
    let (_, rest) = expect_element(rest, TAG_SEQUENCE, "subject")?;
    let (public_key_info, rest) = expect_element(rest, TAG_SEQUENCE, "subjectPKInfo")?;
    let (key_algorithm, after_algorithm) =
        expect_element(public_key_info.content, TAG_SEQUENCE, "subjectPKInfo algorithm")?;
    let (algorithm, parameters) = algorithm_identifier(key_algorithm, "subjectPKInfo algorithm")?;
    if !key_parameters_are_canonical(algorithm, parameters) {
        defects.push(EncodingDefect::AlgorithmParameters { what: "subjectPKInfo algorithm" });
    }
    let (public_key, after_key) = expect_element(after_algorithm, TAG_BIT_STRING, "subjectPublicKey")?;
    if !after_key.is_empty() {
        return Err(EncodingDefect::MalformedDer { what: "subjectPKInfo (extra fields)" });
    }
    check_whole_octets(public_key, "subjectPublicKey", &mut defects);
    if rest.is_empty() {
        return Ok(defects);
    }
    let (attributes, rest) = expect_element(rest, TAG_ATTRIBUTES, "attributes")?;
    if !rest.is_empty() {
        return Err(EncodingDefect::MalformedDer { what: "CertificationRequestInfo (extra fields)" });
    }
    check_attributes(attributes.content, &mut defects)?;
    Ok(defects)
}

/// `AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }`: the OID content
/// octets and the parameters' whole encoding (empty when absent).
fn algorithm_identifier<'a>(
    identifier: Element<'a>,
    what: &'static str,
) -> Result<(&'a [u8], &'a [u8]), EncodingDefect> {
    let (algorithm, parameters) = expect_element(identifier.content, TAG_OID, what)?;
    if !parameters.is_empty() {
        let (_, after_parameters) = read_element(parameters).map_err(|_| EncodingDefect::MalformedDer { what })?;
        if !after_parameters.is_empty() {
            return Err(EncodingDefect::MalformedDer { what });
        }
    }
    Ok((algorithm.content, parameters))
}

/// ECDSA signatures take no parameters (RFC 5758); RSA PKCS#1 v1.5 signatures take NULL or none (RFC 4055). The
/// outer signatureAlgorithm is not signed, so any other bytes there would change the request without detection.
fn signature_parameters_are_canonical(algorithm: &[u8], parameters: &[u8]) -> bool {
    if OID_ECDSA_SIGNATURES.contains(&algorithm) {
        parameters.is_empty()
    } else if OID_RSA_SIGNATURES.contains(&algorithm) {
        parameters.is_empty() || parameters == DER_NULL
    } else {
        true
    }
}

/// rsaEncryption keys carry NULL parameters (RFC 3279); EC keys a named-curve OID (RFC 5480).
fn key_parameters_are_canonical(algorithm: &[u8], parameters: &[u8]) -> bool {
    if algorithm == OID_RSA_ENCRYPTION {
        parameters == DER_NULL
    } else if algorithm == OID_EC_PUBLIC_KEY {
        parameters.first() == Some(&TAG_OID)
    } else {
        true
    }
}

/// A key or signature BIT STRING must start with a zero "unused bits" octet: any other value changes the encoding
/// without changing the bits a verifier reads.
fn check_whole_octets(bit_string: Element<'_>, what: &'static str, defects: &mut Vec<EncodingDefect>) {
    if bit_string.content.first() != Some(&0) {
        defects.push(EncodingDefect::PartialOctets { what });
    }
}

fn check_attributes(mut attributes: &[u8], defects: &mut Vec<EncodingDefect>) -> Result<(), EncodingDefect> {
    let mut extension_requests = 0usize;
    while !attributes.is_empty() {
        let (attribute, rest) = expect_element(attributes, TAG_SEQUENCE, "attribute")?;
        attributes = rest;
        let (oid, values) = expect_element(attribute.content, TAG_OID, "attribute type")?;
        let (value_set, after_set) = expect_element(values, TAG_SET, "attribute values")?;
        if !after_set.is_empty() {
            return Err(EncodingDefect::MalformedDer { what: "attribute (extra fields)" });
        }
        if oid.content != OID_EXTENSION_REQUEST {
            defects.push(EncodingDefect::ForeignAttribute { oid: oid_to_string(oid.content) });
            continue;
        }
        extension_requests += 1;
        let (_, after_value) = expect_element(value_set.content, TAG_SEQUENCE, "extensionRequest value")?;
        if !after_value.is_empty() {
            defects.push(EncodingDefect::ExtensionRequestValues);
        }
    }
    if extension_requests > 1 {
        defects.push(EncodingDefect::RepeatedExtensionRequest);
    }
    Ok(())
}

/// Dotted form of OID content octets, for messages.
pub(crate) fn oid_to_string(content: &[u8]) -> String {
    let mut arcs: Vec<u128> = Vec::new();
    let mut value: u128 = 0;
    for byte in content {
        value = (value << 7) | u128::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            arcs.push(value);
            value = 0;
        }
        if value > u128::MAX >> 8 {
            return format!("0x{}", hex::encode(content));
        }
    }
    let Some(first) = arcs.first().copied() else {
        return String::from("(empty)");
    };
    let (x, y) = if first < 40 {
        (0, first)
    } else if first < 80 {
        (1, first - 40)
    } else {
        (2, first - 80)
    };
    let mut text = format!("{x}.{y}");
    for arc in &arcs[1..] {
        text.push('.');
        text.push_str(&arc.to_string());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_short_and_long_lengths() {
        let (element, rest) = read_element(&[0x04, 0x02, 0xaa, 0xbb, 0xcc]).unwrap();
        assert_eq!((element.tag, element.content, rest), (0x04, &[0xaa, 0xbb][..], &[0xcc][..]));
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend(std::iter::repeat_n(0u8, 0x80));
        let (element, rest) = read_element(&long).unwrap();
        assert_eq!((element.content.len(), rest.len(), element.encoding.len()), (0x80, 0, 0x83));
    }

    #[test]
    fn refuses_non_minimal_and_indefinite_lengths() {
        assert_eq!(read_element(&[0x04, 0x81, 0x01, 0x00]).unwrap_err(), ElementError::NotDer);
        assert_eq!(read_element(&[0x04, 0x82, 0x00, 0x90]).unwrap_err(), ElementError::NotDer);
        assert_eq!(read_element(&[0x30, 0x80, 0x00, 0x00]).unwrap_err(), ElementError::NotDer);
        assert_eq!(read_element(&[0x1f, 0x01, 0x00]).unwrap_err(), ElementError::NotDer);
        assert_eq!(read_element(&[0x04, 0x05, 0x00]).unwrap_err(), ElementError::Truncated);
        assert_eq!(read_element(&[]).unwrap_err(), ElementError::Truncated);
    }

    #[test]
    fn oid_text() {
        assert_eq!(oid_to_string(OID_EXTENSION_REQUEST), "1.2.840.113549.1.9.14");
        assert_eq!(oid_to_string(&[0x55, 0x04, 0x03]), "2.5.4.3");
    }
}
