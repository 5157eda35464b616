//! Outbound HTTP: one request per connection, `Connection: close`, a hard
//! deadline on the whole exchange (connect, TLS, headers, body) so that a
//! hung peer never stalls the monitor beyond one probe timeout.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
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
    /// The `Retry-After` header, for a throttled webhook.
    pub retry_after: Option<String>,
    /// The `x-tunnel-failover` header: the Worker's mark on what it
    /// answers itself (`worker::is_admin_answer`).
    pub tunnel_failover: Option<String>,
    /// Whether an `x-served-by` header came: the Worker proxied the answer
    /// from an origin.
    pub served_by: bool,
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

/// Whether an exchange reads the response body, and how much of it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Body {
    /// At most this many bytes; more is an error.
    Read(usize),
    Ignore,
}

/// One outbound request beyond the probes' plain GET: a method, headers
/// and a body (a webhook, the Worker's admin API, cloudflared's metrics).
pub(crate) struct Outbound<'a> {
    pub method: &'static str,
    pub url: &'a Url,
    /// Extra headers, name and value; a value that is not a valid header
    /// value fails the request (`ProbeError::Request`), never a panic.
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
    /// `None`: only the status and headers are read.
    pub read_at_most: Option<usize>,
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
        self.send(
            "GET",
            url,
            Vec::new(),
            Bytes::new(),
            Body::Read(MAX_BODY),
            timeout,
        )
        .await
    }

    /// A GET that ends at the response headers: the status is the answer,
    /// whatever the body holds or however long it is.
    pub async fn status(&self, url: &Url, timeout: Duration) -> Result<u16, ProbeError> {
        self.send("GET", url, Vec::new(), Bytes::new(), Body::Ignore, timeout)
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
        let headers = vec![("authorization", authorization.to_string())];
        self.send(
            "POST",
            url,
            headers,
            Bytes::new(),
            Body::Read(MAX_BODY),
            timeout,
        )
        .await
    }

    /// Any [`Outbound`] request, under one deadline.
    pub(crate) async fn request(
        &self,
        request: Outbound<'_>,
        timeout: Duration,
    ) -> Result<Response, ProbeError> {
        let read = request.read_at_most.map_or(Body::Ignore, Body::Read);
        self.send(
            request.method,
            request.url,
            request.headers,
            request.body,
            read,
            timeout,
        )
        .await
    }

    async fn send(
        &self,
        method: &str,
        url: &Url,
        headers: Vec<(&'static str, String)>,
        body: Bytes,
        read: Body,
        timeout: Duration,
    ) -> Result<Response, ProbeError> {
        let exchange = self.exchange(method, url, headers, body, read);
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(ProbeError::TimedOut(timeout)),
        }
    }

    async fn exchange(
        &self,
        method: &str,
        url: &Url,
        headers: Vec<(&'static str, String)>,
        body: Bytes,
        read: Body,
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
        if !body.is_empty() || method == "POST" {
            request = request.header("content-length", body.len());
        }
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request.body(Full::new(body)).map_err(ProbeError::Request)?;
        if url.https {
            let name = ServerName::try_from(url.host.clone())
                .map_err(|e| ProbeError::TlsName(e.to_string()))?;
            let tls = self.tls.connect(name, tcp).await.map_err(ProbeError::Tls)?;
            exchange_on(tls, request, read).await
        } else {
            exchange_on(tcp, request, read).await
        }
    }
}

async fn exchange_on<S>(
    stream: S,
    request: Request<Full<Bytes>>,
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
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (location, retry_after) = (header("location"), header("retry-after"));
    let tunnel_failover = header(failover_core::edge::overrides::api::ANSWERED_BY_HEADER);
    let served_by = response.headers().contains_key("x-served-by");
    let Body::Read(limit) = read else {
        // Dropping the response closes the connection (Connection: close).
        return Ok(Response {
            status,
            location,
            retry_after,
            tunnel_failover,
            served_by,
            body: Bytes::new(),
        });
    };
    let body = Limited::new(response.into_body(), limit)
        .collect()
        .await
        .map_err(|e| ProbeError::Body(e.to_string()))?
        .to_bytes();
    Ok(Response {
        status,
        location,
        retry_after,
        tunnel_failover,
        served_by,
        body,
    })
}

/// Where a local daemon's HTTP API listens (the Docker Engine's
/// `connector.docker_host`): a Unix socket, or plain TCP (a socket proxy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Unix(std::path::PathBuf),
    /// `http://host:port/`, as [`Url`] holds it (IPv6 without brackets).
    Tcp(Url),
}

/// One request to a local daemon's API, under one deadline: `path` is the
/// request target (with its query), the body is empty, at most
/// `read_at_most` bytes of the answer are read. No TLS: a Unix socket or a
/// proxy on the host's own network.
pub(crate) async fn local_request(
    endpoint: &Endpoint,
    method: &'static str,
    path: &str,
    read_at_most: usize,
    timeout: Duration,
) -> Result<Response, ProbeError> {
    let exchange = async {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("connection", "close")
            .header(
                "user-agent",
                concat!("failover-agent/", env!("CARGO_PKG_VERSION")),
            );
        let request = if method == "POST" {
            request.header("content-length", 0)
        } else {
            request
        };
        match endpoint {
            Endpoint::Unix(socket) => {
                let stream = UnixStream::connect(socket)
                    .await
                    .map_err(ProbeError::Connect)?;
                // The Engine wants a Host header; over a socket any name does.
                let request = request
                    .header("host", "docker")
                    .body(Full::new(Bytes::new()))
                    .map_err(ProbeError::Request)?;
                exchange_on(stream, request, Body::Read(read_at_most)).await
            }
            Endpoint::Tcp(url) => {
                let stream = TcpStream::connect((url.host.as_str(), url.port))
                    .await
                    .map_err(ProbeError::Connect)?;
                let _ = stream.set_nodelay(true);
                let request = request
                    .header("host", url.host_header())
                    .body(Full::new(Bytes::new()))
                    .map_err(ProbeError::Request)?;
                exchange_on(stream, request, Body::Read(read_at_most)).await
            }
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(ProbeError::TimedOut(timeout)),
    }
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
