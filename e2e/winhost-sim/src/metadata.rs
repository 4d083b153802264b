//! The cloud instance metadata services a simulated host reaches over HTTP, as the clouds document them, answering
//! what `Invoke-RestMethod` asks ([`InstanceMetadata::answer`]). A host is on one cloud or none
//! ([`Host::instance_metadata`]); only the names the operator reads are modelled.
//!
//! - **AWS** (Instance Metadata Service, `http://169.254.169.254`; AWS EC2 user guide, "Use the Instance Metadata
//!   Service to access instance metadata", <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html>,
//!   and "Instance metadata categories", <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-categories.html>):
//!   `PUT /latest/api/token` with header `X-aws-ec2-metadata-token-ttl-seconds` (1 to 21600) returns a session
//!   token, without a valid TTL `400 Bad Request`; `GET /latest/meta-data/local-hostname` returns the private IPv4
//!   DNS name (`ip-10-0-1-23.ec2.internal` in us-east-1, `ip-10-0-1-23.us-west-2.compute.internal` elsewhere) with
//!   header `X-aws-ec2-metadata-token` holding a token it issued; a wrong token is `401 Unauthorized`, and so is no
//!   token when the instance requires IMDSv2 (`HttpTokens=required`), while with `optional` a request without one
//!   (IMDSv1, what the Go operator sends) is answered. Other paths are `404 Not Found`.
//! - **GCP** (metadata server, `http://metadata.google.internal`; "Access VM metadata",
//!   <https://cloud.google.com/compute/docs/metadata/querying-metadata>, and "Predefined metadata keys",
//!   <https://cloud.google.com/compute/docs/metadata/predefined-metadata-keys>): `GET
//!   /computeMetadata/v1/instance/hostname` returns the VM's hostname (`win-1.us-central1-a.c.project-id.internal`
//!   with zonal DNS) when the request carries `Metadata-Flavor: Google`, else `403 Forbidden`. The server also
//!   listens on 169.254.169.254, so an AWS path asked there on GCP gets `403` without that header.
//! - **Off the cloud**: `metadata.google.internal` does not resolve outside GCP (.NET's `The remote name could not be
//!   resolved: '<host>'`), and 169.254.169.254 does not answer outside AWS and GCP (`Unable to connect to the remote
//!   server`; the simulator does not tell a refused connection from a time-out, `The operation has timed out`).
//!   Any other address is unreachable as well: the simulator has no network.
//!
//! The messages are .NET Framework's `WebException` texts, which Windows PowerShell 5.1 puts in the exception
//! `Invoke-RestMethod` throws (an HTTP error prints `The remote server returned an error: (401) Unauthorized.`; the
//! body of an error response, which 5.1 shows instead when there is one, is not modelled).
//!
//! [`Host::instance_metadata`]: crate::host::Host::instance_metadata

/// The address of AWS's instance metadata service (and of GCP's metadata server).
pub const LINK_LOCAL_METADATA_HOST: &str = "169.254.169.254";
/// The DNS name of GCP's metadata server.
pub const GCP_METADATA_HOST: &str = "metadata.google.internal";
/// The session token the simulated IMDS hands out (AWS's tokens are opaque Base64 text).
pub const AWS_SESSION_TOKEN: &str = "AQAEAFsimulatedIMDSv2sessiontoken==";
/// The longest token lifetime AWS accepts, in seconds (six hours).
const AWS_MAX_TOKEN_TTL_SECONDS: u32 = 21_600;

/// The cloud a host runs on, as its metadata service describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "cloud", rename_all = "lowercase")]
pub enum InstanceMetadata {
    /// No cloud: on premises, or a hypervisor without a metadata service (vSphere, Nutanix).
    #[default]
    None,
    /// An EC2 instance.
    Aws {
        /// `local-hostname`.
        local_hostname: String,
        /// Whether the instance requires IMDSv2 session tokens (`HttpTokens=required`).
        tokens_required: bool,
    },
    /// A Compute Engine VM.
    Gcp {
        /// `instance/hostname`.
        hostname: String,
    },
}

