//! Opening a node connection: TCP with `TCP_NODELAY`, TLS for `rediss://`, then the handshake (AUTH,
//! SELECT, SCRIPT LOAD — or, for a user without scripting, a probe of the native commands —, the
//! durable claim's `CONFIG GET`s, INFO), all bounded by `connect_timeout`. Shared by the pipelined connection and
//! the release subscriber. Also the settings both transports honour ([`ConnectOptions`]).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use super::bounded::{self, config_value, to_reply, Framer};
use super::resp::encode_args;
use crate::addr::NodeAddr;
use crate::algo::quarantine::DurableCheck;
use crate::error::NodeError;
use crate::protocol::cmd::{Coalesced, Reply, Script};
use crate::protocol::server::{parse_info, Dialect, Info, Profile};

/// An open connection: plain TCP, or TLS over it for `rediss://`.
#[derive(Debug)]
pub(super) enum Stream {
    Tcp(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// TLS client settings for `rediss://` nodes.
#[derive(Clone)]
pub(crate) struct TlsSettings(TlsConnector);

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsSettings")
    }
}

impl TlsSettings {
    /// The connector, for the fred transport (same rustls settings on both transports).
    #[cfg(feature = "fred")]
    pub(crate) fn connector(&self) -> TlsConnector {
        self.0.clone()
    }
}

/// Builds the TLS client settings: the CA certificates in `ca_file` (PEM), or the Mozilla roots.
pub(crate) fn tls_connector(ca_file: Option<&std::path::Path>) -> Result<TlsSettings, String> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let bad = |e: &dyn std::fmt::Display| format!("tls_ca_file {}: {e}", path.display());
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(&e))? {
                roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
            }
            if roots.is_empty() {
                return Err(bad(&"no certificate in it"));
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsSettings(TlsConnector::from(Arc::new(config))))
}

/// Connection settings both transports honour.
#[derive(Debug, Clone)]
pub(crate) struct ConnectOptions {
    /// Bound on one connect + handshake; `build()` waits at most this long for the first connect.
    pub(crate) connect_timeout: std::time::Duration,
    /// Requests queued or in flight per node before [`NodeError::Backpressure`].
    pub(crate) max_pending: usize,
    /// First reconnect delay; doubles (with jitter) up to `reconnect_max`.
    pub(crate) reconnect_min: std::time::Duration,
    pub(crate) reconnect_max: std::time::Duration,
    /// Crashed-node quarantine: `Some(max lock lifetime)` when on.
    pub(crate) quarantine: Option<std::time::Duration>,
    /// The clock-jump guard (engine's own connections): `Some` when on.
    pub(crate) clock_guard: Option<crate::algo::clock::GuardSettings>,
    /// TLS client settings, present when some node is `rediss://`.
    pub(crate) tls: Option<TlsSettings>,
    /// How much one node may make a connection buffer (the engine's own connections; see `bounded`).
    pub(crate) limits: bounded::Limits,
    /// The scripts every handshake loads (every lock kind's, see `crate::kinds::scripts`).
    pub(crate) scripts: &'static [&'static Script],
    /// The scripts whose calls may be coalesced when queued back to back (pipelined transport).
    pub(crate) coalesce: &'static [Coalesced],
    /// Whether servers with native lock commands get them (`Config::native_commands`).
    pub(crate) native: bool,
}

