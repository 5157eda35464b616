//! Outbound HTTP: one request per connection, `Connection: close`, a hard
//! deadline on the whole exchange (connect, TLS, headers, body) so that a
//! hung peer never stalls the monitor beyond one probe timeout.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use crate::url::Url;

/// A readiness answer is a few hundred bytes; anything larger is not one.
const MAX_BODY: usize = 64 * 1024;

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// The `Location` header, for redirects.
    pub location: Option<String>,
    pub body: Bytes,
}

/// Why an exchange brought no answer. The probes turn it into a miss (and a
/// log line); nothing branches on its text.
#[derive(Debug)]
pub enum ProbeError {
    /// The TLS stack could not be set up (at start-up, not per probe).
    TlsSetup(rustls::Error),
    /// The TCP connect failed: refused, unreachable, no such host.
    Connect(std::io::Error),
    /// A TCP-only check (`egress.tcp`) could not connect.
    TcpConnect {
        addr: String,
        source: std::io::Error,
    },
    /// A TCP-only check did not connect within its deadline.
    TcpTimedOut { addr: String, after: Duration },
    /// The host is not a valid TLS server name.
    TlsName(String),
    /// The TLS handshake failed.
    Tls(std::io::Error),
    /// The HTTP exchange failed: the request, the handshake or the answer.
    Http {
        stage: &'static str,
        source: hyper::Error,
    },
    /// The request could not be built.
    Request(hyper::http::Error),
    /// The body was cut, or longer than a readiness answer can be.
    Body(String),
    /// The whole exchange ran past its deadline.
    TimedOut(Duration),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::TlsSetup(e) => write!(f, "TLS setup: {e}"),
            ProbeError::Connect(e) => write!(f, "connect: {e}"),
            ProbeError::TcpConnect { addr, source } => write!(f, "connect {addr}: {source}"),
            ProbeError::TcpTimedOut { addr, after } => {
                write!(
                    f,
                    "connect {addr}: timed out after {} ms",
                    after.as_millis()
                )
            }
            ProbeError::TlsName(e) => write!(f, "TLS name: {e}"),
            ProbeError::Tls(e) => write!(f, "TLS: {e}"),
            ProbeError::Http { stage, source } => write!(f, "{stage}: {source}"),
            ProbeError::Request(e) => write!(f, "request: {e}"),
            ProbeError::Body(e) => write!(f, "body: {e}"),
            ProbeError::TimedOut(after) => write!(f, "timed out after {} ms", after.as_millis()),
        }
    }
}

impl std::error::Error for ProbeError {}

/// Whether an exchange reads the response body.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    Read,
    Ignore,
}

#[derive(Clone)]
pub struct Client {
    tls: TlsConnector,
}

impl Client {
    pub fn new() -> Result<Client, ProbeError> {
        let roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let config =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(ProbeError::TlsSetup)?
                .with_root_certificates(roots)
                .with_no_client_auth();
        Ok(Client {
            tls: TlsConnector::from(Arc::new(config)),
        })
    }

    pub async fn get(&self, url: &Url, timeout: Duration) -> Result<Response, ProbeError> {
        self.send("GET", url, None, Body::Read, timeout).await
    }

    /// A GET that ends at the response headers: the status is the answer,
    /// whatever the body holds or however long it is.
    pub async fn status(&self, url: &Url, timeout: Duration) -> Result<u16, ProbeError> {
        self.send("GET", url, None, Body::Ignore, timeout)
            .await
            .map(|r| r.status)
    }

    /// A POST with no body; `authorization` is the whole header value.
    pub async fn post(
        &self,
        url: &Url,
        authorization: &str,
        timeout: Duration,
    ) -> Result<Response, ProbeError> {
        self.send("POST", url, Some(authorization), Body::Read, timeout)
            .await
    }

    async fn send(
        &self,
        method: &str,
        url: &Url,
        authorization: Option<&str>,
        body: Body,
        timeout: Duration,
    ) -> Result<Response, ProbeError> {
        match tokio::time::timeout(timeout, self.exchange(method, url, authorization, body)).await {
            Ok(result) => result,
            Err(_) => Err(ProbeError::TimedOut(timeout)),
        }
    }

    async fn exchange(
        &self,
        method: &str,
        url: &Url,
        authorization: Option<&str>,
        body: Body,
    ) -> Result<Response, ProbeError> {
        let tcp = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(ProbeError::Connect)?;
        let _ = tcp.set_nodelay(true);
        let mut request = Request::builder()
            .method(method)
            .uri(url.path.as_str())
            .header("host", url.host_header())
            .header("connection", "close")
            .header(
                "user-agent",
                concat!("failover-agent/", env!("CARGO_PKG_VERSION")),
            );
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let request = request
            .body(Empty::<Bytes>::new())
            .map_err(ProbeError::Request)?;
        if url.https {
            let name = ServerName::try_from(url.host.clone())
                .map_err(|e| ProbeError::TlsName(e.to_string()))?;
            let tls = self.tls.connect(name, tcp).await.map_err(ProbeError::Tls)?;
            exchange_on(tls, request, body).await
        } else {
            exchange_on(tcp, request, body).await
        }
    }
}

async fn exchange_on<S>(
    stream: S,
    request: Request<Empty<Bytes>>,
    read: Body,
) -> Result<Response, ProbeError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|source| ProbeError::Http {
            stage: "handshake",
            source,
        })?;
    // The connection task ends with the exchange (Connection: close) or when
    // the caller's deadline drops `sender`.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = sender
        .send_request(request)
        .await
        .map_err(|source| ProbeError::Http {
            stage: "request",
            source,
        })?;
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if read == Body::Ignore {
        // Dropping the response closes the connection (Connection: close).
        return Ok(Response {
            status,
            location,
            body: Bytes::new(),
        });
    }
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| ProbeError::Body(e.to_string()))?
        .to_bytes();
    Ok(Response {
        status,
        location,
        body,
    })
}

/// The optional TCP check: a connect to the tunnel edge on port 7844.
pub(crate) async fn tcp_connect(addr: &str, timeout: Duration) -> Result<(), ProbeError> {
    match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(source)) => Err(ProbeError::TcpConnect {
            addr: addr.to_string(),
            source,
        }),
        Err(_) => Err(ProbeError::TcpTimedOut {
            addr: addr.to_string(),
            after: timeout,
        }),
    }
}
