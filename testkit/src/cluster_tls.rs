//! What TLS adds to a cluster member ([`RedisCluster::start_tls`](crate::RedisCluster::start_tls)):
//! every member listens on a plain port (the kit's own commands,
//! [`RedisNode::cmd`](crate::RedisNode::cmd), use it) and on a TLS port, and speaks TLS on the cluster
//! bus (`tls-cluster yes`) and to its replicas (`tls-replication yes`). Clients that connect over TLS
//! are told the TLS ports: `CLUSTER SHARDS` lists both (`port`, `tls-port`), and `MOVED`/`ASK` name the
//! port of the client's own kind. The plain port is what makes a client that picks the wrong one fail
//! loudly: its TLS handshake meets a plain-text server.
//!
//! The certificate files come from the caller (the engine's tests make a throwaway CA with
//! `openssl`); clients are not asked for certificates (`tls-auth-clients no`).

use std::path::PathBuf;

/// A server certificate for 127.0.0.1, its key, and the CA that signed it (PEM files).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The CA certificate (`tls-ca-cert-file`; clients trust it).
    pub ca: PathBuf,
    /// The server certificate (`tls-cert-file`), valid for `IP:127.0.0.1`.
    pub cert: PathBuf,
    /// Its private key (`tls-key-file`).
    pub key: PathBuf,
}

impl TlsFiles {
    /// The `redis-server` arguments of a member on `tls_port`.
    pub(crate) fn member_args(&self, tls_port: u16) -> Vec<String> {
        let path = |p: &PathBuf| p.to_string_lossy().into_owned();
        [
            "--tls-port",
            &tls_port.to_string(),
            "--tls-cluster",
            "yes",
            "--tls-replication",
            "yes",
            "--tls-cert-file",
            &path(&self.cert),
            "--tls-key-file",
            &path(&self.key),
            "--tls-ca-cert-file",
            &path(&self.ca),
            "--tls-auth-clients",
            "no",
        ]
        .map(String::from)
        .to_vec()
    }
}

/// What a TLS cluster keeps: its files (for members added later) and each member's TLS port.
#[derive(Debug)]
pub(crate) struct Tls {
    pub(crate) files: TlsFiles,
    /// In `RedisCluster::members` order.
    pub(crate) ports: Vec<u16>,
}

impl Tls {
    /// `redis-cli --tls --cacert ca`: how the cluster is created through the TLS ports.
    pub(crate) fn cli_args(&self) -> Vec<String> {
        vec![
            "--tls".into(),
            "--cacert".into(),
            self.files.ca.to_string_lossy().into_owned(),
        ]
    }
}