/// Opens a connection and runs the handshake; `load_scripts` also loads every lock script. With
/// quarantine on, also reads the server's identity (`INFO server`).
pub(super) async fn open(
    addr: &NodeAddr,
    opts: &ConnectOptions,
    load_scripts: bool,
) -> Result<(Stream, Option<Info>), NodeError> {
    let fail =
        |what: &str, e: &dyn std::fmt::Display| NodeError::Connect(format!("{addr}: {what}{e}"));
    // Always on the lock connection: its server decides how operations are rendered (`Profile`).
    let read_identity = load_scripts || opts.quarantine.is_some();
    let hello = Asks {
        load_scripts,
        read_identity,
        // The lock connection only: the subscriber's (no scripts) carries no votes.
        check_durable: addr.durable && load_scripts,
    };
    let attempt = async {
        let mut tcp = TcpStream::connect((addr.host.as_str(), addr.port))
            .await
            .map_err(|e| fail("", &e))?;
        tcp.set_nodelay(true).map_err(|e| fail("", &e))?;
        if !addr.tls {
            let identity = handshake(&mut tcp, addr, hello, opts).await?;
            return Ok((Stream::Tcp(tcp), identity));
        }
        let connector = opts
            .tls
            .as_ref()
            .ok_or_else(|| fail("", &"rediss:// without TLS settings"))?;
        let name =
            ServerName::try_from(addr.host.clone()).map_err(|e| fail("server name: ", &e))?;
        let mut tls = connector
            .0
            .connect(name, tcp)
            .await
            .map_err(|e| fail("TLS handshake failed: ", &e))?;
        let identity = handshake(&mut tls, addr, hello, opts).await?;
        Ok((Stream::Tls(Box::new(tls)), identity))
    };
    match tokio::time::timeout(opts.connect_timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(NodeError::Connect(format!("{addr}: connect timed out"))),
    }
}

/// A random extra delay in `[0, d]`: full jitter on top of an exponential backoff step, so many clients
/// do not reconnect in lockstep.
pub(super) fn jitter(d: Duration) -> Duration {
    Duration::from_micros(fastrand::u64(0..=d.as_micros() as u64))
}

/// What a handshake asks besides AUTH and SELECT.
#[derive(Debug, Clone, Copy)]
struct Asks {
    load_scripts: bool,
    read_identity: bool,
    check_durable: bool,
}