/// Why a request got no answer: .NET's `WebException` status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebFailure {
    /// The host name does not resolve.
    NameResolution(String),
    /// Nothing answers at the address.
    ConnectFailure,
    /// The server answered with an error status.
    Status(u16, &'static str),
}

impl WebFailure {
    /// The exception's message as .NET Framework words it.
    pub fn message(&self) -> String {
        match self {
            WebFailure::NameResolution(host) => format!("The remote name could not be resolved: '{host}'"),
            WebFailure::ConnectFailure => "Unable to connect to the remote server".to_owned(),
            WebFailure::Status(code, reason) => format!("The remote server returned an error: ({code}) {reason}."),
        }
    }
}

/// One HTTP request: method (upper case), URI, headers (names compared case-insensitively, as HTTP does).
#[derive(Clone, Copy, Debug)]
pub struct WebRequest<'a> {
    /// `GET` or `PUT`.
    pub method: &'a str,
    /// `http://host/path`.
    pub uri: &'a str,
    /// Header names and values.
    pub headers: &'a [(String, String)],
}

impl WebRequest<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

const BAD_REQUEST: WebFailure = WebFailure::Status(400, "Bad Request");
const UNAUTHORIZED: WebFailure = WebFailure::Status(401, "Unauthorized");
const FORBIDDEN: WebFailure = WebFailure::Status(403, "Forbidden");
const NOT_FOUND: WebFailure = WebFailure::Status(404, "Not Found");

impl InstanceMetadata {
    /// What the host gets for `request`: the body text, or why there is none.
    ///
    /// ```
    /// use winhost_sim::metadata::{InstanceMetadata, WebFailure, WebRequest};
    /// let gcp = InstanceMetadata::Gcp { hostname: "win-1.c.project-id.internal".into() };
    /// let uri = "http://metadata.google.internal/computeMetadata/v1/instance/hostname";
    /// let flavor = [("Metadata-Flavor".to_owned(), "Google".to_owned())];
    /// assert_eq!(gcp.answer(WebRequest { method: "GET", uri, headers: &flavor }).unwrap(), "win-1.c.project-id.internal");
    /// assert_eq!(gcp.answer(WebRequest { method: "GET", uri, headers: &[] }), Err(WebFailure::Status(403, "Forbidden")));
    /// ```
    ///
    /// # Errors
    /// [`WebFailure`] as the module documentation says.
    pub fn answer(&self, request: WebRequest<'_>) -> Result<String, WebFailure> {
        let rest = request.uri.strip_prefix("http://").ok_or(WebFailure::ConnectFailure)?;
        let (host, path) =
            rest.split_once('/').map_or((rest, "/".to_owned()), |(host, path)| (host, format!("/{path}")));
        let host = host.to_ascii_lowercase();
        match (self, host.as_str()) {
            (InstanceMetadata::Aws { local_hostname, tokens_required }, LINK_LOCAL_METADATA_HOST) => {
                aws(request, &path, local_hostname, *tokens_required)
            }
            (InstanceMetadata::Gcp { hostname }, GCP_METADATA_HOST | LINK_LOCAL_METADATA_HOST) => {
                gcp(request, &path, hostname)
            }
            (_, GCP_METADATA_HOST) => Err(WebFailure::NameResolution(host)),
            _ => Err(WebFailure::ConnectFailure),
        }
    }
}

fn aws(request: WebRequest<'_>, path: &str, local_hostname: &str, tokens_required: bool) -> Result<String, WebFailure> {
    match (request.method, path) {
        ("PUT", "/latest/api/token") => {
            let ttl = request.header("X-aws-ec2-metadata-token-ttl-seconds").and_then(|text| text.trim().parse().ok());
            match ttl {
                Some(seconds) if (1..=AWS_MAX_TOKEN_TTL_SECONDS).contains(&seconds) => Ok(AWS_SESSION_TOKEN.to_owned()),
                _ => Err(BAD_REQUEST),
            }
        }
        ("GET", "/latest/meta-data/local-hostname") => match request.header("X-aws-ec2-metadata-token") {
            Some(token) if token == AWS_SESSION_TOKEN => Ok(local_hostname.to_owned()),
            Some(_) => Err(UNAUTHORIZED),
            None if tokens_required => Err(UNAUTHORIZED),
            None => Ok(local_hostname.to_owned()),
        },
        _ => Err(NOT_FOUND),
    }
}

