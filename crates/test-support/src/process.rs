//! The project's binaries as processes: replicas with their own ports and metrics certificate, their
//! health and metrics endpoints, the Lease they hold, tokens of scrapers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::Api;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{apply, ar, ensure_namespace};

/// Short leader election timings for tests (the defaults are OpenShift's 137s / 107s / 26s).
pub const LEADER_TIMINGS: [&str; 6] = [
    "--leader-elect-lease-duration",
    "15s",
    "--leader-elect-renew-deadline",
    "10s",
    "--leader-elect-retry-period",
    "2s",
];

/// One `run` process of a binary. Killed (SIGKILL) when dropped, so a failing test leaves nothing
/// behind; the end of its log is printed then, to show why.
pub struct Replica {
    pub name: String,
    pub child: Child,
    /// /healthz and /readyz.
    pub http: SocketAddr,
    /// /metrics (HTTPS).
    pub metrics: SocketAddr,
    log: PathBuf,
}

impl Replica {
    /// Starts `run` (its command and own flags, e.g. `<bin> run --images-json F`) as replica `name` of
    /// `kubeconfig`, adding the flags every binary shares: `--instance name`, free ports for
    /// `--http-addr` and `--metrics-addr`, the metrics certificate of `dir` ([`ServingCert::in_dir`]).
    /// Its log (stderr) goes to `dir/<name>.log`.
    pub fn start(mut run: Command, name: &str, kubeconfig: &Path, dir: &Path) -> Replica {
        let http = free_port();
        let metrics = free_port();
        let log = dir.join(format!("{name}.log"));
        let tls = ServingCert::in_dir(dir);
        let child = run
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args([
                "--instance",
                name,
                "--http-addr",
                &http.to_string(),
                "--metrics-addr",
                &metrics.to_string(),
            ])
            .arg("--metrics-cert-file")
            .arg(&tls.cert)
            .arg("--metrics-key-file")
            .arg(&tls.key)
            .env("RUST_LOG", "info,kube=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        Replica {
            name: name.to_string(),
            child,
            http,
            metrics,
            log,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM (a rolling update's stop).
    pub fn terminate(&self) {
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(self.pid(), libc::SIGTERM) }, 0);
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            eprintln!("---- log of {} (last lines) ----", self.name);
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

/// A loopback port nothing listens on, outside the ephemeral range (for a moment: bind it soon).
pub fn free_port() -> SocketAddr {
    let [port] = control_plane::ports::free_loopback_ports().expect("a free loopback port");
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A plain HTTP/1.1 GET: (status code, body). `None` when nothing listens yet.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.ok()?;
    let (status, body) = status_and_body(&response)?;
    Some((status, body))
}

fn status_and_body(response: &[u8]) -> Option<(u16, String)> {
    let response = String::from_utf8_lossy(response);
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

/// GET over HTTPS, trusting only `ca`, as `localhost`, with a bearer token: (status, body).
pub async fn https_get(
    addr: SocketAddr,
    ca: &str,
    path: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    let authorization = token.map(|t| format!("Bearer {t}"));
    https_request(addr, ca, path, authorization.as_deref())
        .await
        .map(|(code, body, _)| (code, body))
}

/// GET over HTTPS with an optional `Authorization` header: (status, body, the server's certificate).
/// `None` when nothing answers or the TLS handshake fails.
pub async fn https_request(
    addr: SocketAddr,
    ca: &str,
    path: &str,
    authorization: Option<&str>,
) -> Option<(u16, String, Vec<u8>)> {
    let tcp = tokio::net::TcpStream::connect(addr).await.ok()?;
    https_request_over(tcp, ca, "localhost", path, authorization).await
}

/// GET over HTTPS on a connected socket, trusting only `ca`, as `server_name`: (status, body, the
/// server's certificate). `None` when the TLS handshake fails or no response arrives.
pub async fn https_request_over(
    tcp: tokio::net::TcpStream,
    ca: &str,
    server_name: &str,
    path: &str,
    authorization: Option<&str>,
) -> Option<(u16, String, Vec<u8>)> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(ca).into()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let name = rustls::pki_types::ServerName::try_from(server_name.to_string()).ok()?;
    let mut stream = tokio::time::timeout(Duration::from_secs(10), connector.connect(name, tcp))
        .await
        .ok()?
        .ok()?;
    let peer = stream.get_ref().1.peer_certificates()?.first()?.to_vec();
    let mut request =
        format!("GET {path} HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n");
    if let Some(value) = authorization {
        request.push_str(&format!("Authorization: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = Vec::new();
    // A server may close without TLS close_notify; what arrived is the whole response then.
    let _ = stream.read_to_end(&mut response).await;
    let (status, body) = status_and_body(&response)?;
    Some((status, body, peer))
}

/// The certificate the server presents.
pub async fn served_cert(addr: SocketAddr, ca: &str) -> Option<Vec<u8>> {
    https_request(addr, ca, "/healthz", None).await.map(|r| r.2)
}

/// The DER bytes of a PEM certificate.
pub fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// The metrics serving certificate of the replicas started in one folder: a CA and a certificate for
/// localhost / 127.0.0.1 that it issued, in `<dir>/metrics-tls/` (made by the first caller), as
/// service-ca would issue it into the metrics Secret.
pub struct ServingCert {
    /// The CA certificate (PEM): what a scraper trusts, as Prometheus trusts the service-ca bundle.
    pub ca: String,
    ca_key: String,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl ServingCert {
    pub fn in_dir(dir: &Path) -> ServingCert {
        let tls = dir.join("metrics-tls");
        let serving = ServingCert {
            ca: String::new(),
            ca_key: String::new(),
            cert: tls.join("tls.crt"),
            key: tls.join("tls.key"),
        };
        if tls.join("ca.crt").exists() {
            return ServingCert {
                ca: std::fs::read_to_string(tls.join("ca.crt")).unwrap(),
                ca_key: std::fs::read_to_string(tls.join("ca.key")).unwrap(),
                ..serving
            };
        }
        std::fs::create_dir_all(&tls).unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = Self::ca_params().self_signed(&ca_key).unwrap();
        let serving = ServingCert {
            ca: ca.pem(),
            ca_key: ca_key.serialize_pem(),
            ..serving
        };
        std::fs::write(tls.join("ca.crt"), &serving.ca).unwrap();
        std::fs::write(tls.join("ca.key"), &serving.ca_key).unwrap();
        serving.rotate();
        serving
    }

    fn ca_params() -> rcgen::CertificateParams {
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test-service-ca");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params
    }

    /// Issues a new serving certificate and key and replaces the files as the kubelet updates a
    /// mounted Secret (each file renamed into place); returns the new certificate (PEM).
    pub fn rotate(&self) -> String {
        let issuer = rcgen::Issuer::new(
            Self::ca_params(),
            rcgen::KeyPair::from_pem(&self.ca_key).unwrap(),
        );
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .unwrap();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &issuer).unwrap().pem();
        for (path, content) in [(&self.key, key.serialize_pem()), (&self.cert, cert.clone())] {
            let tmp = path.with_extension("new");
            std::fs::write(&tmp, content).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        }
        cert
    }

    pub fn cert_pem(&self) -> String {
        std::fs::read_to_string(&self.cert).unwrap()
    }
}

/// A token of ServiceAccount `namespace/name` (both created when missing), valid an hour.
pub async fn token(admin: &Client, namespace: &str, name: &str) -> String {
    ensure_namespace(admin, namespace).await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace}});
    apply(
        admin,
        &ar("", "v1", "ServiceAccount", "serviceaccounts"),
        &sa,
        "test",
    )
    .await;
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(admin.clone(), namespace);
    let request = k8s_openapi::api::authentication::v1::TokenRequest {
        spec: k8s_openapi::api::authentication::v1::TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    accounts
        .create_token_request(name, &Default::default(), &request)
        .await
        .unwrap_or_else(|e| panic!("token of {namespace}/{name}: {e}"))
        .status
        .map(|s| s.token)
        .unwrap_or_default()
}

/// Who holds Lease `namespace/name` (`None`: nobody, or no such Lease).
pub async fn lease_holder(client: &Client, namespace: &str, name: &str) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    leases
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

/// The timestamp that starts a text log line (`2026-11-30T17:45:01.123456Z  ERROR ...`).
pub fn log_time(line: &str) -> k8s_openapi::jiff::Timestamp {
    line.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no timestamp at the start of {line:?}"))
}

/// Sample lines of a /metrics text by series name (labels cut off).
pub fn metric_samples(metrics: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap().to_string();
        out.entry(name).or_default().push(line.to_string());
    }
    out
}