/// What one handshake command must answer; anything else fails the handshake.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// `AUTH`, `SELECT`: `+OK`.
    Ok(&'static str),
    /// `SCRIPT LOAD`: a bulk string, the script's SHA1.
    Sha(&'static str),
    /// `INFO server`: a bulk string with `run_id` and `uptime_in_seconds`.
    Info,
    /// `CONFIG GET <parameter>` for a node claimed durable: its value, or a refusal (not fatal).
    Config(usize),
}

/// AUTH and SELECT as configured, then `SCRIPT LOAD` of the lock scripts so the first `EVALSHA` after a
/// (re)connect does not pay a `NOSCRIPT` round trip. All written at once, replies checked in order, each
/// against the one type its command answers; a reply nobody asked for fails the handshake too. Framed
/// by `bounded` like every reply.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    addr: &NodeAddr,
    hello: Asks,
    opts: &ConnectOptions,
) -> Result<Option<Info>, NodeError> {
    let Asks {
        load_scripts,
        read_identity,
        check_durable,
    } = hello;
    let mut out = BytesMut::new();
    let mut expected: Vec<Expect> = Vec::new();
    match (&addr.username, &addr.password) {
        (Some(user), Some(pass)) => {
            encode_args(&mut out, &[b"AUTH", user.as_bytes(), pass.as_bytes()])
        }
        (None, Some(pass)) => encode_args(&mut out, &[b"AUTH", pass.as_bytes()]),
        _ => {}
    }
    if addr.password.is_some() {
        expected.push(Expect::Ok("AUTH"));
    }
    if addr.db != 0 {
        encode_args(&mut out, &[b"SELECT", addr.db.to_string().as_bytes()]);
        expected.push(Expect::Ok("SELECT"));
    }
    for script in opts.scripts.iter().copied().filter(|_| load_scripts) {
        encode_args(&mut out, &[b"SCRIPT", b"LOAD", script.source.as_bytes()]);
        expected.push(Expect::Sha(script.sha1));
    }
    if check_durable {
        for (i, parameter) in DURABILITY.iter().enumerate() {
            encode_args(&mut out, &[b"CONFIG", b"GET", parameter.as_bytes()]);
            expected.push(Expect::Config(i));
        }
    }
    if read_identity {
        // Last, so its reply is the last one read.
        encode_args(&mut out, &[b"INFO", b"server"]);
        expected.push(Expect::Info);
    }
    let mut identity = None;
    let mut scripts_refused = None;
    let mut settings: [Result<Option<String>, NodeError>; 2] = [Ok(None), Ok(None)];
    let fail = |why: &dyn std::fmt::Display| NodeError::Connect(format!("{addr}: {why}"));
    stream.write_all(&out).await.map_err(|e| fail(&e))?;
    stream.flush().await.map_err(|e| fail(&e))?;
    let mut buf = BytesMut::with_capacity(512);
    let mut framer = Framer::new(opts.limits);
    let mut replies = expected.into_iter();
    let mut next = replies.next();
    while next.is_some() {
        if stream.read_buf(&mut buf).await.map_err(|e| fail(&e))? == 0 {
            return Err(fail(&"closed during handshake"));
        }
        while let Some(frame) = framer
            .next_frame(&mut buf)
            .map_err(|e| fail(&format_args!("handshake: {e}")))?
        {
            let Some(expect) = next else {
                return Err(fail(&"handshake: reply with no request outstanding"));
            };
            if let Expect::Config(i) = expect {
                settings[i] = config_value(&frame);
                next = replies.next();
                continue;
            }
            let reply = match to_reply(frame.freeze()) {
                // A lock user without `@scripting`: native commands may do instead (below).
                Err(NodeError::Server(why))
                    if matches!(expect, Expect::Sha(_)) && why.starts_with("NOPERM") =>
                {
                    scripts_refused.get_or_insert(why);
                    next = replies.next();
                    continue;
                }
                reply => reply.map_err(|e| fail(&format_args!("handshake refused: {e}")))?,
            };
            match (expect, &reply) {
                (Expect::Ok(_), Reply::Ok) => {}
                (Expect::Sha(sha), Reply::Data(d)) if d.eq_ignore_ascii_case(sha.as_bytes()) => {}
                (Expect::Sha(_), Reply::Data(_)) => {
                    return Err(fail(&"script digest mismatch after SCRIPT LOAD"))
                }
                (Expect::Info, Reply::Data(info)) => {
                    identity = Some(
                        parse_info(&info[..])
                            .ok_or_else(|| fail(&"INFO server gave no run_id/uptime"))?,
                    );
                }
                (expect, reply) => {
                    let command = match expect {
                        Expect::Ok(command) => command,
                        Expect::Sha(_) => "SCRIPT LOAD",
                        Expect::Info => "INFO",
                        Expect::Config(_) => "CONFIG GET",
                    };
                    return Err(fail(&format_args!(
                        "handshake: {command}: unexpected reply type {}",
                        reply.kind()
                    )));
                }
            }
            next = replies.next();
        }
    }
    // A node that sends more than it was asked would put a reply in front of the first request.
    if !buf.is_empty() {
        return Err(fail(&"handshake: reply with no request outstanding"));
    }
    // Native commands are rendered only if this user may run them: probed on the lock connection of
    // a server that has them, and required where scripting is refused.
    let info = identity.as_mut().filter(|_| load_scripts);
    if let Some(info) = info {
        let wanted = Dialect::of(Some(&info.server), opts.native) != Dialect::Scripts;
        if wanted || scripts_refused.is_some() {
            match (
                probe_native(stream, &mut framer, &mut buf, info, opts.native).await,
                scripts_refused,
            ) {
                (Ok(()), refused) => info.scripting = refused.is_none(),
                (Err(lacks), Some(why)) => {
                    return Err(fail(&format_args!(
                        "SCRIPT LOAD refused ({why}), and {lacks}"
                    )))
                }
                (Err(lacks), None) => {
                    tracing::warn!(node = %addr, why = %lacks, "native lock commands refused: using the scripts");
                    info.native_allowed = false;
                }
            }
        }
    } else if let Some(why) = scripts_refused {
        return Err(fail(&format_args!("SCRIPT LOAD refused ({why})")));
    }
    if check_durable {
        let [appendonly, appendfsync] = settings;
        let durable = durability_of(addr, DurableCheck::of(appendonly, appendfsync));
        if let Some(info) = identity.as_mut() {
            info.identity.durable = durable;
        }
    }
    Ok(identity)
}

