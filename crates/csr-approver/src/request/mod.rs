//! The PKCS#10 request inside `spec.request`, decoded into owned facts: the subject (with multi-valued RDNs kept
//! apart), the strict-encoding defects (rule B1), the signature algorithm, the public key, and the requested
//! extensions with SANs of every type. The signature itself is verified on demand ([`ParsedRequest::verify_signature`])
//! so the cheap scope rules run before any crypto.

mod der;
mod pem;
mod pkcs10;

use std::fmt;

use sha2::{Digest as _, Sha256};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer as _;

/// The longest `spec.request` (base64 text of the PEM) that is decoded: a kubelet's request, RSA-4096 with every
/// SAN a node has, is a few KiB; a larger one is refused unread (rule A3), so padded requests cost no parse.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// Why `spec.request` could not be decoded far enough to read a subject (rule A3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnreadableRequest {
    /// `spec.request` is longer than [`MAX_REQUEST_BYTES`]; it is not decoded at all.
    #[error("spec.request is {bytes} bytes, larger than the limit of {limit} bytes")]
    TooLarge {
        /// The length of the base64 text.
        bytes: usize,
        /// [`MAX_REQUEST_BYTES`].
        limit: usize,
    },
    /// `spec.request` is not base64 (the manifest field, not the PEM body).
    #[error("spec.request is not base64")]
    ManifestBase64,
    /// No `-----BEGIN ` line.
    #[error("spec.request holds no PEM block")]
    NoPemBlock,
    /// A BEGIN line without its matching END line.
    #[error("the PEM block has no matching END line")]
    UnterminatedPemBlock,
    /// The PEM body is not base64 (this includes PEM headers).
    #[error("the PEM body is not plain base64")]
    PemBase64,
    /// The DER does not reach a subject.
    #[error("the DER does not reach a subject: {defect}")]
    NoSubject {
        /// What was wrong on the way to the subject.
        defect: EncodingDefect,
    },
}

/// A deviation from the strict encoding that rule B1 demands, found in a request whose subject is readable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingDefect {
    /// Non-whitespace text before the PEM block.
    #[error("text before the PEM block")]
    TextBeforeBlock,
    /// A second PEM block after the first.
    #[error("more than one PEM block")]
    SecondPemBlock,
    /// Non-whitespace text after the PEM block.
    #[error("text after the PEM block")]
    TextAfterBlock,
    /// A PEM label other than `CERTIFICATE REQUEST`.
    #[error("PEM label {label:?} is not \"CERTIFICATE REQUEST\"")]
    PemLabel {
        /// The label found.
        label: String,
    },
    /// Bytes after the DER CertificationRequest.
    #[error("{count} bytes after the DER request")]
    TrailingDer {
        /// How many.
        count: usize,
    },
    /// A part of the structure that is not strict DER or not where PKCS#10 puts it.
    #[error("malformed DER at {what}")]
    MalformedDer {
        /// The part.
        what: &'static str,
    },
    /// Algorithm parameters other than the one canonical encoding for the algorithm.
    #[error("{what} parameters are not the canonical encoding")]
    AlgorithmParameters {
        /// Which AlgorithmIdentifier.
        what: &'static str,
    },
    /// A BIT STRING (key or signature) that does not declare whole octets.
    #[error("{what} BIT STRING does not start with a zero unused-bits octet")]
    PartialOctets {
        /// Which BIT STRING.
        what: &'static str,
    },
    /// The version is not 0.
    #[error("request version is not 0")]
    Version,
    /// An attribute other than `extensionRequest`.
    #[error("attribute {oid} is not extensionRequest")]
    ForeignAttribute {
        /// The attribute's OID.
        oid: String,
    },
    /// More than one `extensionRequest` attribute.
    #[error("more than one extensionRequest attribute")]
    RepeatedExtensionRequest,
    /// An `extensionRequest` attribute with more than one value.
    #[error("extensionRequest attribute with more than one value")]
    ExtensionRequestValues,
    /// The PKCS#10 parser refused the request.
    #[error("PKCS#10 parse error: {message}")]
    Pkcs10 {
        /// The parser's message.
        message: String,
    },
    /// The same extension requested twice.
    #[error("extension {oid} requested twice")]
    RepeatedExtension {
        /// The extension's OID.
        oid: String,
    },
}

/// The type of one subject attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeType {
    /// commonName (2.5.4.3).
    CommonName,
    /// organizationName (2.5.4.10).
    Organization,
    /// Any other attribute type, by dotted OID.
    Other(String),
}

