//! The certificates and keys of one control plane, generated fresh for every start: nothing is shared
//! between control planes, so a test can never talk to another test's API server by accident.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::error::Error;

pub(crate) struct Pki {
    pub ca_cert_pem: String,
    pub ca_key_pem: String,
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
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
        let admin_key = KeyPair::generate().map_err(cert_err("admin key"))?;
        let mut admin = CertificateParams::default();
        admin.distinguished_name.push(DnType::CommonName, "admin");
        admin
            .distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        admin.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        admin.use_authority_key_identifier_extension = true;
        let admin_cert = admin
            .signed_by(&admin_key, &issuer)
            .map_err(cert_err("admin client certificate"))?;

        let sa_key = KeyPair::generate().map_err(cert_err("service account key"))?;

        Ok(Pki {
            ca_cert_pem,
            ca_key_pem,
            serving_cert_pem: serving_cert.pem(),
            serving_key_pem: serving_key.serialize_pem(),
            admin_cert_pem: admin_cert.pem(),
            admin_key_pem: admin_key.serialize_pem(),
            service_account_key_pem: sa_key.serialize_pem(),
            service_account_pub_pem: sa_key.public_key_pem(),
        })
    }
}