fn gcp(request: WebRequest<'_>, path: &str, hostname: &str) -> Result<String, WebFailure> {
    if request.header("Metadata-Flavor") != Some("Google") {
        return Err(FORBIDDEN);
    }
    match (request.method, path) {
        ("GET", "/computeMetadata/v1/instance/hostname") => Ok(hostname.to_owned()),
        _ => Err(NOT_FOUND),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN_URI: &str = "http://169.254.169.254/latest/api/token";
    const LOCAL_HOSTNAME_URI: &str = "http://169.254.169.254/latest/meta-data/local-hostname";
    const GCP_URI: &str = "http://metadata.google.internal/computeMetadata/v1/instance/hostname";

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect()
    }

    fn aws(tokens_required: bool) -> InstanceMetadata {
        InstanceMetadata::Aws { local_hostname: "ip-10-0-1-23.ec2.internal".into(), tokens_required }
    }

    #[test]
    fn imds_v2_gives_a_token_then_the_name_and_v1_only_where_tokens_are_optional() {
        let ttl = headers(&[("x-aws-ec2-metadata-token-ttl-seconds", "60")]);
        for tokens_required in [false, true] {
            let imds = aws(tokens_required);
            let token = imds.answer(WebRequest { method: "PUT", uri: TOKEN_URI, headers: &ttl }).unwrap();
            let with_token = headers(&[("X-aws-ec2-metadata-token", &token)]);
            let name = imds.answer(WebRequest { method: "GET", uri: LOCAL_HOSTNAME_URI, headers: &with_token });
            assert_eq!(name.unwrap(), "ip-10-0-1-23.ec2.internal");
            let v1 = imds.answer(WebRequest { method: "GET", uri: LOCAL_HOSTNAME_URI, headers: &[] });
            assert_eq!(v1.is_ok(), !tokens_required);
        }
        let imds = aws(false);
        let wrong = headers(&[("X-aws-ec2-metadata-token", "forged")]);
        assert_eq!(
            imds.answer(WebRequest { method: "GET", uri: LOCAL_HOSTNAME_URI, headers: &wrong }),
            Err(UNAUTHORIZED)
        );
        for ttl in ["0", "21601", "soon"] {
            let bad = headers(&[("X-aws-ec2-metadata-token-ttl-seconds", ttl)]);
            assert_eq!(imds.answer(WebRequest { method: "PUT", uri: TOKEN_URI, headers: &bad }), Err(BAD_REQUEST));
        }
        assert_eq!(imds.answer(WebRequest { method: "PUT", uri: TOKEN_URI, headers: &[] }), Err(BAD_REQUEST));
        let other = "http://169.254.169.254/latest/meta-data/nothing";
        assert_eq!(imds.answer(WebRequest { method: "GET", uri: other, headers: &[] }), Err(NOT_FOUND));
    }

    #[test]
    fn each_service_fails_off_its_cloud_as_dotnet_words_it() {
        let get =
            |metadata: &InstanceMetadata, uri: &str| metadata.answer(WebRequest { method: "GET", uri, headers: &[] });
        let off = InstanceMetadata::None;
        assert_eq!(get(&off, LOCAL_HOSTNAME_URI).unwrap_err().message(), "Unable to connect to the remote server");
        assert_eq!(
            get(&off, GCP_URI).unwrap_err().message(),
            "The remote name could not be resolved: 'metadata.google.internal'"
        );
        assert_eq!(get(&aws(false), GCP_URI), Err(WebFailure::NameResolution(GCP_METADATA_HOST.into())));
        let gcp = InstanceMetadata::Gcp { hostname: "win-1.c.project-id.internal".into() };
        assert_eq!(get(&gcp, LOCAL_HOSTNAME_URI), Err(FORBIDDEN));
        assert_eq!(FORBIDDEN.message(), "The remote server returned an error: (403) Forbidden.");
        assert_eq!(
            get(&aws(false), "https://169.254.169.254/latest/meta-data/local-hostname"),
            Err(WebFailure::ConnectFailure)
        );
    }
}