/// The ASN.1 string type of an attribute value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringType {
    /// PrintableString.
    Printable,
    /// UTF8String.
    Utf8,
    /// Any other type, by its universal tag number (IA5String is 22, BMPString 30, …).
    Other(u32),
}

/// One attribute of the subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectAttribute {
    /// Its type.
    pub attribute_type: AttributeType,
    /// The ASN.1 type of its value.
    pub string_type: StringType,
    /// The value as text, when it is a text type that decodes.
    pub value: Option<String>,
}

/// The subject as a list of RDNs, each a list of attributes (more than one means a multi-valued RDN).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subject {
    /// The RDNs in encoding order.
    pub rdns: Vec<Vec<SubjectAttribute>>,
}

impl Subject {
    /// Every attribute, across all RDNs.
    pub fn attributes(&self) -> impl Iterator<Item = &SubjectAttribute> {
        self.rdns.iter().flatten()
    }

    /// The text of every attribute of type `wanted` (values that do not decode are skipped).
    pub fn values_of<'a>(&'a self, wanted: &'a AttributeType) -> impl Iterator<Item = &'a str> {
        self.attributes()
            .filter(move |attribute| &attribute.attribute_type == wanted)
            .filter_map(|a| a.value.as_deref())
    }
}

/// The signature algorithm of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureAlgorithm {
    /// ecdsa-with-SHA256.
    EcdsaSha256,
    /// ecdsa-with-SHA384.
    EcdsaSha384,
    /// ecdsa-with-SHA512.
    EcdsaSha512,
    /// sha256WithRSAEncryption.
    RsaSha256,
    /// sha384WithRSAEncryption.
    RsaSha384,
    /// sha512WithRSAEncryption.
    RsaSha512,
    /// Any other algorithm (SHA-1, MD5, PSS, Ed25519, DSA…), by dotted OID.
    Other(String),
}

impl fmt::Display for SignatureAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EcdsaSha256 => f.write_str("ecdsa-with-SHA256"),
            Self::EcdsaSha384 => f.write_str("ecdsa-with-SHA384"),
            Self::EcdsaSha512 => f.write_str("ecdsa-with-SHA512"),
            Self::RsaSha256 => f.write_str("sha256WithRSAEncryption"),
            Self::RsaSha384 => f.write_str("sha384WithRSAEncryption"),
            Self::RsaSha512 => f.write_str("sha512WithRSAEncryption"),
            Self::Other(oid) => write!(f, "algorithm {oid}"),
        }
    }
}

/// The kind of public key in the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyKind {
    /// ECDSA on P-256.
    EcdsaP256,
    /// ECDSA on P-384.
    EcdsaP384,
    /// ECDSA on another curve (P-224, P-521, secp256k1…), by dotted curve OID (or `unnamed`).
    EcdsaOther {
        /// The curve.
        curve: String,
    },
    /// RSA.
    Rsa {
        /// Significant bits of the modulus.
        modulus_bits: usize,
        /// The public exponent, when it fits in 64 bits.
        exponent: Option<u64>,
    },
    /// Ed25519.
    Ed25519,
    /// DSA.
    Dsa,
    /// Anything else, by dotted algorithm OID.
    Other {
        /// The SPKI algorithm.
        algorithm: String,
    },
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EcdsaP256 => f.write_str("ECDSA P-256"),
            Self::EcdsaP384 => f.write_str("ECDSA P-384"),
            Self::EcdsaOther { curve } => write!(f, "ECDSA on curve {curve}"),
            Self::Rsa { modulus_bits, exponent: Some(exponent) } => write!(f, "RSA-{modulus_bits} (e = {exponent})"),
            Self::Rsa { modulus_bits, exponent: None } => write!(f, "RSA-{modulus_bits} (e larger than 64 bits)"),
            Self::Ed25519 => f.write_str("Ed25519"),
            Self::Dsa => f.write_str("DSA"),
            Self::Other { algorithm } => write!(f, "key algorithm {algorithm}"),
        }
    }
}

/// The public key of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyFacts {
    /// Type and size.
    pub kind: KeyKind,
    /// SHA-256 over the DER SubjectPublicKeyInfo, which identifies the key across retries (rule F2).
    pub spki_sha256: [u8; 32],
}

impl PublicKeyFacts {
    /// The SPKI SHA-256 as lowercase hex, the form the World records use.
    pub fn spki_sha256_hex(&self) -> String {
        hex::encode(self.spki_sha256)
    }
}

