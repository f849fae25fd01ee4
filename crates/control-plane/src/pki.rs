//! The certificates and keys of one control plane, generated fresh for every start: nothing is shared
//! between control planes, so a test can never talk to another test's API server by accident.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::error::Error;

/// The real node's name (its kubelet's user is `system:node:<name>`): defined with the certificates
/// issued for it, which `crate::node` uses (the node module imports this one, not the other way).
pub const NODE_NAME: &str = "capi-node-0";
/// The node's address inside its network namespace (a dummy interface).
pub const NODE_IP: Ipv4Addr = Ipv4Addr::new(10, 87, 0, 1);

pub(crate) struct Pki {
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
    /// The real node's kubelet (`system:node:<name>` in `system:nodes`, as the Node authorizer wants).
    pub kubelet_cert_pem: String,
    pub kubelet_key_pem: String,
    /// kube-proxy (`system:kube-proxy`, bound to `system:node-proxier` by the API server's bootstrap).
    pub proxy_cert_pem: String,
    pub proxy_key_pem: String,
    /// Signs ServiceAccount tokens (API server) and token secrets (controller-manager).
    pub service_account_key_pem: String,
    pub service_account_pub_pem: String,
}

fn cert_err(what: &'static str) -> impl FnOnce(rcgen::Error) -> Error {
    move |source| Error::Certificate { what, source }
}

fn dns(name: &str) -> Result<SanType, Error> {
    Ok(SanType::DnsName(
        name.try_into().map_err(cert_err("serving certificate"))?,
    ))
}

impl Pki {
    pub fn generate() -> Result<Pki, Error> {
        let ca_key = KeyPair::generate().map_err(cert_err("CA key"))?;
        let mut ca_params = CertificateParams::default();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "control-plane-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .map_err(cert_err("CA certificate"))?;
        let ca_cert_pem = ca_cert.pem();
        let ca_key_pem = ca_key.serialize_pem();
        let issuer = Issuer::new(ca_params, ca_key);

        let serving_key = KeyPair::generate().map_err(cert_err("serving key"))?;
        let mut serving = CertificateParams::default();
        serving
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        // The in-cluster names and the first service IP too, so that a client that follows the
        // `kubernetes` Service (as a real in-cluster client would) still verifies.
        serving.subject_alt_names = vec![
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
            // The real node's address, which the `kubernetes` Service points at.
            SanType::IpAddress(IpAddr::V4(NODE_IP)),
            dns("localhost")?,
            dns("kubernetes")?,
            dns("kubernetes.default")?,
            dns("kubernetes.default.svc")?,
            dns("kubernetes.default.svc.cluster.local")?,
        ];
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        serving.use_authority_key_identifier_extension = true;
        let serving_cert = serving
            .signed_by(&serving_key, &issuer)
            .map_err(cert_err("serving certificate"))?;

        // O=system:masters: the group the API server's RBAC bootstrap binds to cluster-admin.
        let (admin_cert_pem, admin_key_pem) = client_cert(
            &issuer,
            "admin",
            Some("system:masters"),
            "admin client certificate",
        )?;
        let (kubelet_cert_pem, kubelet_key_pem) = client_cert(
            &issuer,
            &format!("system:node:{}", NODE_NAME),
            Some("system:nodes"),
            "kubelet client certificate",
        )?;
        let (proxy_cert_pem, proxy_key_pem) = client_cert(
            &issuer,
            "system:kube-proxy",
            None,
            "kube-proxy client certificate",
        )?;

        let sa_key = KeyPair::generate().map_err(cert_err("service account key"))?;

        Ok(Pki {
            ca_cert_pem,
            ca_key_pem,
            serving_cert_pem: serving_cert.pem(),
            serving_key_pem: serving_key.serialize_pem(),
            admin_cert_pem,
            admin_key_pem,
            kubelet_cert_pem,
            kubelet_key_pem,
            proxy_cert_pem,
            proxy_key_pem,
            service_account_key_pem: sa_key.serialize_pem(),
            service_account_pub_pem: sa_key.public_key_pem(),
        })
    }
}

/// A client certificate (and its key) for user `cn` in group `org`, signed by the cluster CA.
fn client_cert(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    org: Option<&str>,
    what: &'static str,
) -> Result<(String, String), Error> {
    let key = KeyPair::generate().map_err(cert_err(what))?;
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, issuer).map_err(cert_err(what))?;
    Ok((cert.pem(), key.serialize_pem()))
}