/// Whether the server's native lock commands are there and allowed to this lock user, so that a lock
/// taken can also be released and extended with them. The probe is what the dialect renders a
/// waking release as (`Profile::probe`: on Valkey 9, `DELIFEQ` and `EXISTS`), on a key no lock
/// uses, with a value no lock has: nothing changes. A refusal of the key itself (the user's key
/// patterns) is fine — the command is allowed; a refusal of the command is not. `Err`: what the
/// node lacks, for the connect error.
async fn probe_native<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    framer: &mut Framer,
    buf: &mut BytesMut,
    info: &Info,
    native: bool,
) -> Result<(), String> {
    const KEY: &[u8] = b"redlock-engine:native-probe";
    let dialect = Dialect::of(Some(&info.server), native);
    let Some(probe) = Profile::probe(dialect, Bytes::from_static(KEY)) else {
        return Err(format!(
            "the server has no native lock commands (Valkey 9.0+ with native_commands on): \
             the lock user needs +@scripting ({:?} {:?})",
            info.server.name, info.server.version
        ));
    };
    let mut out = BytesMut::new();
    let mut commands = Vec::with_capacity(probe.parts());
    probe.commands(|args| {
        encode_args(&mut out, args);
        commands.push(String::from_utf8_lossy(args[0]).into_owned());
    });
    let io = |e: &dyn std::fmt::Display| format!("native command probe: {e}");
    stream.write_all(&out).await.map_err(|e| io(&e))?;
    stream.flush().await.map_err(|e| io(&e))?;
    // Both replies are read before either is judged: a refusal of the first must not leave the
    // second's reply on the connection, where it would answer the first lock command.
    let mut verdict = Ok(());
    for command in &commands {
        let frame = loop {
            if let Some(frame) = framer.next_frame(buf).map_err(|e| io(&e))? {
                break frame;
            }
            if stream.read_buf(buf).await.map_err(|e| io(&e))? == 0 {
                return Err(io(&"closed"));
            }
        };
        let judged = match to_reply(frame.freeze()) {
            Ok(Reply::Int(_)) => Ok(()),
            // `NOPERM No permissions to access a key`: the key pattern, not the command.
            Err(NodeError::Server(why)) if why.starts_with("NOPERM") && why.contains(" key") => {
                Ok(())
            }
            Err(NodeError::Server(why)) => Err(format!(
                "{command} is refused too ({why}): the lock user needs +{} or +@scripting",
                command.to_ascii_lowercase()
            )),
            other => Err(io(&format_args!("{command}: unexpected {other:?}"))),
        };
        verdict = verdict.and(judged);
    }
    if !buf.is_empty() {
        return Err(io(&"reply with no request outstanding"));
    }
    verdict
}

/// The settings a durable claim is checked against, in the order `DurableCheck::of` takes them.
const DURABILITY: [&str; 2] = ["appendonly", "appendfsync"];

/// Whether to trust a node's durable claim, said in the log when it is not plainly confirmed. Once
/// per connect: the settings can change between restarts.
fn durability_of(addr: &NodeAddr, check: DurableCheck) -> bool {
    match &check {
        DurableCheck::Confirmed => {}
        DurableCheck::Unverified(why) => tracing::warn!(
            node = %addr,
            why = %why,
            "node is configured durable, but its settings cannot be read: trusting the claim"
        ),
        DurableCheck::Refuted(why) => tracing::warn!(
            node = %addr,
            why = %why,
            "node is configured durable, but its settings say otherwise: quarantine applies to it"
        ),
    }
    check.trusted()
}