/// One subjectAltName entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SanEntry {
    /// dNSName.
    Dns(String),
    /// iPAddress, as encoded (4 or 16 bytes when well-formed).
    Ip(Vec<u8>),
    /// rfc822Name.
    Email(String),
    /// uniformResourceIdentifier.
    Uri(String),
    /// Any other GeneralName type, by name.
    Other(&'static str),
}

impl fmt::Display for SanEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dns(name) => write!(f, "DNS:{name}"),
            Self::Ip(bytes) => match ip_from_san(bytes) {
                Some(ip) => write!(f, "IP:{ip}"),
                None => write!(f, "IP:0x{}", hex::encode(bytes)),
            },
            Self::Email(email) => write!(f, "email:{email}"),
            Self::Uri(uri) => write!(f, "URI:{uri}"),
            Self::Other(kind) => write!(f, "{kind}"),
        }
    }
}

/// What a requested extension holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtensionContent {
    /// A subjectAltName with its entries.
    SubjectAltName(Vec<SanEntry>),
    /// A subjectAltName that did not parse.
    MalformedSubjectAltName,
    /// Any other extension.
    Other,
}

/// One extension from the `extensionRequest` attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestedExtension {
    /// Dotted OID.
    pub oid: String,
    /// The critical flag.
    pub critical: bool,
    /// Parsed content.
    pub content: ExtensionContent,
}

/// The parts of a request that only a full PKCS#10 parse yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBody {
    /// The signature algorithm.
    pub signature_algorithm: SignatureAlgorithm,
    /// The public key.
    pub public_key: PublicKeyFacts,
    /// The requested extensions, in order.
    pub extensions: Vec<RequestedExtension>,
}

/// A request whose subject could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedRequest {
    /// The DER of the first PEM block (kept for signature verification).
    der: Vec<u8>,
    /// The subject.
    pub subject: Subject,
    /// Every strict-encoding defect found (rule B1); empty for a well-formed request.
    pub defects: Vec<EncodingDefect>,
    /// The fully parsed request, or `None` when the PKCS#10 parser refused it (then `defects` says why).
    pub body: Option<RequestBody>,
}

/// Why the signature did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("signature check failed: {message}")]
pub struct SignatureError {
    /// The verifier's message.
    pub message: String,
}

impl ParsedRequest {
    /// Decodes PEM text (the base64-decoded `spec.request`).
    ///
    /// ```
    /// use wmco_csr_approver::{ParsedRequest, UnreadableRequest};
    /// assert_eq!(ParsedRequest::from_pem(b"not a request"), Err(UnreadableRequest::NoPemBlock));
    /// ```
    pub fn from_pem(pem_text: &[u8]) -> Result<Self, UnreadableRequest> {
        let decoded = pem::decode_first_block(pem_text)?;
        let mut request = Self::from_der(decoded.der)?;
        let mut defects = decoded.defects;
        defects.append(&mut request.defects);
        request.defects = defects;
        Ok(request)
    }

    /// Decodes a DER request.
    pub fn from_der(der: Vec<u8>) -> Result<Self, UnreadableRequest> {
        let outline = der::outline(&der).map_err(|defect| UnreadableRequest::NoSubject { defect })?;
        let subject =
            pkcs10::read_subject(outline.subject).map_err(|defect| UnreadableRequest::NoSubject { defect })?;
        let mut defects = der::structural_defects(&der);
        let body = match pkcs10::read_body(&der) {
            Ok((body, mut body_defects)) => {
                defects.append(&mut body_defects);
                Some(body)
            }
            Err(defect) => {
                defects.push(defect);
                None
            }
        };
        Ok(Self { der, subject, defects, body })
    }

    /// The DER of the request.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// Verifies the request's self-signature with its embedded public key.
    pub fn verify_signature(&self) -> Result<(), SignatureError> {
        let (_, request) = X509CertificationRequest::from_der(&self.der)
            .map_err(|error| SignatureError { message: error.to_string() })?;
        request.verify_signature().map_err(|error| SignatureError { message: error.to_string() })
    }
}

/// The address an iPAddress SAN encodes: 4 bytes are IPv4, 16 bytes IPv6, anything else is malformed.
pub(crate) fn ip_from_san(bytes: &[u8]) -> Option<std::net::IpAddr> {
    if let Ok(octets) = <[u8; 4]>::try_from(bytes) {
        Some(std::net::IpAddr::from(octets))
    } else {
        <[u8; 16]>::try_from(bytes).ok().map(std::net::IpAddr::from)
    }
}

/// SHA-256 of bytes, as used for key identities.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}
