//! Certificates for the TLS tests, made with rcgen when a test starts: a CA, a server
//! certificate for 127.0.0.1, and client certificates `CN=client,O=Paddock` and
//! `CN=other,O=Paddock`, as PEM files in ZooKeeper's layout (certificate, then key).

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};

/// The files: `ca.pem`, `server.pem`, `client.pem`, `other.pem`; removed on drop.
pub struct TestCerts {
    dir: tempfile::TempDir,
}

impl TestCerts {
    pub fn new() -> TestCerts {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "test CA");
        let ca = params.self_signed(&ca_key).expect("CA certificate");
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).expect("write ca.pem");
        for name in ["server", "client", "other"] {
            let key = KeyPair::generate().expect("key");
            let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
            params.distinguished_name = DistinguishedName::new();
            params
                .distinguished_name
                .push(DnType::OrganizationName, "Paddock");
            params.distinguished_name.push(DnType::CommonName, name);
            params.extended_key_usages = vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ];
            let cert = params.signed_by(&key, &ca, &ca_key).expect("certificate");
            let pem = format!("{}{}", cert.pem(), key.serialize_pem());
            std::fs::write(dir.path().join(format!("{name}.pem")), pem).expect("write PEM");
        }
        TestCerts { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// zoo.cfg lines for a TLS client port that needs client certificates, the same
    /// for ZooKeeper and Paddock.
    pub fn secure_port_lines(&self, port: u16) -> String {
        format!(
            "secureClientPort={port}\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\nssl.trustStore.type=PEM\n\
             ssl.clientAuth=need\n",
            self.path("server.pem").display(),
            self.path("ca.pem").display()
        )
    }
}
