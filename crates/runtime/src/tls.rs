//! The metrics endpoint's TLS: the service-ca serving certificate from files, picked up again when the
//! files change (service-ca rotates the certificate in the Secret, the kubelet updates the mounted
//! files, and a restart must not be needed), or a self-signed certificate where none is given.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How often, at most, the files are read again: on a handshake, never in the background, so an idle
/// endpoint costs nothing. A rotated certificate is served from the first handshake a second later.
const RECHECK: Duration = Duration::from_secs(1);

/// Why a certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: no PEM certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: no PEM private key", path.display())]
    NoKey { path: PathBuf },
    #[error("{} and {}: the key does not belong to the certificate, or is of an unsupported type", cert.display(), key.display())]
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("making a self-signed certificate")]
    SelfSigned(#[source] rcgen::Error),
    #[error("TLS configuration")]
    Config(#[source] rustls::Error),
}

/// The ring provider, as kube's client uses it: one provider in the process, whatever other crates
/// enable.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration (HTTP/1.1) that serves the certificate of `resolver`.
pub(crate) fn server_config(
    resolver: Arc<dyn ResolvesServerCert>,
) -> Result<rustls::ServerConfig, TlsError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A certificate and key read from PEM files, re-read when their content changes.
#[derive(Debug)]
pub(crate) struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    state: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    /// The file contents the current key was made from.
    pem: (Vec<u8>, Vec<u8>),
    key: Arc<CertifiedKey>,
    checked: Instant,
}

impl ReloadingCert {
    /// Loads the files now: a missing or broken certificate at start is an error, not a silent fallback.
    pub(crate) fn load(cert_path: &Path, key_path: &Path) -> Result<ReloadingCert, TlsError> {
        let pem = read_pair(cert_path, key_path)?;
        let key = certified_key(cert_path, key_path, &pem)?;
        Ok(ReloadingCert {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            state: Mutex::new(Loaded {
                pem,
                key,
                checked: Instant::now(),
            }),
        })
    }

    /// The key to serve now, after reading the files again if [`RECHECK`] has passed. A file that cannot
    /// be read or a pair that does not match (the kubelet swaps both files at once, but a hand edit may
    /// not) keeps the previous certificate, with a warning, until the pair is whole again.
    fn current(&self) -> Arc<CertifiedKey> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.checked.elapsed() < RECHECK {
            return state.key.clone();
        }
        state.checked = Instant::now();
        let reloaded = read_pair(&self.cert_path, &self.key_path).and_then(|pem| {
            if pem == state.pem {
                return Ok(None);
            }
            let key = certified_key(&self.cert_path, &self.key_path, &pem)?;
            Ok(Some((pem, key)))
        });
        match reloaded {
            Ok(Some((pem, key))) => {
                tracing::info!(cert = %self.cert_path.display(), "serving the changed metrics certificate");
                state.pem = pem;
                state.key = key;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %crate::report::error_chain(&e), "keeping the previous metrics certificate");
            }
        }
        state.key.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// A certificate made at start for `localhost` and the host name, where no serving certificate is given
/// (local runs, tests). Clients cannot verify it; OpenShift's service-ca certificate is what production
/// uses.
#[derive(Debug)]
pub(crate) struct SelfSigned(Arc<CertifiedKey>);

impl SelfSigned {
    pub(crate) fn generate() -> Result<SelfSigned, TlsError> {
        let mut names = vec!["localhost".to_string()];
        if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            let host = host.trim();
            if !host.is_empty() && host != "localhost" {
                names.push(host.to_string());
            }
        }
        let generated = rcgen::generate_simple_self_signed(names).map_err(TlsError::SelfSigned)?;
        let key = PrivateKeyDer::Pkcs8(generated.signing_key.serialize_der().into());
        let certified =
            CertifiedKey::from_der(vec![generated.cert.der().clone()], key, &provider())
                .map_err(TlsError::Config)?;
        Ok(SelfSigned(Arc::new(certified)))
    }
}

impl ResolvesServerCert for SelfSigned {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

fn read_pair(cert: &Path, key: &Path) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            path: path.to_path_buf(),
            source,
        })
    };
    Ok((read(cert)?, read(key)?))
}

fn certified_key(
    cert_path: &Path,
    key_path: &Path,
    (cert_pem, key_pem): &(Vec<u8>, Vec<u8>),
) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .filter_map(Result::ok)
        .collect();
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            path: cert_path.to_path_buf(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| TlsError::NoKey {
        path: key_path.to_path_buf(),
    })?;
    CertifiedKey::from_der(chain, key, &provider())
        .map(Arc::new)
        .map_err(|source| TlsError::Mismatch {
            cert: cert_path.to_path_buf(),
            key: key_path.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mint(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn served(c: &ReloadingCert) -> Vec<u8> {
        c.current().cert[0].to_vec()
    }

    #[test]
    fn a_changed_pair_is_served_and_a_broken_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let first = mint("first.svc");
        std::fs::write(&cert_path, &first.0).unwrap();
        std::fs::write(&key_path, &first.1).unwrap();
        let c = ReloadingCert::load(&cert_path, &key_path).unwrap();
        let first_der = served(&c);
        let force_recheck = |c: &ReloadingCert| {
            c.state.lock().unwrap().checked = Instant::now() - RECHECK;
        };

        // A new certificate without its key: keep the old one.
        let second = mint("second.svc");
        std::fs::write(&cert_path, &second.0).unwrap();
        force_recheck(&c);
        assert_eq!(served(&c), first_der);
        // The pair is whole again: serve it.
        std::fs::write(&key_path, &second.1).unwrap();
        force_recheck(&c);
        let second_der = served(&c);
        assert_ne!(second_der, first_der);
        // Files gone (a Secret being replaced): keep serving.
        std::fs::remove_file(&cert_path).unwrap();
        force_recheck(&c);
        assert_eq!(served(&c), second_der);
    }

    #[test]
    fn loading_fails_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let err = ReloadingCert::load(&cert_path, &key_path).unwrap_err();
        assert!(err.to_string().contains("tls.crt"), "{err}");
        std::fs::write(&cert_path, "not a certificate").unwrap();
        std::fs::write(&key_path, mint("x").1).unwrap();
        let err = ReloadingCert::load(&cert_path, &key_path).unwrap_err();
        assert!(matches!(err, TlsError::NoCertificate { .. }), "{err}");
        let (cert, _) = mint("x");
        std::fs::write(&cert_path, cert).unwrap();
        let err = ReloadingCert::load(&cert_path, &key_path).unwrap_err();
        assert!(matches!(err, TlsError::Mismatch { .. }), "{err}");
    }
}
