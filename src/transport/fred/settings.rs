//! fred's client settings for one node: which servers stand behind it (one master, a Redis Cluster,
//! or the master a set of Sentinels names), TLS, and the overrides lock safety needs (see the module
//! doc of `transport::fred`).

use std::time::Duration;

use ::fred::prelude::{
    Config, ConnectionConfig, PerformanceConfig, ReconnectPolicy, Server, ServerConfig, TcpConfig,
};
use ::fred::types::config::{ClusterDiscoveryPolicy, TlsConfig};
use ::fred::types::RespVersion;

use super::super::ConnectOptions;
use crate::addr::{NodeAddr, Topology};
use crate::error::NodeError;

/// Everything `fred::prelude::Client::new` takes, for one node.
pub(super) struct Settings {
    pub(super) config: Config,
    pub(super) perf: PerformanceConfig,
    pub(super) connection: ConnectionConfig,
    pub(super) policy: ReconnectPolicy,
}

/// fred's per-command deadline (also the connect and handshake bound): the connect timeout, never 0
/// (which would mean "no timeout" to fred).
pub(super) fn bound(opts: &ConnectOptions) -> Duration {
    opts.connect_timeout.max(Duration::from_millis(1))
}

/// The settings for `addr`, or why fred cannot serve it.
pub(super) fn for_node(addr: &NodeAddr, opts: &ConnectOptions) -> Result<Settings, NodeError> {
    let bound = bound(opts);
    // fred's `database` is a u8; silently using another database would be a correctness bug.
    let database = u8::try_from(addr.db).map_err(|_| {
        NodeError::Connect(format!(
            "{addr}: database {} is above fred's limit of 255",
            addr.db
        ))
    })?;
    let hosts: Vec<Server> = std::iter::once((&addr.host, addr.port))
        .chain(addr.more_hosts.iter().map(|(h, p)| (h, *p)))
        .map(|(host, port)| server(host, port))
        .collect();
    let server = match &addr.topology {
        Topology::Standalone => ServerConfig::Centralized {
            server: hosts[0].clone(),
        },
        Topology::Cluster => ServerConfig::Clustered {
            hosts,
            policy: ClusterDiscoveryPolicy::default(),
        },
        Topology::Sentinel {
            service,
            username,
            password,
        } => ServerConfig::Sentinel {
            hosts,
            service_name: service.clone(),
            username: username.clone(),
            password: password.clone(),
        },
    };
    let tls = if addr.tls {
        let settings = opts.tls.as_ref().ok_or_else(|| {
            NodeError::Connect(format!("{addr}: TLS requested without TLS settings"))
        })?;
        Some(TlsConfig::from(settings.connector()))
    } else {
        None
    };
    let config = Config {
        // With fail_fast a failed first connect ends the client for good; we want background reconnects.
        fail_fast: false,
        // RESP2: nil stays nil and no HELLO handshake is needed.
        version: RespVersion::RESP2,
        username: addr.username.clone(),
        password: addr.password.clone(),
        database: Some(database).filter(|&db| db != 0),
        server,
        tls,
        ..Config::default()
    };
    let perf = PerformanceConfig {
        default_command_timeout: bound,
        ..PerformanceConfig::default()
    };
    let connection = ConnectionConfig {
        connection_timeout: bound,
        internal_command_timeout: bound,
        max_command_attempts: 1, // the one write; never again after a reconnect
        // A MOVED/ASK redirection is not a replay: the first server refused the command unrun.
        max_redirections: 5,
        tcp: TcpConfig {
            nodelay: Some(true),
            ..TcpConfig::default()
        },
        ..ConnectionConfig::default()
    };
    let ms = |d: Duration| u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1);
    let min = ms(opts.reconnect_min);
    let max = ms(opts.reconnect_max).max(min);
    // 0 attempts: retry forever. Without fail_fast fred runs even the first connect through this policy,
    // so the first attempt starts after `reconnect_min` plus jitter (20–40 ms with the defaults).
    let mut policy = ReconnectPolicy::new_exponential(0, min, max, 2);
    policy.set_jitter(min);
    Ok(Settings {
        config,
        perf,
        connection,
        policy,
    })
}

/// fred resolves `format!("{host}:{port}")`, so an IPv6 literal needs its brackets back.
fn server(host: &str, port: u16) -> Server {
    if host.contains(':') {
        Server::new(format!("[{host}]"), port)
    } else {
        Server::new(host, port)
    }
}
